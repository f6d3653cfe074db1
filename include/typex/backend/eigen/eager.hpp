// typex/backend/eigen/eager.hpp — ops on host tensors, run now (eager mode), on the CPU with Eigen.
//
// Including this header makes typex::relu(x), x + y, typex::linear(x, w, b) ... compute when their
// arguments are host tensors (module tensors included): the result is a new host_tensor of the
// type the op's rule gives. Pointwise ops apply the op's scalar math (computing f16/bf16 in f32),
// with PyTorch's broadcasting; linear is Eigen's matrix product. These are the straightforward
// kernels; the compiled-program backend (plans, fusion, threads) arrives with the op-set issue.
#pragma once

#include <typex/ops/apply.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/unary.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <Eigen/Core>

#include <array>
#include <type_traits>

namespace typex {

namespace eigen {
// An error here means: the op has no eager kernel on the Eigen backend yet; give it a
// decomposition or specialize typex::eigen::kernel<Op>.
template <class Op>
struct kernel {
  template <class... A>
  static void run(const Op&, const A&...) {
    static_assert(sizeof(Op) == 0, "typex::eigen: no kernel for this op; give it a decomposition or specialize typex::eigen::kernel<Op>");
  }
};

namespace detail {
// f16 and bf16 compute in f32.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;

template <class To, class From>
To convert(const From& v) {
  if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) return static_cast<To>(static_cast<float>(v));
  else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) return To(static_cast<float>(v));
  else return static_cast<To>(v);
}

// Element strides of `in` aligned from the right to an output of rank R; 0 where `in` broadcasts.
template <std::size_t R, std::size_t N>
std::array<index_t, R> broadcast_strides(const std::array<index_t, N>& in, const std::array<index_t, R>& out) {
  std::array<index_t, R> strides{};
  index_t stride = 1;
  for (std::size_t k = 0; k < N; ++k) {
    const std::size_t i = N - 1 - k, o = R - 1 - k;
    strides[o] = (in[i] == 1 && out[o] != 1) ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

// out[idx] = f(a[idx_a], b[idx_b]) over the output's multi-index, with broadcast strides.
template <class Out, class A, class B, class F>
void broadcast_apply(const Out& out, const A& a, const B& b, F&& f) {
  constexpr std::size_t R = Out::rank;
  const auto oe = out.extents();
  const auto sa = broadcast_strides(a.extents(), oe);
  const auto sb = broadcast_strides(b.extents(), oe);
  auto* po = out.data();
  const auto* pa = a.data();
  const auto* pb = b.data();
  const index_t n = out.numel();
  if constexpr (A::rank == R && B::rank == R) {
    if (a.extents() == oe && b.extents() == oe) {  // the common case: no broadcasting
      for (index_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
      return;
    }
  }
  std::array<index_t, R> idx{};
  index_t ia = 0, ib = 0;
  for (index_t i = 0; i < n; ++i) {
    po[i] = f(pa[ia], pb[ib]);
    for (std::size_t d = R; d-- > 0;) {  // increment the multi-index, carrying
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < oe[d]) break;
      ia -= sa[d] * oe[d];
      ib -= sb[d] * oe[d];
      idx[d] = 0;
    }
  }
}
}  // namespace detail

// Pointwise unary ops: the op's scalar math.
template <class Op>
  requires std::is_base_of_v<typex::detail::unary_pointwise, Op>
struct kernel<Op> {
  template <class Out, class X>
  static void run(const Op&, const Out& out, const X& x) {
    using T = typename Out::value_type;
    using C = detail::compute_t<T>;
    const auto* px = x.data();
    auto* po = out.data();
    for (index_t i = 0, n = out.numel(); i < n; ++i) po[i] = detail::convert<T>(Op::scalar(detail::convert<C>(px[i])));
  }
};

// Pointwise binary ops with broadcasting; a scalar operand is applied to every element.
template <class Op>
  requires(std::is_same_v<Op, add_op> || std::is_same_v<Op, sub_op> || std::is_same_v<Op, mul_op> ||
           std::is_same_v<Op, div_op>)
struct kernel<Op> {
  template <class Out, class A, class B>
  static void run(const Op&, const Out& out, const A& a, const B& b) {
    using T = typename Out::value_type;
    using C = detail::compute_t<T>;
    auto f = [](const auto& x, const auto& y) { return detail::convert<T>(Op::scalar(detail::convert<C>(x), detail::convert<C>(y))); };
    if constexpr (scalar_like<A> || scalar_like<B>) {
      auto* po = out.data();
      const index_t n = out.numel();
      if constexpr (scalar_like<B>) {
        for (index_t i = 0; i < n; ++i) po[i] = f(a.data()[i], b);
      } else {
        for (index_t i = 0; i < n; ++i) po[i] = f(a, b.data()[i]);
      }
    } else {
      detail::broadcast_apply(out, a, b, f);
    }
  }
};

// linear: out[m, o] = sum_i x[m, i] * w[o, i] (+ b[o]); the leading dims of x are rows.
template <>
struct kernel<linear_op> {
  template <class Out, class X, class W, class... Bias>
  static void run(const linear_op&, const Out& out, const X& x, const W& w, const Bias&... bias) {
    using T = typename Out::value_type;
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                  "typex::eigen: linear runs on f32 and f64 tensors (convert other dtypes first)");
    static_assert(std::is_same_v<typename X::value_type, T> && std::is_same_v<typename W::value_type, T>,
                  "typex::eigen: linear needs its input and weight in the result's dtype");
    using matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const index_t in = w.extents()[1], outs = w.extents()[0];
    const index_t rows = in == 0 ? 0 : x.numel() / in;
    Eigen::Map<const matrix> mx(x.data(), rows, in);
    Eigen::Map<const matrix> mw(w.data(), outs, in);
    Eigen::Map<matrix> mo(out.data(), rows, outs);
    mo.noalias() = mx * mw.transpose();
    if constexpr (sizeof...(Bias) == 1) {
      const auto& b = (bias, ...);
      Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> mb(b.data(), outs);
      mo.rowwise() += mb;
    }
  }
};
}  // namespace eigen

template <>
struct op_runner<eager_mode> {
  template <class Op, class... A>
  static auto run(const Op& op, const std::source_location*, const A&... args) {
    const auto spec = op.result(detail::spec_of_argument(args)...);
    using R = std::remove_cvref_t<decltype(spec)>;
    host_tensor<typename R::dtype_type, typename R::shape_type> out(spec.shape);
    eigen::kernel<Op>::run(op, out, args...);
    return out;
  }
};

}  // namespace typex
