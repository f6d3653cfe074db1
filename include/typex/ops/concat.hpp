// typex/ops/concat.hpp — joining and splitting tensors: cat, stack, split, chunk.
//
//   cat<1>(tensors(a, b))       torch.cat([a, b], 1)    -> aten.cat.default([a, b], 1)
//   stack<0>(tensors(a, b, c))  torch.stack([a, b, c])  -> aten.stack.default([a, b, c], 0)
//   split<0, 2>(x)              x.split(2, 0)           -> one aten.slice.Tensor per piece
//   chunk<1, 3>(x)              x.chunk(3, 1)           -> one aten.slice.Tensor per piece
// cat's shapes follow concat_shapes (every dim but Dim equal, Dim summed); stack's inputs must all
// have one shape. split and chunk return a std::tuple of the pieces, each typed; they need a static
// extent on the split dim (the number of pieces is part of the type) and record slices, which is
// what torch's decompositions turn split into.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/concat.hpp>
#include <typex/core/rules/slice.hpp>
#include <typex/core/rules/squeeze.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>
#include <typex/core/sym_expr.hpp>

#include <source_location>
#include <string_view>
#include <tuple>

namespace typex {

namespace detail {
// The run-time rule of cat (stack false) and stack (true): the tensors promote to one dtype; cat
// joins shapes of one rank that agree off `dim`, summing its extents; stack needs one shape and
// inserts the count at `dim`. A pair of constant extents that differ is refused, as PyTorch
// refuses it; a symbolic one meets the other (the constant, where one is).
template <class R>
void join_meta(R& r, bool stack) {
  const auto xs = r.inputs("tensors");
  if (xs.empty()) r.fail("expected a non-empty list of Tensors");
  const std::size_t rank = xs.front().rank();
  if (!stack && rank == 0) r.fail("zero-dimensional tensor (at position 0) cannot be concatenated");
  const std::size_t at = r.wrap(r.args().integer_or_default("dim"), stack ? rank + 1 : rank);
  dtype d = xs.front().scalar_type;
  std::vector<ir::sym_expr> shape = xs.front().shape;
  for (std::size_t i = 1; i < xs.size(); ++i) {
    d = promote_types(d, xs[i].scalar_type);
    if (xs[i].rank() != rank) {
      r.fail(to_string_with([&](auto& w) {
        w.put(stack ? "stack expects each tensor to be equal size" : "Tensors must have same number of dimensions");
        w.put(": got "); w.put_int(static_cast<long long>(rank)); w.put(" and "); w.put_int(static_cast<long long>(xs[i].rank()));
        w.put(" dims (tensors 0 and "); w.put_int(static_cast<long long>(i)); w.put(")");
      }));
    }
    for (std::size_t k = 0; k < rank; ++k) {
      const ir::sym_expr& e = xs[i].shape[k];
      if (!stack && k == at) {  // (seq + seq is 2*seq, as the typed cat spells it)
        shape[k] = shape[k].is_symbol() && shape[k] == e ? ir::sym_expr(index_t{2}) * e : shape[k] + e;
      } else if (!(shape[k] == e)) {
        if (shape[k].is_constant() && e.is_constant()) {
          r.fail(to_string_with([&](auto& w) {
            if (stack) w.put("stack expects each tensor to be equal size");
            else { w.put("Sizes of tensors must match except in dimension "); w.put_int(static_cast<long long>(at)); }
            w.put(". Expected size "); w.put_int(*shape[k].value()); w.put(" but got size "); w.put_int(*e.value());
            w.put(" for tensor number "); w.put_int(static_cast<long long>(i)); w.put(" in the list (dim ");
            w.put_int(static_cast<long long>(k)); w.put(")");
          }));
        }
        if (e.is_constant()) shape[k] = e;
      }
    }
  }
  if (stack) shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(at), ir::sym_expr(static_cast<index_t>(xs.size())));
  r.result(d, std::move(shape));
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
struct cat {
  static constexpr std::string_view target = "aten.cat.default";
  static constexpr std::string_view schema =
      "aten::cat(Tensor[] tensors, int dim=0) -> Tensor";
  template <class R> static void infer(R& r) { detail::join_meta(r, false); }
  // each input's range of the gradient along dim
  template <class C> static void vjp(C& c) {
    const auto xs = c.inputs("tensors");
    const auto g = c.grad();
    const std::int64_t dim = static_cast<std::int64_t>(c.wrap(c.args().integer_or_default("dim"), c.rank(g)));
    auto offset = decltype(c.size(g, 0))(index_t{0});
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const auto next = offset + c.size(xs[k], dim);
      if (c.wants("tensors", k)) c.accumulate("tensors", c.slice(g, dim, offset, next), k);
      offset = next;
    }
  }
};
struct stack {
  static constexpr std::string_view target = "aten.stack.default";
  static constexpr std::string_view schema =
      "aten::stack(Tensor[] tensors, int dim=0) -> Tensor";
  // cat of the tensors, each with a new dim of extent 1 at dim
  template <class C> static void decompose(C& c) {
    const auto xs = c.inputs("tensors");
    const auto d = static_cast<std::int64_t>(c.wrap(c.args().integer_or_default("dim"), c.rank(xs.front()) + 1));
    std::vector<std::remove_cvref_t<decltype(xs.front())>> parts;
    for (const auto& x : xs) parts.push_back(c.unsqueeze(x, d));
    c.produce(parts.size() == 1 ? parts.front() : c.emit(op_id_of<cat>, {parts, d}));
  }
  template <class R> static void infer(R& r) { detail::join_meta(r, true); }
  template <class C> static void vjp(C& c) {
    const auto xs = c.inputs("tensors");
    const auto g = c.grad();
    const std::int64_t dim = static_cast<std::int64_t>(c.wrap(c.args().integer_or_default("dim"), c.rank(g)));
    for (std::size_t k = 0; k < xs.size(); ++k)
      if (c.wants("tensors", k)) c.accumulate("tensors", c.select(g, dim, static_cast<index_t>(k)), k);
  }
};
}  // namespace aten

namespace detail {
// The dtype all of a list's tensors promote to.
template <class... S>
constexpr dtype promote_all() {
  dtype d = dtype::b8;
  ((d = promote_types(d, S::dtype_type::value)), ...);
  return d;
}
}  // namespace detail

template <long long Dim>
struct cat_op {
  static constexpr std::string_view target = aten::cat::target;
  static constexpr std::string_view schema = aten::cat::schema;
  template <class... S>
  static constexpr auto result(const tensor_list_spec<S...>& l) {
    static_assert(sizeof...(S) >= 1, "typex::cat: give at least one tensor");
    using DT = dtype_tag<detail::promote_all<S...>()>;
    const auto s = std::apply([](const auto&... t) { return concat_shapes<Dim>(t.shape...); }, l.items);
    return tensor_spec<DT, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
  }
};

template <long long Dim>
struct stack_op {
  static constexpr std::string_view target = aten::stack::target;
  static constexpr std::string_view schema = aten::stack::schema;
  template <class... S>
  static constexpr auto result(const tensor_list_spec<S...>& l) {
    static_assert(sizeof...(S) >= 1, "typex::stack: give at least one tensor");
    using DT = dtype_tag<detail::promote_all<S...>()>;
    // each input gains a dim of 1 at Dim; the unsqueezed shapes then concatenate (so they must agree
    // everywhere: concat_shapes checks every other dim, and the new dim of each is 1)
    const auto s = std::apply(
        [](const auto&... t) { return concat_shapes<Dim>(unsqueeze_shape<Dim>(t.shape, op_name<"stack">)...); }, l.items);
    return tensor_spec<DT, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
  }
};

template <long long Dim, class... T>
auto cat(const tensor_list<T...>& l, const std::source_location& loc = std::source_location::current()) {
  return apply_op(cat_op<Dim>{}, &loc, l);
}
template <long long Dim, class... T>
auto stack(const tensor_list<T...>& l, const std::source_location& loc = std::source_location::current()) {
  return apply_op(stack_op<Dim>{}, &loc, l);
}

namespace detail {
// The extent split along: static, or after the error below the most pieces the dim's range allows
// (at most 64), so that the pieces the code after it takes exist and no second error follows.
template <long long Dim, class X>
constexpr index_t static_split_extent() {
  using S = typename X::shape_type;
  constexpr long long at = wrap_dim(Dim, static_cast<long long>(S::rank));
  if constexpr (at < 0) {
    return 1;  // (after checked_dim's error)
  } else {
    using D = typename S::template dim_t<static_cast<std::size_t>(at)>;
    if constexpr (is_static_dim_v<D>) return D::value;
    else return D::hi < 64 ? D::hi : 64;
  }
}
// An error here means: the dim split along is not static. (A statement of its own, not part of the
// constant above: a failed instantiation inside a constant expression makes clang report the
// constant too.)
template <fixed_string Op, long long Dim, class X>
constexpr auto require_static_split_dim() {
  using S = typename X::shape_type;
  constexpr std::size_t at = checked_dim<Op, Dim, static_cast<long long>(S::rank)>();
  using D = typename S::template dim_t<at>;
  if constexpr (!is_static_dim_v<D>) {
    TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": dim "); w.put_int(at); w.put(" of "); S::write_type(w);
      w.put(" is not static; the number of pieces is part of the type of the result, so split a static dim (or slice a symbolic one)");
    });
  }
}

template <long long Dim, index_t Size, index_t N, class X, std::size_t... I>
auto split_pieces(const X& x, const std::source_location& loc, std::index_sequence<I...>) {
  // (a braced list: the pieces are recorded in order, which function arguments would not guarantee)
  return std::tuple{
      apply_op(slice_op<Dim, static_cast<index_t>(I) * Size, std::min<index_t>(N, (static_cast<index_t>(I) + 1) * Size), 1>{}, &loc, x)...};
}
}  // namespace detail

// Pieces of `Size` along Dim (the last may be shorter), as torch.split(x, Size, Dim).
template <long long Dim, index_t Size, tensor_like X>
auto split(const X& x, const std::source_location& loc = std::source_location::current()) {
  static_assert(Size >= 1, "typex::split: the piece size must be at least 1");
  detail::require_static_split_dim<"split", Dim, X>();
  constexpr index_t n = detail::static_split_extent<Dim, X>();
  constexpr index_t pieces = n == 0 ? 1 : (n + Size - 1) / Size;
  return detail::split_pieces<Dim, Size, n>(x, loc, std::make_index_sequence<static_cast<std::size_t>(pieces)>{});
}

// Chunks pieces along Dim, as torch.chunk: pieces of ceil(n / Chunks), so there may be fewer than
// Chunks of them (torch.chunk's rule: chunk<0, 4> of 6 rows gives 3 pieces of 2).
template <long long Dim, index_t Chunks, tensor_like X>
auto chunk(const X& x, const std::source_location& loc = std::source_location::current()) {
  static_assert(Chunks >= 1, "typex::chunk: the number of chunks must be at least 1");
  detail::require_static_split_dim<"chunk", Dim, X>();
  constexpr index_t n = detail::static_split_extent<Dim, X>();
  constexpr index_t size = n == 0 ? 1 : (n + Chunks - 1) / Chunks;
  return split<Dim, size>(x, loc);
}

// This header's ops, for the registry (ops/all.hpp).
using concat_ops = op_list<aten::cat, aten::stack>;

}  // namespace typex
