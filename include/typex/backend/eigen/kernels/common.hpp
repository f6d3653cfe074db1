// typex/backend/eigen/kernels/common.hpp — the Eigen backend: the shared pieces: dtype dispatch, conversions, shape messages, dim wrapping.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

using typex::detail::raise;

// f16 and bf16 compute in f32.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;

template <class To, class From>
To convert(const From& v) {
  if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    // NaN and values outside i64 are undefined behaviour for a C++ conversion; they become i64's
    // lowest value (what x86's conversion, and so PyTorch on x86, gives), narrowed like any i64
    constexpr From limit = From(9223372036854775808.0);  // 2^63
    const std::int64_t w = (v >= -limit && v < limit) ? static_cast<std::int64_t>(v) : std::numeric_limits<std::int64_t>::min();
    return static_cast<To>(w);
  } else {
    return static_cast<To>(v);
  }
}

[[noreturn]] inline void unsupported_dtype(std::string_view op, dtype d) {
  raise<unsupported_error>([&](auto& w) {
    w.put(op); w.put(": the Eigen backend does not run this op on "); w.put(name(d)); w.put(" tensors");
  });
}

// Calls f(T{}) with the element type of d; Floating restricts to floating dtypes.
template <bool Floating, class F>
decltype(auto) dispatch(dtype d, std::string_view op, F&& f) {
  switch (d) {
    case dtype::f32: return f(float{});
    case dtype::f64: return f(double{});
    case dtype::f16: return f(half{});
    case dtype::bf16: return f(bfloat16{});
    default: break;
  }
  if constexpr (!Floating) {
    switch (d) {
      case dtype::i64: return f(std::int64_t{});
      case dtype::i32: return f(std::int32_t{});
      case dtype::i16: return f(std::int16_t{});
      case dtype::i8: return f(std::int8_t{});
      case dtype::u8: return f(std::uint8_t{});
      case dtype::b8: return f(bool{});
      default: break;
    }
  }
  unsupported_dtype(op, d);
}

// Calls f(T{}) for f32 or f64 (what GEMM-based kernels run on).
template <class F>
decltype(auto) dispatch_gemm(dtype d, std::string_view op, F&& f) {
  if (d == dtype::f32) return f(float{});
  if (d == dtype::f64) return f(double{});
  unsupported_dtype(op, d);
}

// t in dtype d: t itself when it already is, else a converted copy.
inline any_tensor to_dtype(const any_tensor& t, dtype d) {
  if (t.scalar_type() == d) return t;
  any_tensor out(d, t.extents());
  dispatch<false>(d, "to", [&](auto to) {
    using To = decltype(to);
    dispatch<false>(t.scalar_type(), "to", [&](auto from) {
      using From = decltype(from);
      const From* src = t.data<From>();
      To* dst = out.data<To>();
      for (index_t i = 0, n = t.numel(); i < n; ++i) dst[i] = convert<To>(src[i]);
    });
  });
  return out;
}

// A tensor's dtype and extents, as any_tensor::to_string spells them ("f32[2, 3]").
struct tensor_shape {
  dtype dt;
  const std::vector<index_t>& extents;
  tensor_shape(const any_tensor& t) : dt(t.scalar_type()), extents(t.extents()) {}  // NOLINT: implicit on purpose
  tensor_shape(dtype d, const std::vector<index_t>& e) : dt(d), extents(e) {}
  std::string to_string() const { return std::string(name(dt)) + extents_string(); }
  std::string extents_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(extents[i]);
    }
    return s + ']';
  }
};

[[noreturn]] inline void rank_error(std::string_view op, std::string_view what, tensor_shape t, std::string_view expected) {
  raise<shape_error>([&](auto& w) {
    w.put(op); w.put(": "); w.put(what); w.put(' '); w.put(name(t.dt)); w.put(t.extents_string()); w.put(" should be ");
    w.put(expected);
  });
}

using ir::wrap_dim;  // (a dim of a call, checked against a rank: ir/call.hpp)

// The i-th of t split points of [0, n): n * i / t without forming n * i (n may be near 2^62).
inline index_t split_point(index_t n, int i, int t) noexcept { return n / t * i + n % t * i / t; }

// Splits [0, n) over `threads` threads of the pool when n * cost is worth it (cost: work per item).
template <class F>
void parallel_for(index_t n, index_t cost, int threads, F&& f) {
  // (n * cost saturates: both are element counts of checked tensors, but their product need not fit)
  const index_t work = typex::detail::checked_mul(n, std::max<index_t>(cost, 0)).value_or(int_oo);
  const int t = static_cast<int>(std::clamp<index_t>(work / 32768, 1, std::max(threads, 1)));
  if (t <= 1 || n < 2) {
    f(index_t{0}, n);
    return;
  }
  auto task = [&](int i) { f(split_point(n, i, t), split_point(n, i + 1, t)); };
  thread_pool::instance().run(t, task);
}

// ---------------------------------------------------------------------------------------------

}  // namespace typex::eigen::detail
