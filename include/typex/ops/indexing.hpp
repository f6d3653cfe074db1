// typex/ops/indexing.hpp — ops that pick elements: where, masked_fill, index_select, gather, tril,
// triu.
//
//   where(cond, x, y)             torch.where(cond, x, y)        -> aten.where.self(cond, x, y)
//   masked_fill(x, mask, -inf)    x.masked_fill(mask, -inf)      -> aten.masked_fill.Scalar(x, mask, -inf)
//   index_select<0>(x, idx)       x.index_select(0, idx)         -> aten.index_select.default(x, 0, idx)
//   gather<1>(x, idx)             x.gather(1, idx)               -> aten.gather.default(x, 1, idx)
//   tril(x, k), triu(x, k)        x.tril(k)                      -> aten.tril.default(x, k)
// Conditions and masks are bool tensors; indices are i64 (i32 too for index_select), checked
// against the extent they index at run time, with the op, the index and the extent in the message.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/expand.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/tensor_like.hpp>
#include <typex/core/sym_expr.hpp>

#include <source_location>
#include <string_view>

namespace typex {

// The run-time rules' checks, in PyTorch's words.
namespace detail {
// Refuses an index tensor of another dtype than i64 (or i32, where `i32_too`).
template <class R>
void require_index_dtype(const R& r, dtype d, bool i32_too) {
  if (d != dtype::i64 && !(i32_too && d == dtype::i32))
    r.fail(to_string_with([&](auto& w) { w.put(i32_too ? "expected dtype int32 or int64 for index, not " : "expected dtype int64 for index, not "); w.put(name(d)); }));
}
// Refuses a mask (or condition) that is not bool.
template <class R>
void require_bool(const R& r, dtype d, std::string_view what) {
  if (d != dtype::b8)
    r.fail(to_string_with([&](auto& w) { w.put("expected a bool tensor for "); w.put(what); w.put(", not "); w.put(name(d)); }));
}
// Refuses two tensors of different dtypes (a source written into self).
template <class R>
void require_same_dtype(const R& r, dtype self, dtype source, std::string_view what) {
  if (self != source)
    r.fail(to_string_with([&](auto& w) {
      w.put("self ("); w.put(name(self)); w.put(") and "); w.put(what); w.put(" ("); w.put(name(source)); w.put(") must have the same dtype");
    }));
}
// Refuses tensors of different ranks.
template <class R>
void require_rank(const R& r, std::size_t rank, std::size_t want, std::string_view what) {
  if (rank != want)
    r.fail(to_string_with([&](auto& w) {
      w.put(what); w.put(" must have the same number of dimensions as self ("); w.put_int(static_cast<long long>(want));
      w.put("), not "); w.put_int(static_cast<long long>(rank));
    }));
}
// Refuses a constant extent a that is larger than b (or, with `equal`, other than b) at dim k.
template <class R>
void require_extent(const R& r, const ir::sym_expr& a, const ir::sym_expr& b, std::size_t k, bool equal, std::string_view what) {
  if (a.is_constant() && b.is_constant() && (equal ? *a.value() != *b.value() : *a.value() > *b.value()))
    r.fail(to_string_with([&](auto& w) {
      w.put("size does not match at dimension "); w.put_int(static_cast<long long>(k)); w.put(": "); w.put(what); w.put(" (");
      w.put_int(*a.value()); w.put(equal ? " vs " : " > "); w.put_int(*b.value()); w.put(")");
    }));
}
// The number of indices a 0-d or 1-d index holds (index_select's, index_add's).
template <class R>
ir::sym_expr index_count(const R& r, const std::vector<ir::sym_expr>& index_shape) {
  if (index_shape.size() > 1) r.fail("index is supposed to be a vector (0-d or 1-d)");
  return index_shape.empty() ? ir::sym_expr(index_t{1}) : index_shape.front();
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace detail {
// tril / triu's decomposition: x where column - row <= (>=) diagonal, else 0
template <class C>
auto triangle(C& c, bool lower) {
  const auto x = c.input("self");
  const auto columns = c.unsqueeze(c.arange(c.size(x, -1)), 0);  // (one op per statement: see gelu's)
  const auto rows = c.unsqueeze(c.arange(c.size(x, -2)), 1);
  const auto column_minus_row = c.sub(columns, rows);
  const auto k = static_cast<double>(c.args().integer_or_default("diagonal"));
  const auto keep = lower ? c.le(column_minus_row, k) : c.ge(column_minus_row, k);
  return c.where(keep, x, c.full({}, 0.0, c.scalar_type(x)));
}
}  // namespace detail

namespace aten {
struct index_add;  // (the gradients, below: their derivatives refer to each other)
struct scatter_add;
struct masked_scatter;
struct index_select {
  static constexpr std::string_view target = "aten.index_select.default";
  static constexpr std::string_view schema =
      "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor";
  // self with extent `dim` replaced by the number of indices
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    const auto& index = r.input("index");
    detail::require_index_dtype(r, index.scalar_type, true);
    const ir::sym_expr n = detail::index_count(r, index.shape);
    const std::size_t at = r.wrap(r.args().integer("dim"), m.rank());
    if (m.rank() > 0) m.shape[at] = n;
    r.result(std::move(m));
  }
  template <class C, class IndexAdd = index_add>
  static void vjp(C& c) {
    const auto x = c.input("self");
    c.accumulate("self", c.emit(op_id_of<IndexAdd>, {c.zeros_like(x), c.args().integer("dim"), c.input("index"), c.grad()}));
  }
};
struct gather {
  static constexpr std::string_view target = "aten.gather.default";
  static constexpr std::string_view schema =
      "aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor";
  // self's dtype, index's shape (of self's rank, no larger than self off `dim`)
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    const auto& index = r.input("index");
    detail::require_index_dtype(r, index.scalar_type, false);
    detail::require_rank(r, index.rank(), self.rank(), "index");
    const std::size_t at = r.wrap(r.args().integer("dim"), self.rank());
    for (std::size_t k = 0; k < self.rank(); ++k)
      if (k != at) detail::require_extent(r, index.shape[k], self.shape[k], k, false, "index larger than self");
    r.result(self.scalar_type, index.shape);
  }
  template <class C, class ScatterAdd = scatter_add>
  static void vjp(C& c) {
    const auto x = c.input("self");
    c.accumulate("self", c.emit(op_id_of<ScatterAdd>, {c.zeros_like(x), c.args().integer("dim"), c.input("index"), c.grad()}));
  }
};
struct tril {
  static constexpr std::string_view target = "aten.tril.default";
  static constexpr std::string_view schema =
      "aten::tril(Tensor self, int diagonal=0) -> Tensor";
  // x where column - row <= diagonal, else 0
  template <class C> static void decompose(C& c) { c.produce(detail::triangle(c, true)); }
  // self's meta (at least 2 dims)
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    if (self.rank() < 2) r.fail("input tensor must have at least 2 dimensions");
    r.result(self);
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.tril(c.grad(), c.args().integer_or_default("diagonal"))); }
};
struct triu {
  static constexpr std::string_view target = "aten.triu.default";
  static constexpr std::string_view schema =
      "aten::triu(Tensor self, int diagonal=0) -> Tensor";
  // x where column - row >= diagonal, else 0
  template <class C> static void decompose(C& c) { c.produce(detail::triangle(c, false)); }
  // self's meta (at least 2 dims)
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    if (self.rank() < 2) r.fail("input tensor must have at least 2 dimensions");
    r.result(self);
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.triu(c.grad(), c.args().integer_or_default("diagonal"))); }
};
struct nonzero {
  static constexpr std::string_view target = "aten.nonzero.default";
  static constexpr std::string_view schema =
      "aten::nonzero(Tensor self) -> Tensor";
  static constexpr bool differentiable = false;
  static constexpr bool data_dependent = true;  // (dim 0 of the result, as nonzero_op's)
  // i64 [n, rank]: n, the count of nonzero elements, only the data gives. The typed nonzero<"hits">
  // names it after the caller's symbol, which its call does not record; the rule names it u_nonzero.
  template <class R> static void infer(R& r) {
    r.result(dtype::i64, {ir::sym_expr::symbol("u_nonzero"), ir::sym_expr(static_cast<index_t>(r.input("self").rank()))});
  }
};
struct masked_select {
  static constexpr std::string_view target = "aten.masked_select.default";
  static constexpr std::string_view schema =
      "aten::masked_select(Tensor self, Tensor mask) -> Tensor";
  static constexpr bool data_dependent = true;  // (dim 0 of the result, as masked_select_op's)
  // self's dtype, [n]: n, the count of selected elements, only the data gives (u_masked_select, as
  // nonzero's); the bool mask expands to self's shape
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    const auto& mask = r.input("mask");
    detail::require_bool(r, mask.scalar_type, "the mask");
    detail::require_expands(r, mask.shape, self.shape, "the mask");
    r.result(self.scalar_type, {ir::sym_expr::symbol("u_masked_select")});
  }
  // the gradient back at the selected positions of self broadcast with the mask (summed to self's
  // shape by accumulate)
  template <class C, class MaskedScatter = masked_scatter>
  static void vjp(C& c) {
    const auto x = c.input("self");
    const auto mask = c.input("mask");
    const auto zeros = c.zeros(c.broadcast(c.shape(x), c.shape(mask)), c.scalar_type(x));
    c.accumulate("self", c.emit(op_id_of<MaskedScatter>, {zeros, mask, c.grad()}));
  }
};
// The gradients of index_select, gather and masked_select, which their derivatives record.
struct index_add {
  static constexpr std::string_view target = "aten.index_add.default";
  static constexpr std::string_view schema =
      "aten::index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor";
  // self's meta; source has self's dtype and shape but at `dim`, where it has one row per index
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    const auto& index = r.input("index");
    const auto& source = r.input("source");
    detail::require_index_dtype(r, index.scalar_type, true);
    const ir::sym_expr n = detail::index_count(r, index.shape);
    detail::require_same_dtype(r, self.scalar_type, source.scalar_type, "source");
    const std::size_t at = r.wrap(r.args().integer("dim"), self.rank());
    if (self.rank() > 1 || source.rank() > 1) detail::require_rank(r, source.rank(), self.rank(), "source");
    if (source.rank() == self.rank())
      for (std::size_t k = 0; k < self.rank(); ++k)
        detail::require_extent(r, source.shape[k], k == at ? n : self.shape[k], k, true, k == at ? "source rows and indices" : "source and self");
    r.result(self);
  }
  template <class C> static void vjp(C& c) {
    c.accumulate("self", c.grad());
    if (c.wants("source")) {
      const auto rows = c.index_select(c.grad(), c.args().integer("dim"), c.input("index"));
      const double alpha = c.args().real_or_default("alpha");
      c.accumulate("source", alpha == 1.0 ? rows : c.mul(rows, alpha));
    }
  }
};
struct scatter_add {
  static constexpr std::string_view target = "aten.scatter_add.default";
  static constexpr std::string_view schema =
      "aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor";
  // self's meta; index (i64) and src of self's rank, index no larger than src, nor than self off `dim`
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    const auto& index = r.input("index");
    const auto& src = r.input("src");
    detail::require_index_dtype(r, index.scalar_type, false);
    detail::require_same_dtype(r, self.scalar_type, src.scalar_type, "src");
    detail::require_rank(r, index.rank(), self.rank(), "index");
    detail::require_rank(r, src.rank(), self.rank(), "src");
    const std::size_t at = r.wrap(r.args().integer("dim"), self.rank());
    for (std::size_t k = 0; k < self.rank(); ++k) {
      detail::require_extent(r, index.shape[k], src.shape[k], k, false, "index larger than src");
      if (k != at) detail::require_extent(r, index.shape[k], self.shape[k], k, false, "index larger than self");
    }
    r.result(self);
  }
  template <class C, class Gather = gather>
  static void vjp(C& c) {
    c.accumulate("self", c.grad());
    if (c.wants("src")) {
      const auto idx = c.input("index");
      auto m = c.meta(idx);
      m.scalar_type = c.scalar_type(c.grad());
      auto r = c.emit(op_id_of<Gather>, {c.grad(), c.args().integer("dim"), idx}, std::move(m));
      const auto is = c.shape(idx), ss = c.shape(c.input("src"));
      for (std::size_t d = 0; d < is.size(); ++d)  // (src past the index's extent was not added: zeros)
        if (!(is[d] == ss[d])) r = c.pad_along(r, d, decltype(is[d])(index_t{0}), ss[d] - is[d]);
      c.accumulate("src", r);
    }
  }
};
struct masked_scatter {
  static constexpr std::string_view target = "aten.masked_scatter.default";
  static constexpr std::string_view schema =
      "aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor";
  // self's dtype (source's too), in the shape self and the bool mask broadcast to
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    const auto& mask = r.input("mask");
    detail::require_bool(r, mask.scalar_type, "the mask");
    detail::require_same_dtype(r, self.scalar_type, r.input("source").scalar_type, "source");
    r.result(self.scalar_type, r.broadcast(self.shape, mask.shape));
  }
  template <class C> static void vjp(C& c) {
    c.accumulate("self", c.masked_fill(c.grad(), c.input("mask"), 0.0));
    if (c.wants("source")) c.unsupported("the gradient of source (as many of its elements as the mask selects: a size only the data gives)");
  }
};
}  // namespace aten

// cond ? x : y elementwise; the three broadcast together, x and y promote.
struct where_op {
  static constexpr std::string_view target = "aten.where.self";
  static constexpr std::string_view schema =
      "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor";
  template <class C> static void vjp(C& c) {
    const auto cond = c.input("condition");
    if (c.wants("self")) c.accumulate("self", c.masked_fill(c.grad(), c.logical_not(cond), 0.0));
    if (c.wants("other")) c.accumulate("other", c.masked_fill(c.grad(), cond, 0.0));
  }
  template <class C, class X, class Y>
  static constexpr auto result(const C& c, const X& x, const Y& y) {
    if constexpr (C::dtype_type::value != dtype::b8) {
      TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
        w.put("typex::where: the condition is a "); w.put(name(C::dtype_type::value));
        w.put(" tensor; it must be bool (compare first: where(x > 0, x, y))");
      });
    }
    const auto s = broadcast_shapes(c.shape, broadcast_shapes(x.shape, y.shape, op_name<"where">), op_name<"where">);
    return tensor_spec<promote_t<typename X::dtype_type, typename Y::dtype_type>, std::remove_cvref_t<decltype(s)>>(s);
  }
  static constexpr bool pointwise = true;
  // self and other promote; the bool condition, self and other broadcast together
  template <class R> static void infer(R& r) {
    const auto& c = r.input("condition");
    const auto& x = r.input("self");
    const auto& y = r.input("other");
    detail::require_bool(r, c.scalar_type, "the condition");
    r.result(promote_types(x.scalar_type, y.scalar_type), r.broadcast(c.shape, r.broadcast(x.shape, y.shape)));
  }
};

// x with `value` where mask is true; the mask broadcasts to x's shape (not beyond it).
struct masked_fill_op {
  static constexpr std::string_view target = "aten.masked_fill.Scalar";
  static constexpr std::string_view schema =
      "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor";
  // where(mask, value, self)
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    const auto v = c.full({}, c.args().real("value"), c.scalar_type(x));
    c.produce(c.where(c.input("mask"), v, c.expand(x, c.result_meta().shape)));
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.masked_fill(c.grad(), c.input("mask"), 0.0)); }
  double value = 0;
  template <class X, class M>
  static constexpr X result(const X& x, const M& mask) {
    static_assert(M::dtype_type::value == dtype::b8, "typex::masked_fill: the mask must be a bool tensor");
    (void)expand_shape(mask.shape, x.shape, op_name<"masked_fill">);  // the mask must expand to x's shape
    return x;
  }
  static constexpr bool pointwise = true;
  // self's meta; the bool mask expands to self's shape
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    const auto& mask = r.input("mask");
    detail::require_bool(r, mask.scalar_type, "the mask");
    detail::require_expands(r, mask.shape, self.shape, "the mask");
    r.result(self);
  }
  template <class V>
  void attributes(V&& v) const {
    v(value);
  }
};

// Rows (slices along Dim) of x at the positions in a 1-d index: that dim becomes the index's length.
template <long long Dim>
struct index_select_op {
  static constexpr std::string_view target = aten::index_select::target;
  static constexpr std::string_view schema = aten::index_select::schema;
  static constexpr std::size_t attributes_at = 1;  // (input, dim, index)
  template <class X, class I>
  static constexpr auto result(const X& x, const I& index) {
    static_assert(I::shape_type::rank == 1, "typex::index_select: the index must be a 1-d tensor");
    static_assert(I::dtype_type::value == dtype::i64 || I::dtype_type::value == dtype::i32,
                  "typex::index_select: the index must be an i64 or i32 tensor");
    constexpr std::size_t at = detail::checked_dim<"index_select", Dim, static_cast<long long>(X::shape_type::rank)>();
    const auto s = detail::join(detail::take<0, at>(x.shape), shape(index.shape.template get<0>()),
                                detail::take<at + 1, X::shape_type::rank - at - 1>(x.shape));
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
  }
};

// out[i][j][k] = x[index[i][j][k]][j][k] (for Dim 0; likewise for the others): the result has the
// index's shape; the index has x's rank and, off Dim, extents no larger than x's (as torch).
template <long long Dim>
struct gather_op {
  static constexpr std::string_view target = aten::gather::target;
  static constexpr std::string_view schema = aten::gather::schema;
  static constexpr std::size_t attributes_at = 1;  // (input, dim, index)
  template <class X, class I>
  static constexpr auto result(const X&, const I& index) {
    static_assert(I::shape_type::rank == X::shape_type::rank, "typex::gather: the index must have the input's rank");
    static_assert(I::dtype_type::value == dtype::i64, "typex::gather: the index must be an i64 tensor");
    (void)detail::checked_dim<"gather", Dim, static_cast<long long>(X::shape_type::rank)>();
    return tensor_spec<typename X::dtype_type, typename I::shape_type>(index.shape);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
  }
};

// The lower (tril) or upper (triu) triangle of the last two dims, from diagonal k (0: the main
// diagonal; k > 0 above it, k < 0 below it); the rest is zero.
template <bool Lower>
struct triangle_op {
  static constexpr std::string_view target = Lower ? aten::tril::target : aten::triu::target;
  static constexpr std::string_view schema = Lower ? aten::tril::schema : aten::triu::schema;
  index_t diagonal = 0;
  template <class X>
  static constexpr X result(const X& x) {
    static_assert(X::shape_type::rank >= 2, "typex::tril/triu: the input must have at least 2 dims");
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(diagonal);
  }
};
using tril_op = triangle_op<true>;
using triu_op = triangle_op<false>;

// Data-dependent sizes: nonzero(x) (the indices of the nonzero elements, [n, rank]) and
// masked_select(x, mask) (the elements where mask, expanded to x's shape, is true, [n]). n is known only from the data, so
// the caller names it — nonzero<"hits">(x) — and the result's dim is the symbolic dim
// sym<"hits", 0, N>, N the input's largest element count: torch.export's unbacked symbol (u0),
// with its inline range. Eagerly it holds the count; traced, the graph records the symbol, which the
// program binds when the op runs, and export decides the facts later ops need about it (an op that
// needs a concrete value of it says so at export). Two data-dependent ops should name different
// symbols: one name means one value.
namespace detail {
// The largest element count of shape type S.
template <class S>
constexpr index_t max_numel() noexcept {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    index_t n = 1;
    ((n = sat_mul(n, S::template dim_t<I>::hi)), ...);
    return n;
  }(std::make_index_sequence<S::rank>{});
}
// The size a data-dependent dim holds while tracing (no data to count): 2, or its maximum if
// smaller — not 0 or 1, which shape rules treat specially.
constexpr index_t trace_hint(index_t hi) noexcept { return hi < 2 ? hi : 2; }
}  // namespace detail

template <fixed_string Name>
struct nonzero_op {
  static constexpr std::string_view target = aten::nonzero::target;
  static constexpr std::string_view schema = aten::nonzero::schema;
  static constexpr bool data_dependent = true;  // (dim 0 of the result)
  template <class X>
  static constexpr auto result(const X&) {
    using N = sym<Name, 0, detail::max_numel<typename X::shape_type>()>;
    using S = shape<N, fix<static_cast<index_t>(X::shape_type::rank)>>;
    return tensor_spec<i64, S>(S(N(detail::trace_hint(N::hi)), {}));
  }
};

template <fixed_string Name>
struct masked_select_op {
  static constexpr std::string_view target = aten::masked_select::target;
  static constexpr std::string_view schema = aten::masked_select::schema;
  static constexpr bool data_dependent = true;
  template <class X, class M>
  static constexpr auto result(const X& x, const M& mask) {
    static_assert(M::dtype_type::value == dtype::b8, "typex::masked_select: the mask must be a bool tensor");
    (void)expand_shape(mask.shape, x.shape, op_name<"masked_select">);  // the mask must expand to x's shape
    using N = sym<Name, 0, detail::max_numel<typename X::shape_type>()>;
    return tensor_spec<typename X::dtype_type, shape<N>>(shape<N>(N(detail::trace_hint(N::hi))));
  }
};

template <fixed_string Name, tensor_like X>
auto nonzero(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(nonzero_op<Name>{}, &loc, x);
}
template <fixed_string Name, tensor_like X, tensor_like M>
auto masked_select(const X& x, const M& mask, const std::source_location& loc = std::source_location::current()) {
  return apply_op(masked_select_op<Name>{}, &loc, x, mask);
}

template <tensor_like C, tensor_like X, tensor_like Y>
auto where(const C& cond, const X& x, const Y& y, const std::source_location& loc = std::source_location::current()) {
  return apply_op(where_op{}, &loc, cond, x, y);
}
template <tensor_like X, tensor_like M>
auto masked_fill(const X& x, const M& mask, double value, const std::source_location& loc = std::source_location::current()) {
  return apply_op(masked_fill_op{.value = value}, &loc, x, mask);
}
template <long long Dim, tensor_like X, tensor_like I>
auto index_select(const X& x, const I& index, const std::source_location& loc = std::source_location::current()) {
  return apply_op(index_select_op<Dim>{}, &loc, x, index);
}
template <long long Dim, tensor_like X, tensor_like I>
auto gather(const X& x, const I& index, const std::source_location& loc = std::source_location::current()) {
  return apply_op(gather_op<Dim>{}, &loc, x, index);
}
template <tensor_like X>
auto tril(const X& x, index_t diagonal = 0, const std::source_location& loc = std::source_location::current()) {
  return apply_op(tril_op{.diagonal = diagonal}, &loc, x);
}
template <tensor_like X>
auto triu(const X& x, index_t diagonal = 0, const std::source_location& loc = std::source_location::current()) {
  return apply_op(triu_op{.diagonal = diagonal}, &loc, x);
}

// This header's ops, for the registry (ops/all.hpp).
using indexing_ops = op_list<where_op, masked_fill_op, aten::index_select, aten::gather, aten::tril, aten::triu,
                            aten::nonzero, aten::masked_select, aten::index_add, aten::scatter_add, aten::masked_scatter>;

}  // namespace typex
