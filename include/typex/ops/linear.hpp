// typex/ops/linear.hpp — linear(x, weight[, bias]) = x @ weight^T + bias (torch.nn.functional.linear),
// and matmul(a, b) (torch.matmul: 1-d, 2-d and batched operands, batch dims broadcast).
//
// x [..., in], weight [out, in], bias [out]: the result is [..., out]. The inner extents and the
// bias must fit: a compile error naming "linear" and the shapes when static, checked otherwise.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/dtypes.hpp>
#include <typex/core/rules/matmul.hpp>
#include <typex/core/rules/permute.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <source_location>
#include <string_view>
#include <cstdint>

namespace typex {

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
struct mm {
  static constexpr std::string_view target = "aten.mm.default";
  static constexpr std::string_view schema =
      "aten::mm(Tensor self, Tensor mat2) -> Tensor";
  template <class C> static void vjp(C& c) {
    const auto a = c.input("self");
    const auto b = c.input("mat2");
    if (c.wants("self")) c.accumulate("self", c.mm(c.grad(), c.mT(b)));
    if (c.wants("mat2")) c.accumulate("mat2", c.mm(c.mT(a), c.grad()));
  }
};
struct bmm {
  static constexpr std::string_view target = "aten.bmm.default";
  static constexpr std::string_view schema =
      "aten::bmm(Tensor self, Tensor mat2) -> Tensor";
  template <class C> static void vjp(C& c) {
    const auto a = c.input("self");
    const auto b = c.input("mat2");
    if (c.wants("self")) c.accumulate("self", c.bmm(c.grad(), c.mT(b)));
    if (c.wants("mat2")) c.accumulate("mat2", c.bmm(c.mT(a), c.grad()));
  }
};
}  // namespace aten

struct linear_op {
  static constexpr std::string_view target = "aten.linear.default";
  static constexpr std::string_view schema =
      "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor";
  // y = x W^T + b: dx = g W, dW = g^T x over every leading dim, db = g summed over them
  template <class C> static void vjp(C& c) {
    const auto x = c.input("input");
    const auto w = c.input("weight");
    auto g = c.grad();
    if (c.rank(x) == 1) g = c.unsqueeze(g, 0);
    if (c.wants("input")) {
      const auto dx = c.matmul(g, w);
      c.accumulate("input", c.rank(x) == 1 ? c.squeeze(dx, 0) : dx);
    }
    if (c.wants("weight")) {
      auto rows = c.size(g, 0);  // (the leading dims' product)
      for (std::size_t d = 1; d + 1 < c.rank(g); ++d) rows = rows * c.size(g, static_cast<std::int64_t>(d));
      const auto g2 = c.reshape(g, {rows, c.size(g, -1)});
      const auto x2 = c.reshape(c.rank(x) == 1 ? c.unsqueeze(x, 0) : x, {rows, c.size(x, -1)});
      c.accumulate("weight", c.mm(c.mT(g2), x2));
    }
    if (c.wants("bias")) c.accumulate("bias", g);  // (summed over the leading dims by accumulate)
  }

  template <class X, class W>
  static constexpr auto result_shape(const X& x, const W& w) {
    static_assert(W::shape_type::rank == 2, "typex::linear: the weight must be 2-d: [out_features, in_features]");
    const auto m = matmul_shape(x.shape, transpose_shape<0, 1>(w.shape), op_name<"linear">);
    // the last dim is the weight's out_features (the same type matmul gives, or, after a static
    // failure there, the width the next layer expects: no cascade)
    using M = std::remove_cvref_t<decltype(m)>;
    return detail::join(detail::take<0, M::rank - 1>(m), shape(w.shape.template get<0>()));
  }
  template <class X, class W>
  static constexpr auto result(const X& x, const W& w) {
    const auto s = result_shape(x, w);
    constexpr dtype_verdict verdict = matmul_dtypes(X::dtype_type::value, W::dtype_type::value);
    using DT = decltype(checked_dtype<"linear", verdict>());
    return tensor_spec<DT, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class X, class W, class B>
  static constexpr auto result(const X& x, const W& w, const B& b) {
    // (the shape of linear(x, w), its dtype as addmm(bias, x, w^T) decides it: PyTorch's words differ)
    const auto r = result_shape(x, w);
    static_assert(B::shape_type::rank == 1, "typex::linear: the bias must be 1-d: [out_features]");
    (void)broadcast_shapes(r, b.shape, op_name<"linear">);  // the bias must fit the output
    constexpr dtype_verdict verdict = addmm_dtypes(B::dtype_type::value, X::dtype_type::value, W::dtype_type::value);
    using DT = decltype(checked_dtype<"linear", verdict>());
    return tensor_spec<DT, std::remove_cvref_t<decltype(r)>>(r);
  }
};

struct matmul_op {
  static constexpr std::string_view target = "aten.matmul.default";
  static constexpr std::string_view schema =
      "aten::matmul(Tensor self, Tensor other) -> Tensor";
  // vectors become matrices ([k] -> [1, k] on the left, [k, 1] on the right), the batch dims
  // broadcast; accumulate sums the gradients back over them
  template <class C> static void vjp(C& c) {
    const auto a0 = c.input("self");
    const auto b0 = c.input("other");
    auto g = c.grad();
    if (c.rank(a0) == 1 && c.rank(b0) == 1) {  // a dot product
      if (c.wants("self")) c.accumulate("self", c.mul(b0, g));
      if (c.wants("other")) c.accumulate("other", c.mul(a0, g));
      return;
    }
    const auto a = c.rank(a0) == 1 ? c.unsqueeze(a0, 0) : a0;
    const auto b = c.rank(b0) == 1 ? c.unsqueeze(b0, 1) : b0;
    if (c.rank(a0) == 1) g = c.unsqueeze(g, -2);
    if (c.rank(b0) == 1) g = c.unsqueeze(g, -1);
    if (c.wants("self")) {
      const auto da = c.sum_to(c.matmul(g, c.mT(b)), c.meta(a));
      c.accumulate("self", c.rank(a0) == 1 ? c.squeeze(da, 0) : da);
    }
    if (c.wants("other")) {
      const auto db = c.sum_to(c.matmul(c.mT(a), g), c.meta(b));
      c.accumulate("other", c.rank(b0) == 1 ? c.squeeze(db, 1) : db);
    }
  }

  template <class A, class B>
  static constexpr auto result(const A& a, const B& b) {
    const auto s = matmul_shape(a.shape, b.shape, op_name<"matmul">);
    constexpr dtype_verdict verdict = matmul_dtypes(A::dtype_type::value, B::dtype_type::value);
    using DT = decltype(checked_dtype<"matmul", verdict>());
    return tensor_spec<DT, std::remove_cvref_t<decltype(s)>>(s);
  }
};

template <tensor_like A, tensor_like B>
auto matmul(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(matmul_op{}, &loc, a, b);
}

// mm: two matrices; bmm: two batches of matrices ([b, n, k] x [b, k, m], batches equal: bmm does
// not broadcast). The inner extents are checked as matmul checks them.
namespace detail {
template <std::size_t Rank>
inline constexpr auto mm_name = [] {
  if constexpr (Rank == 2) return fixed_string("mm");
  else return fixed_string("bmm");
}();
}  // namespace detail

template <std::size_t Rank>
struct mm_op {
  static constexpr std::string_view target = Rank == 2 ? aten::mm::target : aten::bmm::target;
  static constexpr std::string_view schema = Rank == 2 ? aten::mm::schema : aten::bmm::schema;
  template <class A, class B>
  static constexpr auto result(const A& a, const B& b) {
    static_assert(A::shape_type::rank == Rank && B::shape_type::rank == Rank,
                  "typex::mm takes two matrices and typex::bmm two batches of matrices (use matmul to broadcast)");
    if constexpr (Rank == 3) (void)broadcast_shapes(shape(a.shape.template get<0>()), shape(b.shape.template get<0>()), op_name<"bmm">);
    const auto s = matmul_shape(a.shape, b.shape, op_name<detail::mm_name<Rank>>);
    constexpr dtype da = A::dtype_type::value, db = B::dtype_type::value;
    constexpr dtype_verdict verdict = Rank == 2 ? matmul_dtypes(da, db) : bmm_dtypes(da, db);
    using DT = decltype(checked_dtype<detail::mm_name<Rank>, verdict>());
    return tensor_spec<DT, std::remove_cvref_t<decltype(s)>>(s);
  }
};
template <tensor_like A, tensor_like B>
auto mm(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(mm_op<2>{}, &loc, a, b);
}
template <tensor_like A, tensor_like B>
auto bmm(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(mm_op<3>{}, &loc, a, b);
}

// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b); the bias broadcasts to [n, m].
struct addmm_op {
  static constexpr std::string_view target = "aten.addmm.default";
  static constexpr std::string_view schema =
      "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor";
  // beta self + alpha mat1 mat2
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    const double beta = c.args().real_or_default("beta"), alpha = c.args().real_or_default("alpha");
    if (c.wants("self") && beta != 0.0) c.accumulate("self", beta == 1.0 ? g : c.mul(g, beta));
    const auto ga = alpha == 1.0 ? g : c.mul(g, alpha);
    if (c.wants("mat1")) c.accumulate("mat1", c.mm(ga, c.mT(c.input("mat2"))));
    if (c.wants("mat2")) c.accumulate("mat2", c.mm(c.mT(c.input("mat1")), ga));
  }
  double beta = 1.0, alpha = 1.0;
  template <class C, class A, class B>
  static constexpr auto result(const C& bias, const A& a, const B& b) {
    static_assert(A::shape_type::rank == 2 && B::shape_type::rank == 2, "typex::addmm takes two matrices");
    const auto s = matmul_shape(a.shape, b.shape, op_name<"addmm">);
    (void)broadcast_shapes(bias.shape, s, op_name<"addmm">);
    constexpr dtype_verdict verdict = addmm_dtypes(C::dtype_type::value, A::dtype_type::value, B::dtype_type::value);
    using DT = decltype(checked_dtype<"addmm", verdict>());
    return tensor_spec<DT, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    if (beta != 1.0 || alpha != 1.0) {  // torch records the defaults by leaving them out
      v(beta);
      v(alpha);
    }
  }
};
template <tensor_like C, tensor_like A, tensor_like B>
auto addmm(const C& bias, const A& a, const B& b, double beta = 1.0, double alpha = 1.0,
           const std::source_location& loc = std::source_location::current()) {
  addmm_op op;
  op.beta = beta;
  op.alpha = alpha;
  return apply_op(op, &loc, bias, a, b);
}

template <tensor_like X, tensor_like W>
auto linear(const X& x, const W& weight, const std::source_location& loc = std::source_location::current()) {
  return apply_op(linear_op{}, &loc, x, weight);
}

template <tensor_like X, tensor_like W, tensor_like B>
auto linear(const X& x, const W& weight, const B& bias, const std::source_location& loc = std::source_location::current()) {
  return apply_op(linear_op{}, &loc, x, weight, bias);
}

// This header's ops, for the registry (ops/all.hpp).
using linear_ops = op_list<linear_op, matmul_op, aten::mm, aten::bmm, addmm_op>;

}  // namespace typex
