// typex/ops/shape_ops.hpp — ops that rearrange a tensor without computing: reshape / view,
// flatten, permute, transpose, unsqueeze, squeeze, expand, slice, select.
//
//   reshape(x, reshape_to(infer, 784_c))   x.reshape(-1, 784) -> aten.reshape.default(x, [-1, 784])
//   view(x, reshape_to(b, 4_c, 64_c))      x.view(b, 4, 64)   -> aten.view.default(x, [batch, 4, 64])
//   flatten<1>(x)                     torch.flatten(x, 1)     -> aten.flatten.using_ints(x, 1, -1)
//   permute<0, 2, 1>(x), transpose<1, 2>(x), unsqueeze<0>(x), squeeze<1>(x)
//   expand(x, reshape_to(b, 4_c, 8_c))  x.expand(b, 4, 8)      -> aten.expand.default(x, [batch, 4, 8])
//   select<1>(x, 0)                   x[:, 0]                  -> aten.select.int(x, 1, 0)
// Dims and permutations are template arguments, so a dim past the rank or a bad permutation is a
// compile error; element counts are checked as reshape_shape documents.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/expand.hpp>
#include <typex/core/rules/permute.hpp>
#include <typex/core/rules/reshape.hpp>
#include <typex/core/rules/scatter.hpp>
#include <typex/core/rules/slice.hpp>
#include <typex/core/rules/squeeze.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <array>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <algorithm>
#include <type_traits>
#include <vector>

namespace typex {

// The run-time shape rules' arithmetic (each op's `infer`, ir/describe.hpp), over symbolic extents
// E (ir::sym_expr): folded as the typed dims fold (x + 0 is x, x * 1 is x, (x + 2) - 3 is x - 1),
// so that a rule spells an extent as the typed rule does.
namespace detail::shape_meta {
// e + c
template <class E>
E plus(const E& e, index_t c) {
  if (c == 0) return e;
  if (e.is_constant()) return E(*e.value() + c);
  if (e.what() == E::kind::op && (e.op() == dim_op::add || e.op() == dim_op::sub) && e.rhs().is_constant())
    return plus(e.lhs(), (e.op() == dim_op::add ? *e.rhs().value() : -*e.rhs().value()) + c);
  return E::apply(c > 0 ? dim_op::add : dim_op::sub, e, E(c > 0 ? c : -c));
}
// a - b
template <class E>
E minus(const E& a, const E& b) {
  if (b.is_constant()) return plus(a, -*b.value());
  return E::apply(dim_op::sub, a, b);
}
// a * b
template <class E>
E times(const E& a, const E& b) {
  if (a.is_constant() && b.is_constant()) return E(*a.value() * *b.value());
  if (b.is_constant() && *b.value() == 1) return a;
  if (a.is_constant() && *a.value() == 1) return b;
  return E::apply(dim_op::mul, a, b);
}
// a // b or ceil(a / b) (op: floordiv or ceildiv), b >= 1
template <class E>
E divide(dim_op op, const E& a, index_t b) {
  if (b == 1) return a;
  if (a.is_constant()) return E(op == dim_op::floordiv ? floordiv(*a.value(), b) : ceildiv(*a.value(), b));
  return E::apply(op, a, E(b));
}
template <class E>
E max(const E& a, const E& b) {
  if (a.is_constant() && b.is_constant()) return E(max_of(*a.value(), *b.value()));
  return E::apply(dim_op::max, a, b);
}
// min(a, b) = a + b - max(a, b) (the dims have no min)
template <class E>
E min(const E& a, const E& b) {
  if (a.is_constant() && b.is_constant()) return E(min_of(*a.value(), *b.value()));
  return E::apply(dim_op::sub, E::apply(dim_op::add, a, b), E::apply(dim_op::max, a, b));
}
// the product of extents [first, last), left to right (an empty product is 1)
template <class It>
auto product(It first, It last) {
  using E = std::remove_cvref_t<decltype(*first)>;
  E p(index_t{1});
  for (; first != last; ++first) p = times(p, *first);
  return p;
}
// whether two extents differ in every run: two different constants
template <class E>
bool differ(const E& a, const E& b) {
  return a.is_constant() && b.is_constant() && *a.value() != *b.value();
}
// "[2, batch, 4]", for messages
template <class S>
std::string text(const S& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].to_string();
  return out + "]";
}

// reshape's and view's sizes: PyTorch's -1 is numel(self) / (the product of the other sizes),
// spelled as reshape_shape spells it (a constant where the symbolic parts agree, the symbolic part
// times a constant where the other sizes are constants, a floor division otherwise); an element
// count that cannot stay the same is refused.
template <class R, class S>
S reshape_sizes(const R& r, const S& src, S target) {
  using E = typename S::value_type;
  index_t fs = 1, ft = 1;
  S ns, nt;
  for (const E& d : src) {
    if (d.is_constant()) fs *= *d.value();
    else ns.push_back(d);
  }
  std::ptrdiff_t infer_at = -1;
  for (std::size_t k = 0; k < target.size(); ++k) {
    const E& d = target[k];
    if (!d.is_constant()) {
      nt.push_back(d);
    } else if (*d.value() == -1) {
      if (infer_at >= 0) r.fail("only one size can be inferred (-1), in " + text(target));
      infer_at = static_cast<std::ptrdiff_t>(k);
    } else if (*d.value() < 0) {
      r.fail("invalid size " + d.to_string() + " in " + text(target));
    } else {
      ft *= *d.value();
    }
  }
  const bool same_symbolic = product(ns.begin(), ns.end()) == product(nt.begin(), nt.end());
  const auto refuse = [&] {
    r.fail("cannot reshape " + text(src) + " into " + text(target) + ": the number of elements must stay the same");
  };
  if (infer_at < 0) {
    if (same_symbolic && fs != ft) refuse();
    return target;
  }
  E inferred;
  if (same_symbolic) {
    if (ft == 0 || fs % ft != 0) refuse();
    inferred = E(fs / ft);
  } else if (nt.empty() && ft != 0 && fs % ft == 0) {
    inferred = times(product(ns.begin(), ns.end()), E(fs / ft));
  } else {
    S known = target;
    known.erase(known.begin() + infer_at);
    const E all = product(src.begin(), src.end()), rest = product(known.begin(), known.end());
    if (all.is_constant() && rest.is_constant() && (*rest.value() == 0 || *all.value() % *rest.value() != 0)) refuse();
    inferred = all.is_constant() && rest.is_constant() ? E(*all.value() / *rest.value()) : E::apply(dim_op::floordiv, all, rest);
  }
  target[static_cast<std::size_t>(infer_at)] = inferred;
  return target;
}

// select's result: self without `dim` (the index in [-n, n)).
template <class R>
auto select_meta(const R& r) {
  auto m = r.input("self");
  if (m.rank() == 0) r.fail("the input must be at least 1-d");
  const std::size_t d = r.wrap(r.args().integer("dim"), m.rank());
  const auto index = r.sym("index");
  const auto& n = m.shape[d];
  if (index.is_constant() && n.is_constant() && (*index.value() < -*n.value() || *index.value() >= *n.value()))
    r.fail("index " + index.to_string() + " is out of range for dim " + std::to_string(d) + " of extent " + n.to_string());
  m.shape.erase(m.shape.begin() + static_cast<std::ptrdiff_t>(d));
  return m;
}

// slice's result: self[start:end:step] along `dim`, Python's bounds (negative from the end,
// clamped into [0, n]), ceil((end - start) / step) elements. With a symbolic extent n, a bound that
// is a dim lies in the dim and a start left at a constant c >= 0 with the end left out is too, as
// the typed rule requires (x[2:] of seq is seq - 2, x[a:b] is b - a); other constant bounds are
// clamped exactly (min, max).
template <class R>
auto slice_meta(const R& r) {
  auto m = r.input("self");
  using E = typename decltype(m.shape)::value_type;
  const auto& a = r.args();
  if (m.rank() == 0) r.fail("the input must be at least 1-d");
  const std::size_t d = r.wrap(a.integer_or_default("dim"), m.rank());
  const std::int64_t step = a.integer_or_default("step");
  if (step < 1) r.fail("step " + std::to_string(step) + " is not positive; slices need step >= 1");
  const E n = m.shape[d];
  const E start = a.has("start") ? r.sym("start") : E(index_t{0});
  E end = a.has("end") ? r.sym("end") : n;
  if (end.is_constant() && *end.value() >= int_oo) end = n;  // (torch records x[a:] as end = 2^63 - 1)
  if (n.is_constant() && start.is_constant() && end.is_constant()) {
    m.shape[d] = E(slice_length(*n.value(), *start.value(), *end.value(), step));
    return m;
  }
  const auto bound = [&](const E& b, bool is_start) {
    if (!b.is_constant()) return b;
    const index_t v = *b.value();
    if (v < 0) return max(plus(n, v), E(index_t{0}));
    return is_start ? b : min(b, n);
  };
  const E lo = bound(start, true);
  E len = minus(bound(end, false), lo);
  if (start.is_constant() && end.is_constant() && !(lo.is_constant() && *lo.value() == 0)) len = max(len, E(index_t{0}));
  m.shape[d] = divide(dim_op::ceildiv, len, step);
  return m;
}

// A scatter's source must have the region's dtype and shape (select_scatter, slice_scatter).
template <class R, class M>
void require_scatter_source(const R& r, const M& region) {
  const auto& src = r.input("src");
  if (src.scalar_type != region.scalar_type)
    r.fail(std::string("the source is ") + std::string(typex::name(src.scalar_type)) + " but the destination is " +
           std::string(typex::name(region.scalar_type)));
  bool fits = src.rank() == region.rank();
  for (std::size_t i = 0; fits && i < src.rank(); ++i) fits = !differ(src.shape[i], region.shape[i]);
  if (!fits)
    r.fail("the source " + text(src.shape) + " does not have the shape of the region it is written to, " + text(region.shape));
}
}  // namespace detail::shape_meta

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
struct reshape {
  static constexpr std::string_view target = "aten.reshape.default";
  static constexpr std::string_view schema =
      "aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)";
  // the sizes, a -1 inferred from the element count
  template <class R> static void infer(R& r) {
    const auto& x = r.input("self");
    r.result(x.scalar_type, detail::shape_meta::reshape_sizes(r, x.shape, r.sizes("shape")));
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.reshape(c.grad(), c.shape(c.input("self")))); }
};
struct view {
  static constexpr std::string_view target = "aten.view.default";
  static constexpr std::string_view schema =
      "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)";
  // reshape (in a functional program, the same value)
  template <class C> static void decompose(C& c) { c.produce(c.emit(op_id_of<reshape>, {c.input("self"), c.sizes("size")})); }
  template <class R> static void infer(R& r) {
    const auto& x = r.input("self");
    r.result(x.scalar_type, detail::shape_meta::reshape_sizes(r, x.shape, r.sizes("size")));
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.reshape(c.grad(), c.shape(c.input("self")))); }
};
struct flatten_using_ints {
  static constexpr std::string_view target = "aten.flatten.using_ints";
  static constexpr std::string_view schema =
      "aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)";
  // reshape to the flattened extents
  template <class C> static void decompose(C& c) { c.produce(c.emit(op_id_of<reshape>, {c.input("self"), c.result_meta().shape})); }
  // dims start_dim..end_dim become one, their product; a 0-d input becomes [1]
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    using E = typename decltype(m.shape)::value_type;
    if (m.rank() == 0) return r.result(m.scalar_type, {E(index_t{1})});
    const std::size_t a = r.wrap(r.args().integer_or_default("start_dim"), m.rank());
    const std::size_t b = r.wrap(r.args().integer_or_default("end_dim"), m.rank());
    if (a > b) r.fail("start dim " + std::to_string(a) + " comes after end dim " + std::to_string(b));
    const auto first = m.shape.begin() + static_cast<std::ptrdiff_t>(a);
    const auto last = m.shape.begin() + static_cast<std::ptrdiff_t>(b) + 1;
    const E p = detail::shape_meta::product(first, last);
    *first = p;
    m.shape.erase(first + 1, last);
    r.result(std::move(m));
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.reshape(c.grad(), c.shape(c.input("self")))); }
};
struct permute {
  static constexpr std::string_view target = "aten.permute.default";
  static constexpr std::string_view schema =
      "aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)";
  // result dim i is self's dim dims[i]; dims names every dim once
  template <class R> static void infer(R& r) {
    const auto& x = r.input("self");
    const auto dims = r.args().ints("dims");
    if (dims.size() != x.rank()) r.fail("dims is not a permutation of the dims of " + detail::shape_meta::text(x.shape));
    auto m = x;
    std::vector<bool> seen(x.rank(), false);
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const std::size_t d = r.wrap(dims[i], x.rank());
      if (seen[d]) r.fail("dims is not a permutation of the dims of " + detail::shape_meta::text(x.shape));
      seen[d] = true;
      m.shape[i] = x.shape[d];
    }
    r.result(std::move(m));
  }
  // the inverse permutation
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto dims = c.args().ints("dims");
    std::vector<std::int64_t> inverse(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) inverse[c.wrap(dims[i], c.rank(x))] = static_cast<std::int64_t>(i);
    c.accumulate("self", c.permute(c.grad(), std::move(inverse)));
  }
};
struct transpose_int {
  static constexpr std::string_view target = "aten.transpose.int";
  static constexpr std::string_view schema =
      "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)";
  // permute with the two dims swapped
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    const std::size_t r = c.rank(x);
    std::vector<std::int64_t> perm;
    for (std::size_t i = 0; i < r; ++i) perm.push_back(static_cast<std::int64_t>(i));
    if (r > 0) std::swap(perm[c.wrap(c.args().integer("dim0"), r)], perm[c.wrap(c.args().integer("dim1"), r)]);
    c.produce(c.permute(x, std::move(perm)));
  }
  // dims dim0 and dim1 swapped (a 0-d input stays as it is)
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    const std::size_t a = r.wrap(r.args().integer("dim0"), m.rank()), b = r.wrap(r.args().integer("dim1"), m.rank());
    if (m.rank() != 0) std::swap(m.shape[a], m.shape[b]);
    r.result(std::move(m));
  }
  template <class C> static void vjp(C& c) {
    c.accumulate("self", c.transpose(c.grad(), c.args().integer("dim0"), c.args().integer("dim1")));
  }
};
struct unsqueeze {
  static constexpr std::string_view target = "aten.unsqueeze.default";
  static constexpr std::string_view schema =
      "aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)";
  // a dim of extent 1 inserted at dim (in [-rank - 1, rank])
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    using E = typename decltype(m.shape)::value_type;
    const std::size_t d = r.wrap(r.args().integer("dim"), m.rank() + 1);
    m.shape.insert(m.shape.begin() + static_cast<std::ptrdiff_t>(d), E(index_t{1}));
    r.result(std::move(m));
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.reshape(c.grad(), c.shape(c.input("self")))); }
};
struct squeeze_dim {
  static constexpr std::string_view target = "aten.squeeze.dim";
  static constexpr std::string_view schema =
      "aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)";
  // dim removed; it must be 1 (typex's rule: PyTorch would keep a dim that is not)
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    const std::size_t d = r.wrap(r.args().integer("dim"), m.rank());
    if (m.rank() == 0) return r.result(std::move(m));
    const auto& n = m.shape[d];
    if (n.is_constant() && *n.value() != 1)
      r.fail("dim " + std::to_string(d) + " of " + detail::shape_meta::text(m.shape) + " has extent " + n.to_string() +
             ", not 1; only a dim of extent 1 can be squeezed");
    m.shape.erase(m.shape.begin() + static_cast<std::ptrdiff_t>(d));
    r.result(std::move(m));
  }
  template <class C> static void vjp(C& c) { c.accumulate("self", c.reshape(c.grad(), c.shape(c.input("self")))); }
};
struct expand {
  static constexpr std::string_view target = "aten.expand.default";
  static constexpr std::string_view schema =
      "aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)";
  // the sizes, self aligned to their right: -1 keeps self's extent, a dim of self repeats only if
  // it is 1, new leading dims are given
  template <class R> static void infer(R& r) {
    const auto& x = r.input("self");
    auto sizes = r.sizes("size");
    if (sizes.size() < x.rank())
      r.fail("cannot expand " + detail::shape_meta::text(x.shape) + " to " + detail::shape_meta::text(sizes) +
             ": the target has fewer dims than the input");
    const std::size_t lead = sizes.size() - x.rank();
    const auto target = sizes;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      auto& s = sizes[k];
      const bool keep = s.is_constant() && *s.value() == -1;
      if ((keep && k < lead) || (!keep && s.is_constant() && *s.value() < 0))
        r.fail("invalid size " + s.to_string() + " at dim " + std::to_string(k) + " of " + detail::shape_meta::text(target) +
               (keep ? " (-1 keeps an existing dim, not a new leading one)" : ""));
      if (k < lead) continue;
      const auto& in = x.shape[k - lead];
      if (keep) s = in;
      else if (in.is_constant() && *in.value() != 1 && detail::shape_meta::differ(in, s))
        r.fail("cannot expand " + detail::shape_meta::text(x.shape) + " to " + detail::shape_meta::text(target) + ": at dim " +
               std::to_string(k) + " the input's extent is neither 1 nor the target's (expand only repeats dims of extent 1)");
    }
    r.result(x.scalar_type, std::move(sizes));
  }
  // summed over the expanded dims (accumulate's sum_to)
  template <class C> static void vjp(C& c) { c.accumulate("self", c.grad()); }
};
struct select_int {
  static constexpr std::string_view target = "aten.select.int";
  static constexpr std::string_view schema =
      "aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)";
  template <class R> static void infer(R& r) { r.result(detail::shape_meta::select_meta(r)); }
  // the gradient at `index`, zeros elsewhere along dim
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const std::size_t d = c.wrap(c.args().integer("dim"), c.rank(x));
    const auto extent = c.size(x, static_cast<std::int64_t>(d));
    auto index = c.sym("index");
    if (index.is_constant() && *index.value() < 0) index = extent + index;
    c.accumulate("self", c.pad_along(c.unsqueeze(c.grad(), static_cast<std::int64_t>(d)), d, index, extent - index - index_t{1}));
  }
};
struct slice_Tensor {
  static constexpr std::string_view target = "aten.slice.Tensor";
  static constexpr std::string_view schema =
      "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)";
  template <class R> static void infer(R& r) { r.result(detail::shape_meta::slice_meta(r)); }
  // the gradient in the sliced range, zeros before and after; with a step, step - 1 zeros after
  // each element (the gradient [n, 1] next to zeros [n, step - 1], flattened)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const std::int64_t step = c.args().integer_or_default("step");
    const std::int64_t d = static_cast<std::int64_t>(c.wrap(c.args().integer_or_default("dim"), c.rank(x)));
    using extent_t = std::remove_cvref_t<decltype(c.size(x, d))>;
    const extent_t extent = c.size(x, d);
    const extent_t length = c.size(c.result(), d);
    extent_t start = c.args().has("start") ? c.sym("start") : extent_t(index_t{0});
    if (start.is_constant() && *start.value() < 0) start = extent + start;
    if (start.is_constant() && extent.is_constant()) start = extent_t(std::clamp<index_t>(*start.value(), 0, *extent.value()));
    auto g = c.grad();
    extent_t spread = length;
    if (step != 1) {
      if (!length.is_constant()) c.unsupported("a slice with a step over a symbolic length");
      if (*length.value() == 0) return;
      auto pieces = c.shape(g);
      pieces.insert(pieces.begin() + d + 1, extent_t(index_t{step - 1}));
      const auto interleaved = c.cat({c.unsqueeze(g, d + 1), c.zeros(pieces, c.scalar_type(g))}, d + 1);
      auto flat = c.shape(g);
      flat[static_cast<std::size_t>(d)] = extent_t(index_t{*length.value() * step});
      spread = extent_t(index_t{(*length.value() - 1) * step + 1});
      g = c.slice(c.reshape(interleaved, flat), d, extent_t(index_t{0}), spread);
    }
    c.accumulate("self", c.pad_along(g, static_cast<std::size_t>(d), start, extent - start - spread));
  }
};
// self with src written at `index` along dim (src: self's shape without dim), a new value:
// torch.select_scatter, the functional form of `self.select(dim, index).copy_(src)`.
struct select_scatter {
  static constexpr std::string_view target = "aten.select_scatter.default";
  static constexpr std::string_view schema =
      "aten::select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor";
  // self's dtype and shape; src must be the selected slice's
  template <class R> static void infer(R& r) {
    detail::shape_meta::require_scatter_source(r, detail::shape_meta::select_meta(r));
    r.result(r.input("self"));
  }
  // src's gradient is the gradient's slice there; self's, the gradient with that slice zeroed
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    const std::int64_t dim = c.args().integer("dim");
    const auto index = c.sym("index");
    const auto src = c.input("src");
    if (c.wants("src")) c.accumulate("src", c.select(g, dim, index));
    if (c.wants("self")) c.accumulate("self", c.emit(op_id_of<select_scatter>, {g, c.zeros(c.shape(src), c.scalar_type(g)), dim, index}));
  }
};
// self with src written into self[start:end:step] along dim (src: that slice's shape):
// torch.slice_scatter, the functional form of `self[..., start:end:step].copy_(src)`.
struct slice_scatter {
  static constexpr std::string_view target = "aten.slice_scatter.default";
  static constexpr std::string_view schema =
      "aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor";
  // self's dtype and shape; src must be the slice's
  template <class R> static void infer(R& r) {
    detail::shape_meta::require_scatter_source(r, detail::shape_meta::slice_meta(r));
    r.result(r.input("self"));
  }
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    const auto src = c.input("src");
    const std::int64_t dim = c.args().integer_or_default("dim"), step = c.args().integer_or_default("step");
    using argument = decltype(c.none());
    const argument start = c.args().has("start") ? argument(c.sym("start")) : c.none();
    const argument end = c.args().has("end") ? argument(c.sym("end")) : c.none();
    if (c.wants("src")) c.accumulate("src", c.emit(op_id_of<slice_Tensor>, {g, dim, start, end, step}));
    if (c.wants("self"))
      c.accumulate("self", c.emit(op_id_of<slice_scatter>, {g, c.zeros(c.shape(src), c.scalar_type(g)), dim, start, end, step}));
  }
};
}  // namespace aten

// A list of sizes, possibly symbolic, one of which may be PyTorch's -1 (at infer_at; -1: none).
// A reshape's anonymous (dyn) size is recorded as a fresh symbol, which the runner infers from the
// element count as it does -1; a factory's (`factory`) cannot be inferred, so tracing refuses it.
template <class S>
struct sizes_attribute {
  S dims;
  long long infer_at = -1;
  bool factory = false;
};
// A single size (ATen's SymInt: arange's bounds): a dim, recorded as its expression while tracing
// and as its value otherwise; like a factory's sizes, it cannot be anonymous while tracing.
template <dim D>
struct size_attribute {
  D value;
};

namespace detail {
template <class D>
inline constexpr bool has_anonymous_dim_v = is_dynamic_dim_v<D>;
template <dim_op O, class A, class B>
inline constexpr bool has_anonymous_dim_v<derived<O, A, B>> = has_anonymous_dim_v<A> || has_anonymous_dim_v<B>;
}  // namespace detail

namespace detail {
template <class T> struct is_reshape_target : std::false_type {};
template <class... T> struct is_reshape_target<reshape_target<T...>> : std::true_type {};

template <class... T>
constexpr long long infer_position() {
  constexpr bool is_infer[] = {std::same_as<T, infer_dim>..., false};
  for (std::size_t i = 0; i < sizeof...(T); ++i)
    if (is_infer[i]) return static_cast<long long>(i);
  return -1;
}

template <fixed_string Name, class... T>
struct reshape_like {
  reshape_target<T...> to;

  template <class X>
  constexpr auto result(const X& x) const {
    const auto s = reshape_shape(x.shape, to, op_name<Name>);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(sizes_attribute<decltype(to.dims)>{to.dims, infer_position<T...>()});
  }
};
}  // namespace detail

template <class... T>
struct reshape_op : detail::reshape_like<"reshape", T...> {
  static constexpr std::string_view target = aten::reshape::target;
  static constexpr std::string_view schema = aten::reshape::schema;
};
template <class... T>
struct view_op : detail::reshape_like<"view", T...> {
  static constexpr std::string_view target = aten::view::target;
  static constexpr std::string_view schema = aten::view::schema;
};

template <long long Start, long long End>
struct flatten_op {
  static constexpr std::string_view target = aten::flatten_using_ints::target;
  static constexpr std::string_view schema = aten::flatten_using_ints::schema;
  template <class X>
  static constexpr auto result(const X& x) {
    const auto s = flatten_shape<Start, End>(x.shape, op_name<"flatten">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Start});
    v(index_t{End});
  }
};

template <long long... P>
struct permute_op {
  static constexpr std::string_view target = aten::permute::target;
  static constexpr std::string_view schema = aten::permute::schema;
  template <class X>
  static constexpr auto result(const X& x) {
    const auto s = permute_shape<P...>(x.shape, op_name<"permute">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(std::array<index_t, sizeof...(P)>{P...});
  }
};

template <long long D0, long long D1>
struct transpose_op {
  static constexpr std::string_view target = aten::transpose_int::target;
  static constexpr std::string_view schema = aten::transpose_int::schema;
  template <class X>
  static constexpr auto result(const X& x) {
    const auto s = transpose_shape<D0, D1>(x.shape, op_name<"transpose">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{D0});
    v(index_t{D1});
  }
};

template <long long D>
struct unsqueeze_op {
  static constexpr std::string_view target = aten::unsqueeze::target;
  static constexpr std::string_view schema = aten::unsqueeze::schema;
  template <class X>
  static constexpr auto result(const X& x) {
    const auto s = unsqueeze_shape<D>(x.shape, op_name<"unsqueeze">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{D});
  }
};

// Removes dim D, which must be 1 (aten.squeeze.dim; see squeeze_shape for why a dim that is not 1
// is an error rather than PyTorch's silent no-op).
template <long long D>
struct squeeze_op {
  static constexpr std::string_view target = aten::squeeze_dim::target;
  static constexpr std::string_view schema = aten::squeeze_dim::schema;
  template <class X>
  static constexpr auto result(const X& x) {
    const auto s = squeeze_shape<D>(x.shape, op_name<"squeeze">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{D});
  }
};

// x repeated along its dims of extent 1 (and new leading dims) to the target sizes.
template <class... T>
struct expand_op {
  static constexpr std::string_view target = aten::expand::target;
  static constexpr std::string_view schema = aten::expand::schema;
  reshape_target<T...> to;
  template <class X>
  constexpr auto result(const X& x) const {
    const auto s = expand_shape(x.shape, to.dims, op_name<"expand">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(sizes_attribute<decltype(to.dims)>{to.dims, -1});
  }
};

// x's slice at `index` along Dim, that dim removed (negative index from the end, as Python).
template <long long Dim>
struct select_op {
  static constexpr std::string_view target = aten::select_int::target;
  static constexpr std::string_view schema = aten::select_int::schema;
  index_t index = 0;
  template <class X>
  constexpr auto result(const X& x) const {
    constexpr long long rank = X::shape_type::rank;
    constexpr std::size_t at = detail::checked_dim<"select", Dim, rank>();
    const index_t n = x.shape.template get<at>().get();
    if (index < -n || index >= n) {
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::select: index "); w.put_int(index); w.put(" is out of range for dim "); w.put_int(static_cast<long long>(at));
        w.put(" of extent "); w.put_int(n);
      });
    }
    const auto s = detail::join(detail::take<0, at>(x.shape), detail::take<at + 1, rank - at - 1>(x.shape));
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
    v(index);
  }
};

// reshape(x, reshape_to(sizes...)): each size a dim value (fix<4>{}, 4_c, a symbolic dim's value)
// or typex::infer; the node records the caller's source line. reshape(x, sizes...) is the same
// without a source location (a default argument cannot follow a parameter pack).
// x[start:end:step] along Dim (Python's bounds: negative from the end, clamped).
template <long long Dim, index_t Start, index_t End, index_t Step>
struct slice_op {
  static constexpr std::string_view target = aten::slice_Tensor::target;
  static constexpr std::string_view schema = aten::slice_Tensor::schema;
  template <class X>
  static constexpr auto result(const X& x) {
    const auto s = slice_shape<Dim, Start, End, Step>(x.shape, op_name<"slice">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
    v(index_t{Start});
    v(index_t{End});
    v(index_t{Step});
  }
};

template <long long Dim, index_t Start = 0, index_t End = int_oo, index_t Step = 1, tensor_like X>
auto slice(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(slice_op<Dim, Start, End, Step>{}, &loc, x);
}

// x[start:end] along Dim with bounds that are dims (aten.slice.Tensor with SymInt bounds):
// slice<1>(x, 0_c, seq) keeps the first seq rows; the result's dim is end - start.
template <long long Dim, class B, class E>
struct slice_dims_op {
  static constexpr std::string_view target = aten::slice_Tensor::target;
  static constexpr std::string_view schema = aten::slice_Tensor::schema;
  B start;
  E end;
  template <class X>
  constexpr auto result(const X& x) const {
    const auto s = slice_shape<Dim>(x.shape, start, end, op_name<"slice">);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
    v(size_attribute<B>{start});
    v(size_attribute<E>{end});
    v(index_t{1});
  }
};

template <long long Dim, tensor_like X, dim B, dim E>
auto slice(const X& x, const B& start, const E& end, const std::source_location& loc = std::source_location::current()) {
  return apply_op(slice_dims_op<Dim, B, E>{start, end}, &loc, x);
}

template <tensor_like X, class... T>
auto reshape(const X& x, const reshape_target<T...>& to, const std::source_location& loc = std::source_location::current()) {
  return apply_op(reshape_op<T...>{{to}}, &loc, x);
}
template <tensor_like X, class... T>
  requires(sizeof...(T) > 0 && (!detail::is_reshape_target<T>::value && ...))
auto reshape(const X& x, const T&... to) {
  return apply_op(reshape_op<T...>{{reshape_to(to...)}}, nullptr, x);
}
template <tensor_like X, class... T>
auto view(const X& x, const reshape_target<T...>& to, const std::source_location& loc = std::source_location::current()) {
  return apply_op(view_op<T...>{{to}}, &loc, x);
}
template <tensor_like X, class... T>
  requires(sizeof...(T) > 0 && (!detail::is_reshape_target<T>::value && ...))
auto view(const X& x, const T&... to) {
  return apply_op(view_op<T...>{{reshape_to(to...)}}, nullptr, x);
}

template <long long Start = 0, long long End = -1, tensor_like X>
auto flatten(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(flatten_op<Start, End>{}, &loc, x);
}
template <long long... P, tensor_like X>
auto permute(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(permute_op<P...>{}, &loc, x);
}
template <long long D0, long long D1, tensor_like X>
auto transpose(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(transpose_op<D0, D1>{}, &loc, x);
}
template <long long D, tensor_like X>
auto unsqueeze(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(unsqueeze_op<D>{}, &loc, x);
}

template <long long D, tensor_like X>
auto squeeze(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(squeeze_op<D>{}, &loc, x);
}
template <tensor_like X, class... T>
auto expand(const X& x, const reshape_target<T...>& to, const std::source_location& loc = std::source_location::current()) {
  static_assert(!(std::same_as<T, infer_dim> || ...),
                "typex::expand: give every target size (PyTorch's -1, keep this dim, is written as the dim's value: x.shape().get<K>())");
  return apply_op(expand_op<T...>{{to}}, &loc, x);
}
template <long long Dim, tensor_like X>
auto select(const X& x, index_t index, const std::source_location& loc = std::source_location::current()) {
  return apply_op(select_op<Dim>{.index = index}, &loc, x);
}

namespace detail {
template <fixed_string Op, class X, class S>
constexpr void check_scatter_dtypes() {
  static_assert(std::is_same_v<typename X::dtype_type, typename S::dtype_type>,
                "typex::select_scatter / slice_scatter: the source must have the destination's dtype (convert it with typex::to<...>)");
}
}  // namespace detail

// x with src written at `index` along Dim (torch.select_scatter): src has x's shape without Dim.
// An in-place write through a select, functionally: copy_(x, select_scatter<0>(x, row, 2)).
template <long long Dim>
struct select_scatter_op {
  static constexpr std::string_view target = aten::select_scatter::target;
  static constexpr std::string_view schema = aten::select_scatter::schema;
  index_t index = 0;
  template <class X, class S>
  constexpr auto result(const X& x, const S& src) const {
    detail::check_scatter_dtypes<"select_scatter", X, S>();
    scatter_source_shape<"select_scatter">(src.shape, select_op<Dim>{index}.result(x).shape);
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
    v(index);
  }
};
template <long long Dim, tensor_like X, tensor_like S>
auto select_scatter(const X& x, const S& src, index_t index, const std::source_location& loc = std::source_location::current()) {
  return apply_op(select_scatter_op<Dim>{.index = index}, &loc, x, src);
}

// x with src written into x[Start:End:Step] along Dim (torch.slice_scatter): src has that slice's
// shape. With bounds that are dims, slice_scatter<Dim>(x, src, start, end) (step 1).
template <long long Dim, index_t Start, index_t End, index_t Step>
struct slice_scatter_op {
  static constexpr std::string_view target = aten::slice_scatter::target;
  static constexpr std::string_view schema = aten::slice_scatter::schema;
  template <class X, class S>
  static constexpr auto result(const X& x, const S& src) {
    detail::check_scatter_dtypes<"slice_scatter", X, S>();
    scatter_source_shape<"slice_scatter">(src.shape, slice_op<Dim, Start, End, Step>::result(x).shape);
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
    v(index_t{Start});
    v(index_t{End});
    v(index_t{Step});
  }
};
template <long long Dim, class B, class E>
struct slice_scatter_dims_op {
  static constexpr std::string_view target = aten::slice_scatter::target;
  static constexpr std::string_view schema = aten::slice_scatter::schema;
  B start;
  E end;
  template <class X, class S>
  constexpr auto result(const X& x, const S& src) const {
    detail::check_scatter_dtypes<"slice_scatter", X, S>();
    scatter_source_shape<"slice_scatter">(src.shape, slice_dims_op<Dim, B, E>{start, end}.result(x).shape);
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
    v(size_attribute<B>{start});
    v(size_attribute<E>{end});
    v(index_t{1});
  }
};
template <long long Dim, index_t Start = 0, index_t End = int_oo, index_t Step = 1, tensor_like X, tensor_like S>
auto slice_scatter(const X& x, const S& src, const std::source_location& loc = std::source_location::current()) {
  return apply_op(slice_scatter_op<Dim, Start, End, Step>{}, &loc, x, src);
}
template <long long Dim, tensor_like X, tensor_like S, dim B, dim E>
auto slice_scatter(const X& x, const S& src, const B& start, const E& end, const std::source_location& loc = std::source_location::current()) {
  return apply_op(slice_scatter_dims_op<Dim, B, E>{start, end}, &loc, x, src);
}

// This header's ops, for the registry (ops/all.hpp).
using shape_ops = op_list<aten::reshape, aten::view, aten::flatten_using_ints, aten::unsqueeze, aten::permute,
                         aten::transpose_int, aten::slice_Tensor, aten::select_int, aten::squeeze_dim, aten::expand,
                         aten::select_scatter, aten::slice_scatter>;

}  // namespace typex
