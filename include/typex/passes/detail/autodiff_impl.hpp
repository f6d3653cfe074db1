// typex/passes/detail/autodiff_impl.hpp — the definitions of passes/autodiff.hpp (compiled once in
// typex::runtime, or inline in header-only builds). Included by autodiff.hpp only.
#pragma once

#include <typex/ir/control_flow.hpp>
#include <typex/passes/autodiff.hpp>

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace typex::passes::detail {

// One forward value: (node, output index).
inline std::optional<value_ref>& grad_slot(std::vector<std::vector<std::optional<value_ref>>>& grads, value_ref r) {
  auto& per_node = grads[r.node];
  if (per_node.size() <= r.index) per_node.resize(r.index + 1);
  return per_node[r.index];
}

struct derivative_entry {
  derivative_kind kind = derivative_kind::missing;
  vjp_fn fn = nullptr;
};

template <class... Ops>
std::unordered_map<op_id, derivative_entry> make_derivative_table(op_list<Ops...>) {
  std::unordered_map<op_id, derivative_entry> t;
  auto one = [&]<class Op>(std::type_identity<Op>) {
    derivative_entry e{derivative_of<Op>(), nullptr};
    if constexpr (derivative_of<Op>() == derivative_kind::defined) e.fn = [](vjp_context& c) { Op::vjp(c); };
    t.emplace(op_id_of<Op>, e);
  };
  (one(std::type_identity<Ops>{}), ...);
  return t;
}

inline const std::unordered_map<op_id, derivative_entry>& derivative_table() {
  static const auto t = make_derivative_table(builtin_ops{});
  return t;
}

// The derivatives users registered (register_derivative<Op>).
struct user_derivative_table {
  std::mutex mutex;
  std::unordered_map<op_id, derivative_entry> entries;
};
inline user_derivative_table& user_derivatives() {
  static user_derivative_table t;
  return t;
}

// Op `id`'s derivative: the registry's, else a registered one; kind missing when neither knows it.
inline derivative_entry find_derivative(op_id id) {
  const auto& t = derivative_table();
  if (const auto it = t.find(id); it != t.end()) return it->second;
  auto& u = user_derivatives();
  const std::lock_guard lock(u.mutex);
  const auto it = u.entries.find(id);
  return it == u.entries.end() ? derivative_entry{} : it->second;
}

inline bool is_constant_one(const ir::sym_expr& e) { return e.is_constant() && *e.value() == 1; }

}  // namespace typex::passes::detail

namespace typex::passes {

// ---- graph_builder -------------------------------------------------------------------------

TYPEX_API auto graph_builder::size(value_ref v, std::int64_t d) const -> ir::sym_expr {
  return shape(v)[wrap(d, rank(v))];
}

TYPEX_API auto graph_builder::emit(op_id op, std::vector<ir::argument> args, ir::tensor_meta meta) -> value_ref {
  const ir::node_id id = g_->add_call({.target = op, .args = std::move(args), .vals = {std::move(meta)},
                                       .nn_module_stack = stack_, .stack_trace = trace_});
  return value_ref{id, 0};
}

TYPEX_API auto graph_builder::emit(op_id op, std::vector<ir::argument> args) -> value_ref {
  std::vector<ir::tensor_meta> vals = ir::infer_meta(*g_, op, args);
  if (vals.size() != 1) {
    typex::detail::raise<ir::graph_error>([&](auto& w) {
      w.put("typex::passes::graph_builder::emit: "); w.put(op.name()); w.put(" gives "); w.put_int(static_cast<long long>(vals.size()));
      w.put(" results; emit takes one");
    });
  }
  const ir::node_id id = g_->add_call({.target = op, .args = std::move(args), .vals = std::move(vals),
                                       .nn_module_stack = stack_, .stack_trace = trace_});
  return value_ref{id, 0};
}

TYPEX_API auto graph_builder::broadcast(const std::vector<ir::sym_expr>& a, const std::vector<ir::sym_expr>& b)
    -> std::vector<ir::sym_expr> {
  const std::size_t n = std::max(a.size(), b.size());
  std::vector<ir::sym_expr> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool has_a = i < a.size(), has_b = i < b.size();
    const ir::sym_expr* x = has_a ? &a[a.size() - 1 - i] : nullptr;
    const ir::sym_expr* y = has_b ? &b[b.size() - 1 - i] : nullptr;
    ir::sym_expr& o = out[n - 1 - i];
    if (!x) o = *y;
    else if (!y) o = *x;
    else if (detail::is_constant_one(*x)) o = *y;
    else if (detail::is_constant_one(*y) || *x == *y) o = *x;
    else o = y->is_constant() ? *y : *x;  // (equal in every run the forward allows: the constant says more)
  }
  return out;
}

TYPEX_API auto graph_builder::pointwise(op_id op, value_ref a, value_ref b) -> value_ref { return emit(op, {a, b}); }

TYPEX_API auto graph_builder::pointwise(op_id op, value_ref a, double b) -> value_ref { return emit(op, {a, b}); }

TYPEX_API auto graph_builder::add(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<add_op>, a, b); }
TYPEX_API auto graph_builder::add(value_ref a, double b) -> value_ref { return pointwise(op_id_of<add_op>, a, b); }
TYPEX_API auto graph_builder::sub(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<sub_op>, a, b); }
TYPEX_API auto graph_builder::sub(value_ref a, double b) -> value_ref { return pointwise(op_id_of<sub_op>, a, b); }
TYPEX_API auto graph_builder::mul(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<mul_op>, a, b); }
TYPEX_API auto graph_builder::mul(value_ref a, double b) -> value_ref { return pointwise(op_id_of<mul_op>, a, b); }
TYPEX_API auto graph_builder::div(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<div_op>, a, b); }
TYPEX_API auto graph_builder::div(value_ref a, double b) -> value_ref { return pointwise(op_id_of<div_op>, a, b); }
TYPEX_API auto graph_builder::pow(value_ref a, double e) -> value_ref { return pointwise(op_id_of<pow_scalar_op>, a, e); }
TYPEX_API auto graph_builder::pow(value_ref a, value_ref e) -> value_ref { return pointwise(op_id_of<pow_op>, a, e); }
TYPEX_API auto graph_builder::neg(value_ref a) -> value_ref { return unary(op_id_of<neg_op>, a); }
TYPEX_API auto graph_builder::exp(value_ref a) -> value_ref { return unary(op_id_of<exp_op>, a); }
TYPEX_API auto graph_builder::log(value_ref a) -> value_ref { return unary(op_id_of<log_op>, a); }
TYPEX_API auto graph_builder::sqrt(value_ref a) -> value_ref { return unary(op_id_of<sqrt_op>, a); }
TYPEX_API auto graph_builder::rsqrt(value_ref a) -> value_ref { return unary(op_id_of<rsqrt_op>, a); }
TYPEX_API auto graph_builder::tanh(value_ref a) -> value_ref { return unary(op_id_of<tanh_op>, a); }
TYPEX_API auto graph_builder::sigmoid(value_ref a) -> value_ref { return unary(op_id_of<sigmoid_op>, a); }
TYPEX_API auto graph_builder::reciprocal(value_ref a) -> value_ref { return unary(op_id_of<reciprocal_op>, a); }
TYPEX_API auto graph_builder::sin(value_ref a) -> value_ref { return unary(op_id_of<sin_op>, a); }
TYPEX_API auto graph_builder::cos(value_ref a) -> value_ref { return unary(op_id_of<cos_op>, a); }
TYPEX_API auto graph_builder::erf(value_ref a) -> value_ref { return unary(op_id_of<erf_op>, a); }
TYPEX_API auto graph_builder::abs(value_ref a) -> value_ref { return unary(op_id_of<abs_op>, a); }

TYPEX_API auto graph_builder::gt(value_ref a, double b) -> value_ref { return pointwise(op_id_of<gt_op>, a, b); }
TYPEX_API auto graph_builder::lt(value_ref a, double b) -> value_ref { return pointwise(op_id_of<lt_op>, a, b); }
TYPEX_API auto graph_builder::ge(value_ref a, double b) -> value_ref { return pointwise(op_id_of<ge_op>, a, b); }
TYPEX_API auto graph_builder::le(value_ref a, double b) -> value_ref { return pointwise(op_id_of<le_op>, a, b); }
TYPEX_API auto graph_builder::ne(value_ref a, double b) -> value_ref { return pointwise(op_id_of<ne_op>, a, b); }
TYPEX_API auto graph_builder::eq(value_ref a, double b) -> value_ref { return pointwise(op_id_of<eq_op>, a, b); }
TYPEX_API auto graph_builder::gt(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<gt_op>, a, b); }
TYPEX_API auto graph_builder::lt(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<lt_op>, a, b); }
TYPEX_API auto graph_builder::ge(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<ge_op>, a, b); }
TYPEX_API auto graph_builder::le(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<le_op>, a, b); }
TYPEX_API auto graph_builder::eq(value_ref a, value_ref b) -> value_ref { return pointwise(op_id_of<eq_op>, a, b); }
TYPEX_API auto graph_builder::logical_not(value_ref a) -> value_ref { return emit(op_id_of<logical_not_op>, {a}); }
TYPEX_API auto graph_builder::logical_or(value_ref a, value_ref b) -> value_ref {
  return pointwise(op_id_of<logical_or_op>, a, b);
}

TYPEX_API auto graph_builder::logical_and(value_ref a, value_ref b) -> value_ref {
  return pointwise(op_id_of<logical_and_op>, a, b);
}

TYPEX_API auto graph_builder::masked_fill(value_ref x, value_ref mask, double value) -> value_ref {
  return emit(op_id_of<masked_fill_op>, {x, mask, value});
}

TYPEX_API auto graph_builder::where(value_ref c, value_ref a, value_ref b) -> value_ref { return emit(op_id_of<where_op>, {c, a, b}); }

TYPEX_API auto graph_builder::sum(value_ref x, std::vector<std::int64_t> dims, bool keepdim) -> value_ref {
  if (dims.empty()) return x;  // (nothing to sum: torch's sum(x, []) would sum everything)
  return emit(op_id_of<aten::sum_dim_IntList>, {x, std::move(dims), keepdim});
}

TYPEX_API auto graph_builder::mean(value_ref x, std::vector<std::int64_t> dims, bool keepdim) -> value_ref {
  if (dims.empty()) return x;
  return emit(op_id_of<aten::mean_dim>, {x, std::move(dims), keepdim});
}

TYPEX_API auto graph_builder::sum_all(value_ref x) -> value_ref {
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < rank(x); ++i) dims.push_back(static_cast<std::int64_t>(i));
  return sum(x, std::move(dims));
}

TYPEX_API auto graph_builder::softmax(value_ref x, std::int64_t dim) -> value_ref {
  return emit(op_id_of<aten::softmax_int>, {x, dim});
}
TYPEX_API auto graph_builder::log_softmax(value_ref x, std::int64_t dim) -> value_ref {
  return emit(op_id_of<aten::log_softmax_int>, {x, dim});
}

TYPEX_API auto graph_builder::reshape(value_ref x, std::vector<ir::sym_expr> sizes) -> value_ref {
  if (sizes == shape(x)) return x;
  return emit(op_id_of<aten::reshape>, {x, std::move(sizes)});
}

TYPEX_API auto graph_builder::expand(value_ref x, std::vector<ir::sym_expr> sizes) -> value_ref {
  if (sizes == shape(x)) return x;
  return emit(op_id_of<aten::expand>, {x, std::move(sizes)});
}

TYPEX_API auto graph_builder::permute(value_ref x, std::vector<std::int64_t> dims) -> value_ref {
  return emit(op_id_of<aten::permute>, {x, std::move(dims)});
}

TYPEX_API auto graph_builder::transpose(value_ref x, std::int64_t d0, std::int64_t d1) -> value_ref {
  return emit(op_id_of<aten::transpose_int>, {x, d0, d1});
}

TYPEX_API auto graph_builder::unsqueeze(value_ref x, std::int64_t d) -> value_ref { return emit(op_id_of<aten::unsqueeze>, {x, d}); }

TYPEX_API auto graph_builder::squeeze(value_ref x, std::int64_t d) -> value_ref { return emit(op_id_of<aten::squeeze_dim>, {x, d}); }

TYPEX_API auto graph_builder::cat(const std::vector<value_ref>& xs, std::int64_t dim) -> value_ref {
  if (xs.size() == 1) return xs.front();
  return emit(op_id_of<aten::cat>, {xs, dim});
}

TYPEX_API auto graph_builder::slice(value_ref x, std::int64_t dim, ir::sym_expr start, ir::sym_expr end) -> value_ref {
  return emit(op_id_of<aten::slice_Tensor>, {x, dim, std::move(start), std::move(end), std::int64_t{1}});
}

TYPEX_API auto graph_builder::select(value_ref x, std::int64_t dim, ir::sym_expr index) -> value_ref {
  return emit(op_id_of<aten::select_int>, {x, dim, std::move(index)});
}

TYPEX_API auto graph_builder::triu(value_ref x, std::int64_t diagonal) -> value_ref {
  return emit(op_id_of<aten::triu>, {x, diagonal});
}
TYPEX_API auto graph_builder::tril(value_ref x, std::int64_t diagonal) -> value_ref {
  return emit(op_id_of<aten::tril>, {x, diagonal});
}

TYPEX_API auto graph_builder::index_select(value_ref x, std::int64_t dim, value_ref index) -> value_ref {
  return emit(op_id_of<aten::index_select>, {x, dim, index});
}

TYPEX_API auto graph_builder::flip(value_ref x, std::int64_t dim) -> value_ref {
  const ir::sym_expr n = size(x, dim);
  if (!n.is_constant())
    typex::detail::raise_message<unsupported_error>("typex::passes::graph_builder::flip: the extent is symbolic");
  if (*n.value() <= 1) return x;
  return index_select(x, dim, arange(*n.value() - 1, -1, -1));
}

TYPEX_API auto graph_builder::spread(value_ref x, std::int64_t dim, std::int64_t step) -> value_ref {
  if (step == 1) return x;
  const std::size_t d = wrap(dim, rank(x));
  const ir::sym_expr n = shape(x)[d];
  std::vector<ir::sym_expr> gaps = shape(x);
  gaps.insert(gaps.begin() + static_cast<std::ptrdiff_t>(d) + 1, ir::sym_expr(index_t{step - 1}));
  const auto wide = static_cast<std::int64_t>(d) + 1;
  const value_ref interleaved = cat({unsqueeze(x, wide), zeros(std::move(gaps), scalar_type(x))}, wide);
  std::vector<ir::sym_expr> flat = shape(x);
  flat[d] = n * ir::sym_expr(index_t{step});
  return slice(reshape(interleaved, std::move(flat)), static_cast<std::int64_t>(d), ir::sym_expr(index_t{0}),
               (n - ir::sym_expr(index_t{1})) * ir::sym_expr(index_t{step}) + ir::sym_expr(index_t{1}));
}

TYPEX_API auto graph_builder::conv2d(value_ref x, value_ref w, std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding,
                                     std::array<std::int64_t, 2> dilation, std::int64_t groups) -> value_ref {
  auto ints = [](std::array<std::int64_t, 2> a) { return std::vector<std::int64_t>(a.begin(), a.end()); };
  return emit(op_id_of<aten::conv2d>, {x, w, ir::none_t{}, ints(stride), ints(padding), ints(dilation), groups});
}

TYPEX_API auto graph_builder::mm(value_ref a, value_ref b) -> value_ref { return emit(op_id_of<aten::mm>, {a, b}); }

TYPEX_API auto graph_builder::bmm(value_ref a, value_ref b) -> value_ref { return emit(op_id_of<aten::bmm>, {a, b}); }

TYPEX_API auto graph_builder::matmul(value_ref a, value_ref b) -> value_ref {
  if (rank(a) < 2 || rank(b) < 2)
    typex::detail::raise_message<unsupported_error>("typex::passes::graph_builder::matmul: both operands need rank >= 2 (unsqueeze vectors)");
  return emit(op_id_of<matmul_op>, {a, b});
}

TYPEX_API auto graph_builder::to(value_ref x, dtype d) -> value_ref {
  if (scalar_type(x) == d) return x;
  return emit(op_id_of<aten::_to_copy>, {x, d});
}

TYPEX_API auto graph_builder::zeros_like(value_ref x) -> value_ref { return emit(op_id_of<aten::zeros_like>, {x}); }
TYPEX_API auto graph_builder::full_like(value_ref x, double v) -> value_ref { return emit(op_id_of<aten::full_like>, {x, v}); }
TYPEX_API auto graph_builder::zeros(std::vector<ir::sym_expr> sizes, dtype d) -> value_ref {
  return emit(op_id_of<aten::zeros>, {std::move(sizes), d});
}
TYPEX_API auto graph_builder::full(std::vector<ir::sym_expr> sizes, double v, dtype d) -> value_ref {
  return emit(op_id_of<aten::full>, {std::move(sizes), v, d});
}
TYPEX_API auto graph_builder::arange(ir::sym_expr end, dtype d) -> value_ref {
  ir::argument e = end.is_constant() ? ir::argument(std::int64_t{*end.value()}) : ir::argument(std::move(end));
  return emit(op_id_of<aten::arange>, {std::move(e), d});
}

TYPEX_API auto graph_builder::arange(std::int64_t start, std::int64_t end, std::int64_t step, dtype d) -> value_ref {
  return emit(op_id_of<aten::arange_start_step>, {start, end, step, d});
}

TYPEX_API auto graph_builder::sum_to(value_ref g, ir::tensor_meta target) -> value_ref {  // (by value: meta()'s
  // references do not survive the nodes added here)
  const std::vector<ir::sym_expr> sg = shape(g);
  const std::vector<ir::sym_expr>& st = target.shape;
  if (sg.size() < st.size())  // (a derivative gave fewer dims than the input: expand it)
    return to(expand(g, st), target.scalar_type);
  const std::size_t lead = sg.size() - st.size();
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < lead; ++i) dims.push_back(static_cast<std::int64_t>(i));
  for (std::size_t i = 0; i < st.size(); ++i)
    if (detail::is_constant_one(st[i]) && !detail::is_constant_one(sg[lead + i])) dims.push_back(static_cast<std::int64_t>(lead + i));
  value_ref r = g;
  if (!dims.empty()) r = reshape(sum(g, std::move(dims), true), st);
  return to(r, target.scalar_type);
}

TYPEX_API auto graph_builder::expand_reduced(value_ref g, std::vector<ir::sym_expr> shape, std::vector<std::int64_t> dims,
                                            bool keepdim) -> value_ref {
  for (auto& d : dims) d = static_cast<std::int64_t>(wrap(d, shape.size()));
  std::sort(dims.begin(), dims.end());
  value_ref r = g;
  if (!keepdim)
    for (std::int64_t d : dims) r = unsqueeze(r, d);
  return expand(r, std::move(shape));
}

TYPEX_API auto graph_builder::divide_by_count(value_ref v, std::vector<ir::sym_expr> shape, const std::vector<std::int64_t>& dims)
    -> value_ref {
  index_t n = 1;
  std::vector<ir::sym_expr> symbolic;
  for (std::int64_t d : dims) {
    const ir::sym_expr& e = shape[wrap(d, shape.size())];
    if (e.is_constant()) n *= *e.value();
    else symbolic.push_back(e);
  }
  if (symbolic.empty()) return mul(v, 1.0 / static_cast<double>(n));
  // (the count as a tensor: the sum of ones over the symbolic extents, times the static ones)
  value_ref count = sum_all(full(std::move(symbolic), static_cast<double>(n), scalar_type(v)));
  return div(v, count);
}

TYPEX_API auto graph_builder::pad_along(value_ref g, std::size_t dim, ir::sym_expr before, ir::sym_expr after) -> value_ref {
  std::vector<value_ref> pieces;
  const auto zeros_of = [&](ir::sym_expr extent) {
    std::vector<ir::sym_expr> s = shape(g);
    s[dim] = std::move(extent);
    return zeros(std::move(s), scalar_type(g));
  };
  const auto empty = [](const ir::sym_expr& e) { return e.is_constant() && *e.value() == 0; };
  if (!empty(before)) pieces.push_back(zeros_of(std::move(before)));
  pieces.push_back(g);
  if (!empty(after)) pieces.push_back(zeros_of(std::move(after)));
  return cat(pieces, static_cast<std::int64_t>(dim));
}

TYPEX_API auto graph_builder::normalized(value_ref x, const std::vector<std::int64_t>& dims, double eps) -> std::pair<value_ref, value_ref> {
  const value_ref centered = sub(x, mean(x, dims, true));
  const value_ref rstd = rsqrt(add(mean(mul(centered, centered), dims, true), eps));
  return {mul(centered, rstd), rstd};
}

TYPEX_API auto graph_builder::normalize_backward(value_ref dxhat, value_ref xhat, value_ref rstd, const std::vector<std::int64_t>& dims)
    -> value_ref {
  const value_ref a = sub(dxhat, mean(dxhat, dims, true));
  return mul(rstd, sub(a, mul(xhat, mean(mul(dxhat, xhat), dims, true))));
}

TYPEX_API auto graph_builder::along_channels(value_ref v, std::size_t rank) -> value_ref {
  std::vector<ir::sym_expr> s(rank, ir::sym_expr(index_t{1}));
  s[1] = shape(v)[0];
  return reshape(v, std::move(s));
}

// ---- node_context, vjp_context --------------------------------------------------------------------------

TYPEX_API auto node_context::arg_value(ir::arg_name name, std::size_t k) const -> std::optional<value_ref> {
  const std::size_t i = args_->index(name);
  if (i >= node_->args.size()) return std::nullopt;
  const ir::argument& a = node_->args[i];
  if (const auto* r = std::get_if<value_ref>(&a)) return *r;
  if (const auto* rs = std::get_if<std::vector<value_ref>>(&a))
    if (k < rs->size()) return (*rs)[k];
  return std::nullopt;
}

TYPEX_API auto node_context::is_tensor(ir::arg_name name) const -> bool { return arg_value(name, 0).has_value(); }

TYPEX_API auto node_context::input(ir::arg_name name) const -> value_ref {
  const auto v = arg_value(name, 0);
  if (!v) args_->fail_text(name, "is not a tensor (its derivative reads it as one)");
  return *v;
}

TYPEX_API auto node_context::inputs(ir::arg_name name) const -> std::vector<value_ref> {
  const std::size_t i = args_->index(name);
  if (i < node_->args.size())
    if (const auto* rs = std::get_if<std::vector<value_ref>>(&node_->args[i])) return *rs;
  args_->fail_text(name, "is not a list of tensors");
}

TYPEX_API auto node_context::sym(ir::arg_name name) const -> ir::sym_expr {
  const std::size_t i = args_->index(name);
  if (i < node_->args.size()) {
    if (const auto* e = std::get_if<ir::sym_expr>(&node_->args[i])) return *e;
    if (const auto* v = std::get_if<std::int64_t>(&node_->args[i])) return ir::sym_expr(index_t{*v});
  }
  args_->fail_text(name, "is not an integer");
}

TYPEX_API auto node_context::sizes(ir::arg_name name) const -> std::vector<ir::sym_expr> {
  const std::size_t i = args_->index(name);
  if (i < node_->args.size()) {
    if (const auto* e = std::get_if<std::vector<ir::sym_expr>>(&node_->args[i])) return *e;
    if (const auto* v = std::get_if<std::vector<std::int64_t>>(&node_->args[i])) {
      std::vector<ir::sym_expr> out;
      for (std::int64_t x : *v) out.emplace_back(index_t{x});
      return out;
    }
  }
  args_->fail_text(name, "is not a list of sizes");
}

TYPEX_API auto node_context::reduced_dims(ir::arg_name name, std::size_t rank) const -> std::vector<std::int64_t> {
  std::vector<std::int64_t> dims;
  const std::size_t i = args_->index(name);
  if (args_->has(i)) dims = args_->ints(i);
  if (dims.empty()) return all_dims_but(rank, -1);
  for (auto& d : dims) d = static_cast<std::int64_t>(wrap(d, rank));
  return dims;
}

TYPEX_API auto vjp_context::grad(std::uint32_t k) -> value_ref {
  std::optional<value_ref>& s = detail::grad_slot(*grads_, value_ref{id_, k});
  if (!s) s = zeros_like(result(k));
  return *s;
}

TYPEX_API auto vjp_context::wants(ir::arg_name name, std::size_t k) const -> bool {
  const auto v = arg_value(name, k);
  return v && (*wanted_)[v->node] && is_floating_point(meta(*v).scalar_type);
}

TYPEX_API auto vjp_context::accumulate(ir::arg_name name, value_ref g, std::size_t k) -> void {
  const auto v = arg_value(name, k);
  if (!v || !(*wanted_)[v->node] || !is_floating_point(meta(*v).scalar_type)) return;
  const value_ref fitted = sum_to(g, meta(*v));
  std::optional<value_ref>& s = detail::grad_slot(*grads_, *v);
  s = s ? add(*s, fitted) : fitted;
}

TYPEX_API auto node_context::unsupported(std::string_view why) const -> void {
  typex::detail::raise<unsupported_error>([&](auto& w) {
    w.put(who()); w.put(": "); w.put(node_->target.name()); w.put(" (node '"); w.put(node_->name); w.put('\'');
    if (!node_->stack_trace.empty()) { w.put(", at "); w.put(node_->stack_trace); }
    w.put(") "); w.put(lacks_); w.put(" here: "); w.put(why);
  });
}

// ---- the pass -------------------------------------------------------------------------------

TYPEX_API auto detail::add_user_derivative(op_id id, derivative_kind kind, vjp_fn fn) -> void {
  auto& u = user_derivatives();
  const std::lock_guard lock(u.mutex);
  u.entries[id] = derivative_entry{kind, fn};
}

TYPEX_API auto derivative_kind_of(op_id id) -> derivative_kind { return detail::find_derivative(id).kind; }

namespace detail {
using grad_table = std::vector<std::vector<std::optional<value_ref>>>;

// Copies forward's nodes (all but the output) into g, same ids and names.
inline void copy_forward(const ir::graph& forward, ir::graph& g) {
  const std::size_t n = forward.size() - 1;  // (the output node last)
  for (ir::node_id i = 0; i < n; ++i) {
    const ir::node& f = forward[i];
    if (f.op == ir::node_op::placeholder) {
      g.add_placeholder(f.name, f.vals.front());
    } else {
      g.add_call({.target = f.target, .args = f.args, .kwargs = f.kwargs, .vals = f.vals, .name_hint = f.name,
                  .nn_module_stack = f.nn_module_stack, .stack_trace = f.stack_trace});
    }
  }
  g.copy_subgraphs_from(forward);
}

// wanted[i]: node i lies on a path from a placeholder in `wrt` (a floating-point value).
inline std::vector<bool> wanted_nodes(const ir::graph& forward, const std::vector<ir::node_id>& wrt) {
  const std::size_t n = forward.size() - 1;
  std::vector<bool> wanted(n, false);
  for (ir::node_id w : wrt) wanted[w] = is_floating_point(forward[w].vals.front().scalar_type);
  for (ir::node_id i = 0; i < n; ++i) {
    const ir::node& f = forward[i];
    if (f.op != ir::node_op::call_function || wanted[i]) continue;
    bool any = false;
    ir::graph::for_each_ref(f, [&](value_ref v) { any = any || wanted[v.node]; });
    bool floating = false;
    for (const auto& m : f.vals) floating = floating || is_floating_point(m.scalar_type);
    wanted[i] = any && floating && derivative_kind_of(f.target) != derivative_kind::not_differentiable;
  }
  return wanted;
}

inline void add_grad(vjp_context& c, grad_table& grads, value_ref at, value_ref g) {
  std::optional<value_ref>& slot = grad_slot(grads, at);
  slot = slot ? c.add(*slot, g) : g;
}

TYPEX_API void sweep(const ir::graph& forward, vjp_context& c, grad_table& grads, const std::vector<bool>& wanted,
                     const std::vector<bool>& reaches, std::size_t last);

// The backward of a whole graph as a graph: placeholders (its inputs..., one seed per output),
// outputs the gradients of the inputs with wrt[k] set (zeros where none flows). The forward is
// recomputed inside it (control flow's derivatives recompute their subgraphs' intermediates).
TYPEX_API ir::graph vjp_graph(const ir::graph& f, const std::vector<bool>& wrt) {
  static constexpr std::string_view who = "typex::passes::differentiate";
  (void)who;
  for (const ir::node& nd : f.nodes()) {
    // (the backward recomputes the subgraph's forward: a random draw there would differ from the forward's)
    if (nd.op == ir::node_op::call_function && ir::draws_randomness(nd.target, nd.args)) {
      typex::detail::raise<unsupported_error>([&](auto& w) {
        w.put(who); w.put(": "); w.put(nd.target.name()); w.put(" (node '"); w.put(nd.name);
        w.put("') draws random numbers inside a branch or loop body; its backward recomputes the body, which would draw other "
              "numbers: apply the dropout outside the control flow, or in eval mode");
      });
    }
  }
  ir::graph g;
  copy_forward(f, g);
  const std::size_t n = f.size() - 1;
  const auto placeholders = f.placeholders();
  std::vector<ir::node_id> wrt_ids;
  for (std::size_t k = 0; k < placeholders.size(); ++k)
    if (k < wrt.size() && wrt[k]) wrt_ids.push_back(placeholders[k]);
  const std::vector<bool> wanted = wanted_nodes(f, wrt_ids);
  std::vector<bool> reaches(n, false);
  grad_table grads(n);
  vjp_context c(g);
  std::vector<ir::node_id> seeds;
  const auto& outs = f.output().args;
  for (std::size_t j = 0; j < outs.size(); ++j) {
    const value_ref o = std::get<value_ref>(outs[j]);
    const ir::tensor_meta& m = f.meta(o);
    const ir::node_id seed = g.add_placeholder("tangents_" + std::to_string(j + 1), m);
    seeds.push_back(seed);
    if (!is_floating_point(m.scalar_type)) continue;  // (an integer result, a counter: no gradient flows from it)
    reaches[o.node] = true;
    add_grad(c, grads, o, value_ref{seed, 0});
  }
  for (std::size_t i = n; i-- > 0;)
    if (reaches[i]) ir::graph::for_each_ref(f[static_cast<ir::node_id>(i)], [&](value_ref v) { reaches[v.node] = true; });
  if (n > 0) sweep(f, c, grads, wanted, reaches, n - 1);
  std::vector<value_ref> result;
  for (ir::node_id w : wrt_ids) {
    std::optional<value_ref> gw = grads[w].empty() ? std::nullopt : grads[w].front();
    result.push_back(gw ? *gw : c.zeros_like(value_ref{w, 0}));
  }
  g.set_output(std::move(result));
  // (placeholders first: the inputs, then the seeds)
  std::vector<ir::node_id> order(placeholders.begin(), placeholders.end());
  order.insert(order.end(), seeds.begin(), seeds.end());
  std::vector<bool> placed(g.size(), false);
  for (ir::node_id p : order) placed[p] = true;
  for (ir::node_id i = 0; i < g.size(); ++i)
    if (!placed[i]) order.push_back(i);
  g.reorder(order);
  g.drop_unused_subgraphs();
  return g;
}

// g with its placeholders in the order `perm` (perm[k]: which placeholder comes k-th).
inline void permute_placeholders(ir::graph& g, const std::vector<std::size_t>& perm) {
  const auto ph = g.placeholders();
  std::vector<ir::node_id> order;
  for (std::size_t k : perm) order.push_back(ph.at(k));
  for (ir::node_id i = 0; i < g.size(); ++i)
    if (g[i].op != ir::node_op::placeholder) order.push_back(i);
  g.reorder(order);
}

// Copies `sub`'s calls into `into`, its placeholders fed by `inputs`; returns its outputs.
inline std::vector<value_ref> inline_graph(ir::graph& into, const ir::graph& sub, const std::vector<value_ref>& inputs) {
  std::vector<ir::node_id> remap(sub.size(), 0);
  std::vector<value_ref> ph_value(sub.size());
  std::size_t k = 0;
  const auto moved = [&](ir::argument a) {
    const auto fix = [&](value_ref r) { return sub[r.node].op == ir::node_op::placeholder ? ph_value[r.node] : value_ref{remap[r.node], r.index}; };
    if (auto* r = std::get_if<value_ref>(&a)) *r = fix(*r);
    else if (auto* rs = std::get_if<std::vector<value_ref>>(&a))
      for (value_ref& x : *rs) x = fix(x);
    return a;
  };
  std::vector<value_ref> outs;
  for (ir::node_id i = 0; i < sub.size(); ++i) {
    const ir::node& nd = sub[i];
    if (nd.op == ir::node_op::placeholder) {
      ph_value[i] = inputs.at(k++);
    } else if (nd.op == ir::node_op::output) {
      for (const ir::argument& a : nd.args) outs.push_back(std::get<value_ref>(moved(a)));
    } else {
      std::vector<ir::argument> args;
      for (const ir::argument& a : nd.args) args.push_back(moved(a));
      if (ir::is_control_flow(nd))  // (its subgraphs: renamed where `into` has the name for another body)
        for (ir::argument& a : args)
          if (auto* s = std::get_if<std::string>(&a)) *s = into.import_subgraph(sub, *s);
      std::vector<std::pair<std::string, ir::argument>> kwargs;
      for (const auto& [key, a] : nd.kwargs) kwargs.emplace_back(key, moved(a));
      remap[i] = into.add_call({.target = nd.target, .args = std::move(args), .kwargs = std::move(kwargs), .vals = nd.vals, .name_hint = nd.name,
                                .nn_module_stack = nd.nn_module_stack, .stack_trace = nd.stack_trace});
    }
  }
  return outs;
}

inline ir::node_id emit_control(vjp_context& c, const ir::control_call& call, std::vector<ir::tensor_meta> vals, std::string_view name,
                                const ir::node& origin) {
  const op_id target = ir::control_op(call.kind);
  const ir::node_id id = c.graph().add_call({.target = target, .args = ir::control_call_arguments(call), .vals = std::move(vals),
                                             .name_hint = std::string(name), .nn_module_stack = origin.nn_module_stack,
                                             .stack_trace = origin.stack_trace});
  ir::check_control_flow(c.graph(), c.graph()[id]);
  return id;
}

inline value_ref grad_or_zeros(vjp_context& c, grad_table& grads, value_ref v) {
  const auto& per = grads[v.node];
  if (v.index < per.size() && per[v.index]) return *per[v.index];
  return c.zeros_like(v);
}

// The gradients of a scan node's inputs: (init..., xs..., additional...), each a value or none.
// seeds: the gradients flowing into its outputs (carry..., ys...). Recomputes the forward once
// (a scan that also stacks each step's input carry), then runs the combine's backward as a
// reverse scan carrying the carry's gradient; the additional inputs' per-step gradients are
// stacked and summed.
TYPEX_API std::vector<std::optional<value_ref>> scan_vjp(vjp_context& c, const ir::node& f_in, const std::vector<value_ref>& seeds,
                                                          const std::vector<bool>& want_x, const std::vector<bool>& want_a) {
  const ir::node f = f_in;  // (a copy: f_in may be a node of the graph this adds to)
  const ir::graph& g0 = c.graph();
  const ir::control_call call = ir::read_control_call(f);
  const ir::graph& combine = g0.subgraph_at(call.graphs[0]);
  const std::size_t nc = call.carried.size(), nx = call.xs.size(), na = call.additional.size();
  const std::size_t ny = f.vals.size() - nc;
  // 1. the forward again, stacking each step's input carry
  ir::graph aug;
  {
    ir::graph copy;
    copy_forward(combine, copy);
    std::vector<value_ref> outs;
    for (const ir::argument& a : combine.output().args) outs.push_back(std::get<value_ref>(a));
    const auto ph = combine.placeholders();
    for (std::size_t k = 0; k < nc; ++k) outs.push_back({ph[k], 0});
    copy.set_output(std::move(outs));
    aug = std::move(copy);
  }
  ir::control_call fwd = call;
  fwd.graphs = {c.graph().add_subgraph(call.graphs[0] + "_steps", std::move(aug))};
  std::vector<ir::tensor_meta> fvals = f.vals;
  const ir::sym_expr lead = c.graph().meta(call.xs.front()).shape.front();
  for (std::size_t k = 0; k < nc; ++k) {
    ir::tensor_meta m = c.graph().meta(call.carried[k]);
    m.shape.insert(m.shape.begin(), lead);
    fvals.push_back(std::move(m));
  }
  const ir::node_id steps = emit_control(c, fwd, fvals, "scan_steps", f);
  // 2. the combine's backward: inputs (carry, x, additional, seeds (carry', y)) -> grads (carry, x, additional)
  std::vector<bool> wrt(nc + nx + na, true);
  for (std::size_t k = 0; k < nx; ++k) wrt[nc + k] = want_x[k];
  for (std::size_t k = 0; k < na; ++k) wrt[nc + nx + k] = want_a[k];
  ir::graph back = vjp_graph(combine, wrt);
  // placeholders as the reverse scan takes them: carry = the carry's grads (seeds 0..nc),
  // xs = (x..., carry_t..., gy...), additional
  std::vector<std::size_t> perm;
  const std::size_t seed0 = nc + nx + na;
  for (std::size_t k = 0; k < nc; ++k) perm.push_back(seed0 + k);
  for (std::size_t k = 0; k < nx; ++k) perm.push_back(nc + k);
  for (std::size_t k = 0; k < nc; ++k) perm.push_back(k);
  for (std::size_t k = 0; k < ny; ++k) perm.push_back(seed0 + nc + k);
  for (std::size_t k = 0; k < na; ++k) perm.push_back(nc + nx + k);
  permute_placeholders(back, perm);
  std::vector<ir::tensor_meta> back_outs = ir::output_metas(back);
  ir::control_call bwd;
  bwd.kind = ir::control_kind::scan;
  bwd.reverse = !call.reverse;
  for (std::size_t k = 0; k < nc; ++k) bwd.carried.push_back(seeds[k]);
  for (std::size_t k = 0; k < nx; ++k) bwd.xs.push_back(call.xs[k]);
  for (std::size_t k = 0; k < nc; ++k) bwd.xs.push_back({steps, static_cast<std::uint32_t>(nc + ny + k)});
  for (std::size_t k = 0; k < ny; ++k) bwd.xs.push_back(seeds[nc + k]);
  bwd.additional = call.additional;
  bwd.graphs = {c.graph().add_subgraph(call.graphs[0] + "_backward", std::move(back))};
  std::vector<ir::tensor_meta> bvals;
  for (std::size_t k = 0; k < back_outs.size(); ++k) {
    ir::tensor_meta m = back_outs[k];
    if (k >= nc) m.shape.insert(m.shape.begin(), lead);
    bvals.push_back(std::move(m));
  }
  const ir::node_id b = emit_control(c, bwd, bvals, "scan_backward", f);
  std::vector<std::optional<value_ref>> out(nc + nx + na);
  std::uint32_t k = 0;
  for (std::size_t j = 0; j < nc; ++j) out[j] = value_ref{b, k++};
  for (std::size_t j = 0; j < nx; ++j)
    if (want_x[j]) out[nc + j] = value_ref{b, k++};
  for (std::size_t j = 0; j < na; ++j)
    if (want_a[j]) out[nc + nx + j] = c.sum(value_ref{b, k++}, {0});
  return out;
}

// The derivative of one higher-order call (node i of forward), into grads.
TYPEX_API void control_flow_vjp(const ir::graph& forward, vjp_context& c, grad_table& grads, const std::vector<bool>& wanted, ir::node_id i) {
  const ir::node& f = forward[i];
  const ir::control_call call = ir::read_control_call(f);
  const auto want = [&](value_ref v) { return v.node < wanted.size() && wanted[v.node] && is_floating_point(forward.meta(v).scalar_type); };
  std::vector<value_ref> seeds;
  for (std::uint32_t k = 0; k < f.vals.size(); ++k) seeds.push_back(grad_or_zeros(c, grads, {i, k}));
  switch (call.kind) {
    case ir::control_kind::cond: {
      std::vector<bool> wrt;
      for (value_ref v : call.carried) wrt.push_back(want(v));
      ir::control_call b;
      b.kind = ir::control_kind::cond;
      b.pred = call.pred;
      b.carried = call.carried;
      b.carried.insert(b.carried.end(), seeds.begin(), seeds.end());
      ir::graph t = vjp_graph(forward.subgraph_at(call.graphs[0]), wrt);
      ir::graph e = vjp_graph(forward.subgraph_at(call.graphs[1]), wrt);
      std::vector<ir::tensor_meta> vals = ir::output_metas(t);
      if (vals.empty()) return;
      b.graphs = {c.graph().add_subgraph(call.graphs[0] + "_backward", std::move(t)), c.graph().add_subgraph(call.graphs[1] + "_backward", std::move(e))};
      const ir::node_id n = emit_control(c, b, std::move(vals), "cond_backward", f);
      std::uint32_t k = 0;
      for (std::size_t j = 0; j < call.carried.size(); ++j)
        if (wrt[j]) add_grad(c, grads, call.carried[j], value_ref{n, k++});
      return;
    }
    case ir::control_kind::map: {
      const std::size_t nx = call.xs.size(), na = call.additional.size();
      std::vector<bool> wrt;
      for (value_ref v : call.xs) wrt.push_back(want(v));
      for (value_ref v : call.additional) wrt.push_back(want(v));
      ir::graph back = vjp_graph(forward.subgraph_at(call.graphs[0]), wrt);
      if (back.output().args.empty()) return;
      // placeholders: (x slices..., y seeds..., additional...)
      std::vector<std::size_t> perm;
      for (std::size_t k = 0; k < nx; ++k) perm.push_back(k);
      for (std::size_t k = 0; k < f.vals.size(); ++k) perm.push_back(nx + na + k);
      for (std::size_t k = 0; k < na; ++k) perm.push_back(nx + k);
      permute_placeholders(back, perm);
      ir::control_call b;
      b.kind = ir::control_kind::map;
      b.xs = call.xs;
      b.xs.insert(b.xs.end(), seeds.begin(), seeds.end());
      b.additional = call.additional;
      std::vector<ir::tensor_meta> vals = ir::output_metas(back);
      const ir::sym_expr lead = forward.meta(call.xs.front()).shape.front();
      for (ir::tensor_meta& m : vals) m.shape.insert(m.shape.begin(), lead);
      b.graphs = {c.graph().add_subgraph(call.graphs[0] + "_backward", std::move(back))};
      const ir::node_id n = emit_control(c, b, std::move(vals), "map_backward", f);
      std::uint32_t k = 0;
      for (std::size_t j = 0; j < nx; ++j)
        if (wrt[j]) add_grad(c, grads, call.xs[j], value_ref{n, k++});
      for (std::size_t j = 0; j < na; ++j)
        if (wrt[nx + j]) add_grad(c, grads, call.additional[j], c.sum(value_ref{n, k++}, {0}));
      return;
    }
    case ir::control_kind::scan: {
      std::vector<bool> want_x, want_a;
      for (value_ref v : call.xs) want_x.push_back(want(v));
      for (value_ref v : call.additional) want_a.push_back(want(v));
      const auto g = scan_vjp(c, f, seeds, want_x, want_a);
      for (std::size_t j = 0; j < call.carried.size(); ++j)
        if (want(call.carried[j])) add_grad(c, grads, call.carried[j], *g[j]);
      for (std::size_t j = 0; j < call.xs.size(); ++j)
        if (g[call.carried.size() + j]) add_grad(c, grads, call.xs[j], *g[call.carried.size() + j]);
      for (std::size_t j = 0; j < call.additional.size(); ++j)
        if (const auto& ga = g[call.carried.size() + call.xs.size() + j]) add_grad(c, grads, call.additional[j], *ga);
      return;
    }
    case ir::control_kind::while_loop: {
      if (call.max_iterations < 0) {
        typex::detail::raise<unsupported_error>([&](auto& w) {
          w.put("typex::passes::differentiate: the while_loop '"); w.put(f.name);
          if (!f.stack_trace.empty()) { w.put("' (at "); w.put(f.stack_trace); w.put(')'); } else { w.put('\''); }
          w.put(" has no declared bound, and a loop's backward needs one (to keep each iteration's carried values): "
                "declare it, typex::while_loop(typex::max_iterations{N}, cond_fn, body_fn, carried...)");
        });
      }
      // as a scan of max_iterations steps: each step runs the body where the condition holds and
      // keeps the carried values where it does not (the forward's own node gave the results)
      const std::size_t nc = call.carried.size(), na = call.additional.size();
      if (call.max_iterations == 0) {  // (no step may run: the results are the carried values)
        for (std::size_t j = 0; j < nc; ++j)
          if (want(call.carried[j])) add_grad(c, grads, call.carried[j], seeds[j]);
        return;
      }
      const ir::graph& cg = forward.subgraph_at(call.graphs[0]);
      const ir::graph& bg = forward.subgraph_at(call.graphs[1]);
      ir::graph step;
      std::vector<value_ref> ins;
      for (std::size_t k = 0; k < nc; ++k) ins.push_back({step.add_placeholder("carried_" + std::to_string(k), forward.meta(call.carried[k])), 0});
      step.add_placeholder("step", ir::tensor_meta{dtype::f32, {}});
      for (std::size_t k = 0; k < na; ++k) ins.push_back({step.add_placeholder("additional_" + std::to_string(k), forward.meta(call.additional[k])), 0});
      value_ref p = inline_graph(step, cg, ins).front();
      graph_builder sb(step);
      if (step.meta(p).rank() != 0) p = sb.reshape(p, {});  // (a [1] predicate would broadcast a rank-0 carry)
      const std::vector<value_ref> next = inline_graph(step, bg, ins);
      std::vector<value_ref> outs;
      for (std::size_t k = 0; k < nc; ++k) outs.push_back(sb.where(p, next[k], ins[k]));
      step.set_output(std::move(outs));
      ir::control_call sc;
      sc.kind = ir::control_kind::scan;
      sc.carried = call.carried;
      sc.xs = {c.full({ir::sym_expr(call.max_iterations)}, 0.0, dtype::f32)};
      sc.additional = call.additional;
      sc.graphs = {c.graph().add_subgraph(call.graphs[1] + "_bounded", std::move(step))};
      const ir::node_id s = emit_control(c, sc, ir::value_metas(c.graph(), call.carried), "while_loop_bounded", f);
      std::vector<bool> want_a;
      for (value_ref v : call.additional) want_a.push_back(want(v));
      const auto g = scan_vjp(c, c.graph()[s], seeds, {false}, want_a);
      for (std::size_t j = 0; j < nc; ++j)
        if (want(call.carried[j])) add_grad(c, grads, call.carried[j], *g[j]);
      for (std::size_t j = 0; j < na; ++j)
        if (const auto& ga = g[nc + 1 + j]) add_grad(c, grads, call.additional[j], *ga);
      return;
    }
    case ir::control_kind::none: return;
  }
}

// Walks the forward nodes from `last` down to the first, adding each wanted node's derivative.
TYPEX_API void sweep(const ir::graph& forward, vjp_context& c, grad_table& grads, const std::vector<bool>& wanted,
                     const std::vector<bool>& reaches, std::size_t last) {
  static constexpr std::string_view who = "typex::passes::differentiate";
  (void)who;
  for (std::size_t i = last + 1; i-- > 0;) {
    const ir::node& f = forward[static_cast<ir::node_id>(i)];
    if (f.op != ir::node_op::call_function || !wanted[i] || !reaches[i]) continue;
    bool flows = false;
    for (const auto& s : grads[i]) flows = flows || s.has_value();
    if (!flows) continue;
    if (ir::is_control_flow(f)) {
      c.set_origin(f.nn_module_stack, f.stack_trace);
      control_flow_vjp(forward, c, grads, wanted, static_cast<ir::node_id>(i));
      continue;
    }
    const detail::derivative_entry d = detail::find_derivative(f.target);
    if (d.kind == derivative_kind::missing) {
      typex::detail::raise<unsupported_error>([&](auto& w) {
        w.put(who); w.put(": "); w.put(f.target.name()); w.put(" (node '"); w.put(f.name); w.put('\'');
        if (!f.stack_trace.empty()) { w.put(", at "); w.put(f.stack_trace); }
        w.put(") has no derivative: the op defines none (an op gives one as `template <class C> static void vjp(C& c)`, "
              "or declares `static constexpr bool differentiable = false`; a user-defined op then registers it with "
              "typex::passes::register_derivative<Op>()); detach the value it computes from the parameters, or give the "
              "op its derivative");
      });
    }
    const std::vector<const any_tensor*> no_tensors;
    const ir::call_args a(f.target, f.args, no_tensors);
    c.bind(static_cast<ir::node_id>(i), f, a, grads, wanted);
    c.set_origin(f.nn_module_stack, f.stack_trace);
    d.fn(c);
  }
}
}  // namespace detail

TYPEX_API auto differentiate(const ir::graph& forward, const gradient_request& r) -> ir::graph {
  static constexpr std::string_view who = "typex::passes::differentiate";
  (void)who;
  if (!forward.has_output()) typex::detail::raise_message<ir::graph_error>(std::string(who) + ": the graph has no output node");
  const ir::node& fwd_out = forward.output();
  if (r.loss >= fwd_out.args.size()) {
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": the loss is output "); w.put_int(static_cast<long long>(r.loss)); w.put(", but the graph has ");
      w.put_int(static_cast<long long>(fwd_out.args.size())); w.put(" outputs");
    });
  }
  const value_ref loss = std::get<value_ref>(fwd_out.args[r.loss]);
  const ir::tensor_meta& loss_meta = forward.meta(loss);
  if (loss_meta.rank() != 0 || !is_floating_point(loss_meta.scalar_type)) {
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": the loss (output "); w.put_int(static_cast<long long>(r.loss)); w.put(", '");
      w.put(forward[loss.node].name); w.put("') is "); w.put(loss_meta.to_string());
      w.put("; a loss is a floating-point scalar: reduce it (typex::mean or typex::sum) before returning it");
    });
  }
  for (ir::node_id w : r.wrt) {
    if (w >= forward.size() || forward[w].op != ir::node_op::placeholder) {
      typex::detail::raise_message<argument_error>(std::string(who) + ": a gradient was asked for a node that is not a placeholder");
    }
  }

  // 1. the forward, node for node (same ids, names, provenance)
  ir::graph g;
  detail::copy_forward(forward, g);
  const std::size_t n = forward.size() - 1;

  // 2. the nodes between a wanted value and the loss
  const std::vector<bool> wanted = detail::wanted_nodes(forward, r.wrt);
  std::vector<bool> reaches(n, false);
  reaches[loss.node] = true;
  for (std::size_t i = n; i-- > 0;)
    if (reaches[i]) ir::graph::for_each_ref(forward[static_cast<ir::node_id>(i)], [&](value_ref v) { reaches[v.node] = true; });

  // 3. backward, from the loss to the first node
  detail::grad_table grads(n);
  vjp_context c(g);
  c.set_origin(forward[loss.node].nn_module_stack, forward[loss.node].stack_trace);
  // (the seed reads nothing of the forward: a partition hands the backward no value for it)
  detail::grad_slot(grads, loss) = c.full({}, 1.0, loss_meta.scalar_type);
  detail::sweep(forward, c, grads, wanted, reaches, loss.node);

  // 4. the outputs: the forward's, then the gradients asked for
  std::vector<value_ref> outs;
  for (const ir::argument& a : fwd_out.args) outs.push_back(std::get<value_ref>(a));
  for (ir::node_id w : r.wrt) {
    std::optional<value_ref> s = grads[w].empty() ? std::nullopt : grads[w].front();
    outs.push_back(s ? *s : c.zeros_like(value_ref{w, 0}));
  }
  g.set_output(std::move(outs));
  g.drop_unused_subgraphs();
  return g;
}

TYPEX_API auto expose_dropout_masks(const ir::graph& graph, std::size_t* exposed) -> ir::graph {
  ir::graph g;
  std::vector<ir::node_id> remap(graph.size(), 0);
  const auto moved = [&](ir::argument a) {
    if (auto* r = std::get_if<value_ref>(&a)) r->node = remap[r->node];
    else if (auto* l = std::get_if<std::vector<value_ref>>(&a))
      for (value_ref& e : *l) e.node = remap[e.node];
    return a;
  };
  std::size_t count = 0;
  for (ir::node_id i = 0; i < graph.size(); ++i) {
    const ir::node& f = graph[i];
    if (f.op == ir::node_op::placeholder) {
      remap[i] = f.derived_from.empty() ? g.add_placeholder(f.name, f.vals.front())
                                        : g.add_derived_placeholder(f.name, f.vals.front(), f.derived_from, f.stack_trace);
      continue;
    }
    if (f.op == ir::node_op::output) {
      std::vector<value_ref> outs;
      for (const ir::argument& a : f.args) outs.push_back(std::get<value_ref>(moved(a)));
      remap[i] = g.set_output(std::move(outs));
      continue;
    }
    std::vector<ir::argument> args;
    for (const ir::argument& a : f.args) args.push_back(moved(a));
    std::vector<std::pair<std::string, ir::argument>> kwargs;
    for (const auto& [k, a] : f.kwargs) kwargs.emplace_back(k, moved(a));
    if (f.target == op_id_of<dropout_op>) {
      const std::vector<const any_tensor*> no_tensors;
      const ir::call_args a(f.target, args, no_tensors);
      if (a.flag("train") && a.real("p") > 0) {
        const value_ref x = std::get<value_ref>(args.front());
        graph_builder b(g);
        b.set_origin(f.nn_module_stack, f.stack_trace);
        const value_ref mask = b.emit(op_id_of<dropout_mask_op>, {x, a.real("p")}, g.meta(x));
        remap[i] = g.add_call({.target = op_id_of<mul_op>, .args = {x, mask}, .vals = f.vals, .name_hint = f.name,
                               .nn_module_stack = f.nn_module_stack, .stack_trace = f.stack_trace});
        ++count;
        continue;
      }
    }
    remap[i] = g.add_call({.target = f.target, .args = std::move(args), .kwargs = std::move(kwargs), .vals = f.vals,
                           .name_hint = f.name, .nn_module_stack = f.nn_module_stack, .stack_trace = f.stack_trace});
  }
  if (exposed != nullptr) *exposed = count;
  g.copy_subgraphs_from(graph);
  return g;
}

}  // namespace typex::passes
