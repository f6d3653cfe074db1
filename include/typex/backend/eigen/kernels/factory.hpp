// typex/backend/eigen/kernels/factory.hpp — the Eigen backend: copy, factories: zeros, ones, full, arange, and the _like forms.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// (self, src): src broadcast to self's extents, in self's dtype — the value self.copy_(src) leaves
// in self (the functional copy torch.export records).
inline any_tensor copy(const kernel_args& a) {
  const any_tensor& self = a.tensor("self");
  const any_tensor& src = a.tensor("src");
  require_expands_to(a.target(), "src", src, self.extents());
  any_tensor expanded(src.scalar_type(), self.extents());
  const std::vector<index_t> is = broadcast_strides(src.extents(), self.extents());
  dispatch<false>(src.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<index_t> idx(self.rank());
    strided_copy(src.data<T>(), expanded.data<T>(), self.extents(), is, idx);
  });
  return to_dtype(expanded, self.scalar_type());
}

// ---------------------------------------------------------------------------------------------
// factories: zeros, ones, full, arange, and the _like forms

// out filled with the call's fill_value (integers exactly; bools as 0 / 1).
inline void fill_number(any_tensor& out, const kernel_args& a) {
  dispatch<false>(out.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T v = a.is_integer("fill_value") ? convert<T>(a.integer("fill_value")) : convert<T>(a.real("fill_value"));
    std::fill_n(out.data<T>(), out.numel(), v);
  });
}
inline void fill_constant(any_tensor& out, int value, std::string_view op) {
  dispatch<false>(out.scalar_type(), op, [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(out.data<T>(), out.numel(), convert<T>(value));
  });
}

// zeros / ones (sizes, dtype), full (sizes, value, dtype). Kind: 0 zeros, 1 ones, 2 full.
template <int Kind>
any_tensor fill(const kernel_args& a) {
  const std::vector<index_t> e = a.ints("size");
  for (index_t v : e)
    if (v < 0) a.fail_text("size", "has a negative size");
  any_tensor out = a.result(a.scalar_type("dtype"), e);
  if (Kind == 2) fill_number(out, a);
  else fill_constant(out, Kind, a.target());
  return out;
}
// zeros_like / ones_like (x), full_like (x, value).
template <int Kind>
any_tensor fill_like(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  any_tensor out = a.result(x.scalar_type(), x.extents());
  if (Kind == 2) fill_number(out, a);
  else fill_constant(out, Kind, a.target());
  return out;
}

// arange with Bounds of (end), (start, end) or (start, end, step), then the dtype: as torch, the
// length is ceil((end - start) / step) and the values start + i * step, computed in double for
// floating dtypes and in i64 for integral ones.
template <int Bounds>
any_tensor arange(const kernel_args& a) {
  // (arange.default has no start, only arange.start_step a step: absent, start 0 and step 1)
  constexpr bool has_start = Bounds >= 2, has_step = Bounds == 3;
  const auto real_at = [&](arg_name n, bool present, double absent) { return present ? a.real(n) : absent; };
  const auto int_at = [&](arg_name n, bool present, index_t absent) {
    return !present ? absent : a.is_real(n) ? static_cast<index_t>(a.real(n)) : a.integer(n);
  };
  const bool real = a.is_real("end") || (has_start && a.is_real("start")) || (has_step && a.is_real("step"));
  const index_t n = real ? typex::detail::arange_length(real_at("start", has_start, 0.0), real_at("end", true, 0.0),
                                                       real_at("step", has_step, 1.0))
                         : typex::detail::arange_length(int_at("start", has_start, 0), int_at("end", true, 0), int_at("step", has_step, 1));
  any_tensor out = a.result(a.scalar_type("dtype"), {n});
  dispatch<false>(out.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    T* po = out.data<T>();
    if constexpr (std::is_same_v<compute_t<T>, float> || std::is_same_v<T, double>) {
      const double start = real_at("start", has_start, 0.0), step = real_at("step", has_step, 1.0);
      for (index_t i = 0; i < n; ++i) po[i] = convert<T>(start + static_cast<double>(i) * step);
    } else {
      const index_t start = int_at("start", has_start, 0), step = int_at("step", has_step, 1);
      for (index_t i = 0; i < n; ++i) po[i] = convert<T>(start + i * step);
    }
  });
  return out;
}

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(copy_op, detail::copy);
TYPEX_EIGEN_KERNEL(aten::zeros, detail::fill<0>);
TYPEX_EIGEN_KERNEL(aten::ones, detail::fill<1>);
TYPEX_EIGEN_KERNEL(aten::full, detail::fill<2>);
TYPEX_EIGEN_KERNEL(aten::zeros_like, detail::fill_like<0>);
TYPEX_EIGEN_KERNEL(aten::ones_like, detail::fill_like<1>);
TYPEX_EIGEN_KERNEL(aten::full_like, detail::fill_like<2>);
TYPEX_EIGEN_KERNEL(aten::arange, detail::arange<1>);
TYPEX_EIGEN_KERNEL(aten::arange_start, detail::arange<2>);
TYPEX_EIGEN_KERNEL(aten::arange_start_step, detail::arange<3>);
}  // namespace typex::eigen
