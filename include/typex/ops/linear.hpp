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
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>

#include <source_location>
#include <string>
#include <string_view>
#include <cstdint>

namespace typex {

// The run-time rules' parts (each op's `infer`, ir/describe.hpp), over symbolic shapes S
// (std::vector<ir::sym_expr>).
namespace detail {
// A dtype rule's refusal (core/rules/dtypes.hpp), as the op's shape_error in PyTorch's words.
template <class R>
void require_dtypes(const R& r, const dtype_verdict& v) {
  if (v.ok()) return;
  std::string why;
  string_writer w{why};
  put_dtype_refusal(w, v);
  r.fail(why);
}

// torch.matmul's shape (matmul_shape): a 1-d lhs or rhs loses its dim, the inner extents agree
// (two different constants are refused), the batch dims broadcast.
template <class R, class S>
S matmul_meta_shape(const R& r, const S& a, const S& b) {
  if (a.empty() || b.empty())
    r.fail("both arguments need at least one dimension (lhs " + shape_meta::text(a) + ", rhs " + shape_meta::text(b) + ")");
  const auto& ka = a.back();
  const auto& kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (ka.is_constant() && kb.is_constant() && *ka.value() != *kb.value())
    r.fail("inner extents differ (lhs " + shape_meta::text(a) + ", rhs " + shape_meta::text(b) + "): " + ka.to_string() + " vs " +
           kb.to_string());
  const std::size_t ba = a.size() >= 2 ? a.size() - 2 : 0, bb = b.size() >= 2 ? b.size() - 2 : 0;
  S out = r.broadcast(S(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(ba)),
                      S(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(bb)));
  if (a.size() >= 2) out.push_back(a[a.size() - 2]);
  if (b.size() >= 2) out.push_back(b.back());
  return out;
}

// `from` expands to `to` (an addend broadcast to a result it may not enlarge): aligned to the
// right, each dim 1 or the result's; two different constants otherwise are refused.
template <class R, class S>
void require_expands(const R& r, std::string_view what, const S& from, const S& to) {
  bool fits = from.size() <= to.size();
  for (std::size_t i = 0; fits && i < from.size(); ++i) {
    const auto& f = from[from.size() - 1 - i];
    const auto& t = to[to.size() - 1 - i];
    fits = !(f.is_constant() && t.is_constant() && *f.value() != 1 && *f.value() != *t.value());
  }
  if (!fits)
    r.fail(std::string(what) + " " + shape_meta::text(from) + " does not broadcast to the result " + shape_meta::text(to));
}

// mm (Rank 2) and bmm (Rank 3): matmul of two matrices or two batches of them.
template <std::size_t Rank, class R>
void mm_meta(R& r) {
  const auto& a = r.input("self");
  const auto& b = r.input("mat2");
  if (a.rank() != Rank || b.rank() != Rank)
    r.fail(Rank == 2 ? "mm takes two matrices (use matmul to broadcast)"
                     : "bmm takes two batches of matrices (use matmul to broadcast)");
  const dtype_verdict v = Rank == 2 ? matmul_dtypes(a.scalar_type, b.scalar_type) : bmm_dtypes(a.scalar_type, b.scalar_type);
  require_dtypes(r, v);
  r.result(v.result, matmul_meta_shape(r, a.shape, b.shape));
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
struct mm {
  static constexpr std::string_view target = "aten.mm.default";
  static constexpr std::string_view schema =
      "aten::mm(Tensor self, Tensor mat2) -> Tensor";
  // [n, k] @ [k, m] -> [n, m], one dtype
  template <class R> static void infer(R& r) { detail::mm_meta<2>(r); }
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
  // [b, n, k] @ [b, k, m] -> [b, n, m], one dtype
  template <class R> static void infer(R& r) { detail::mm_meta<3>(r); }
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
  // matmul(x, weight^T) + bias
  template <class C> static void decompose(C& c) {
    const auto x = c.input("input");
    const auto wt = c.permute(c.input("weight"), {1, 0});
    auto y = c.rank(x) == 1 ? c.squeeze(c.matmul(c.unsqueeze(x, 0), wt), 0) : c.matmul(x, wt);
    if (c.is_tensor("bias")) y = c.add(y, c.input("bias"));
    c.produce(y);
  }
  // input @ weight^T: [..., in] -> [..., out]; the bias [out] broadcasts to the result; dtypes as
  // matmul's, or addmm(bias, input, weight^T)'s with a bias
  template <class R> static void infer(R& r) {
    const auto& x = r.input("input");
    const auto& w = r.input("weight");
    if (w.rank() != 2) r.fail("the weight must be 2-d: [out_features, in_features], not " + detail::shape_meta::text(w.shape));
    const auto s = detail::matmul_meta_shape(r, x.shape, decltype(w.shape){w.shape[1], w.shape[0]});
    dtype_verdict v = matmul_dtypes(x.scalar_type, w.scalar_type);
    if (r.is_tensor("bias")) {
      const auto& b = r.input("bias");
      if (b.rank() != 1) r.fail("the bias must be 1-d: [out_features], not " + detail::shape_meta::text(b.shape));
      detail::require_expands(r, "the bias", b.shape, s);
      v = addmm_dtypes(b.scalar_type, x.scalar_type, w.scalar_type);
    }
    detail::require_dtypes(r, v);
    r.result(v.result, s);
  }
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
  // torch.matmul: 1-d operands lose their dim, batch dims broadcast; one dtype
  template <class R> static void infer(R& r) {
    const auto& a = r.input("self");
    const auto& b = r.input("other");
    const dtype_verdict v = matmul_dtypes(a.scalar_type, b.scalar_type);
    detail::require_dtypes(r, v);
    r.result(v.result, detail::matmul_meta_shape(r, a.shape, b.shape));
  }
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
  // beta self + alpha mm(mat1, mat2) (self not read when beta is 0, as torch)
  template <class C> static void decompose(C& c) {
    const double alpha = c.args().real_or_default("alpha"), beta = c.args().real_or_default("beta");
    auto p = c.mm(c.input("mat1"), c.input("mat2"));
    if (alpha != 1.0) p = c.mul(p, alpha);
    if (beta == 0.0) {
      c.produce(c.to(p, c.result_meta().scalar_type));
      return;
    }
    c.produce(c.add(beta == 1.0 ? c.input("self") : c.mul(c.input("self"), beta), p));
  }
  // mat1 @ mat2: [n, m]; self broadcasts to it; one dtype for the three
  template <class R> static void infer(R& r) {
    const auto& c = r.input("self");
    const auto& a = r.input("mat1");
    const auto& b = r.input("mat2");
    if (a.rank() != 2 || b.rank() != 2) r.fail("addmm takes two matrices");
    const auto s = detail::matmul_meta_shape(r, a.shape, b.shape);
    detail::require_expands(r, "self", c.shape, s);
    const dtype_verdict v = addmm_dtypes(c.scalar_type, a.scalar_type, b.scalar_type);
    detail::require_dtypes(r, v);
    r.result(v.result, s);
  }
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
