// typex/passes/detail/fold_impl.hpp — the definitions of passes/fold.hpp (compiled once in
// typex::runtime, or inline in header-only builds). Included by fold.hpp only.
#pragma once

#include <typex/ir/describe.hpp>
#include <typex/ops/all.hpp>
#include <typex/passes/detail/rewrite.hpp>
#include <typex/passes/fold.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace typex::passes::detail {

// A value whose every element is `value`: the dtype's number, held exactly in a double.
struct splat {
  bool known = false;
  double value = 0;
  dtype type = dtype::f32;
};

inline bool real_dtype(dtype d) noexcept { return d == dtype::f32 || d == dtype::f64; }

// f(T{}) with T the compute type of d (float for f32, double for f64), its result as a double.
template <class F>
double in_dtype(dtype d, F&& f) {
  if (d == dtype::f64) return static_cast<double>(f(double{}));
  return static_cast<double>(f(float{}));
}

// An integer argument: an int, or a sym_expr that is a constant.
inline std::optional<std::int64_t> constant_int(const ir::argument& a) {
  if (const auto* v = std::get_if<std::int64_t>(&a)) return *v;
  if (const auto* e = std::get_if<ir::sym_expr>(&a))
    if (e->is_constant()) return static_cast<std::int64_t>(*e->value());
  return std::nullopt;
}

// A number argument as the kernels read a Scalar operand (call_args::real): a float, an int
// through double, a bool as 0 or 1.
inline std::optional<double> real_number(const ir::argument& a) {
  if (const auto* v = std::get_if<double>(&a)) return *v;
  if (const auto* n = std::get_if<std::int64_t>(&a)) return static_cast<double>(*n);
  if (const auto* b = std::get_if<bool>(&a)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

// A factory's fill value in dtype d, as the fill kernels convert it: an int directly, a float or
// a bool through double.
inline std::optional<double> fill_value(dtype d, const ir::argument& a) {
  if (const auto* n = std::get_if<std::int64_t>(&a)) {
    const std::int64_t v = *n;
    return in_dtype(d, [v](auto t) { return static_cast<decltype(t)>(v); });
  }
  if (const auto r = real_number(a)) {
    const double v = *r;
    return in_dtype(d, [v](auto t) { return static_cast<decltype(t)>(v); });
  }
  return std::nullopt;
}

// ---- the pointwise ops folded, and their scalar math

using unary_fold_fn = double (*)(dtype, double);
using binary_fold_fn = double (*)(dtype, double, double);

// A unary op whose math takes no attribute and runs one number at a time on every backend (an
// activation, `epilogue = true`, runs vectorised on the Eigen backend: not folded).
template <class Op>
constexpr bool foldable_unary_v = std::is_empty_v<Op> && !requires { Op::epilogue; } &&
                                  requires(const Op& op, float x, float& y, double dx, double& dy) {
                                    op.math(scalar_math<float>{}, x, y);
                                    op.math(scalar_math<double>{}, dx, dy);
                                  };

template <class Op>
double unary_value(dtype d, double x) {
  return in_dtype(d, [x](auto t) {
    using T = decltype(t);
    T y{};
    Op{}.math(scalar_math<T>{}, static_cast<T>(x), y);
    return y;
  });
}

template <class Op>
double binary_value(dtype d, double a, double b) {
  return in_dtype(d, [a, b](auto t) {
    using T = decltype(t);
    return static_cast<T>(Op::scalar(static_cast<T>(a), static_cast<T>(b)));
  });
}

template <class... Ops>
void add_unary_folds(std::unordered_map<op_id, unary_fold_fn>& m, op_list<Ops...>) {
  (
      [&] {
        if constexpr (foldable_unary_v<Ops>) m.emplace(op_id_of<Ops>, &unary_value<Ops>);
      }(),
      ...);
}

inline const std::unordered_map<op_id, unary_fold_fn>& unary_folds() {
  static const auto m = [] {
    std::unordered_map<op_id, unary_fold_fn> t;
    add_unary_folds(t, unary_ops{});
    return t;
  }();
  return m;
}

inline const std::unordered_map<op_id, binary_fold_fn>& binary_folds() {
  static const std::unordered_map<op_id, binary_fold_fn> m = {
      {op_id_of<add_op>, &binary_value<add_op>},         {op_id_of<sub_op>, &binary_value<sub_op>},
      {op_id_of<mul_op>, &binary_value<mul_op>},         {op_id_of<div_op>, &binary_value<div_op>},
      {op_id_of<maximum_op>, &binary_value<maximum_op>}, {op_id_of<minimum_op>, &binary_value<minimum_op>},
      {op_id_of<pow_op>, &binary_value<pow_op>},
  };
  return m;
}

// ---- (a) no-op views and copies

inline bool is_noop_target(op_id t) noexcept {
  return t == op_id_of<aten::reshape> || t == op_id_of<aten::view> || t == op_id_of<aten::expand> ||
         t == op_id_of<aten::permute> || t == op_id_of<aten::transpose_int> || t == op_id_of<aten::_to_copy> ||
         t == op_id_of<aten::slice_Tensor> || t == op_id_of<aten::flatten_using_ints>;
}

// Whether call n (of an is_noop_target op) on `args` (args[0]: its input, of metadata `in`) gives
// its input unchanged.
inline bool is_noop(const ir::node& n, const std::vector<ir::argument>& args, const ir::tensor_meta& in) {
  if (n.vals.size() != 1 || !(n.vals.front() == in) || !n.kwargs.empty()) return false;
  const std::size_t rank = in.rank();
  const auto wrap = [rank](std::optional<std::int64_t> d) -> std::optional<std::size_t> {
    if (!d) return std::nullopt;
    const auto r = static_cast<std::int64_t>(rank == 0 ? 1 : rank);
    const std::int64_t w = *d < 0 ? *d + r : *d;
    if (w < 0 || w >= r) return std::nullopt;
    return static_cast<std::size_t>(w);
  };
  const auto absent = [&](std::size_t k) { return k >= args.size() || std::holds_alternative<ir::none_t>(args[k]); };
  const auto int_or = [&](std::size_t k, std::int64_t fallback) -> std::optional<std::int64_t> {
    return absent(k) ? std::optional<std::int64_t>(fallback) : constant_int(args[k]);
  };
  const op_id t = n.target;
  // (the metadata says the result has the input's own shape: a reshape, view or expand to it)
  if (t == op_id_of<aten::reshape> || t == op_id_of<aten::view> || t == op_id_of<aten::expand>) return args.size() == 2;
  if (t == op_id_of<aten::permute>) {
    if (args.size() != 2) return false;
    std::vector<std::optional<std::int64_t>> dims;
    if (const auto* v = std::get_if<std::vector<std::int64_t>>(&args[1])) {
      for (std::int64_t d : *v) dims.emplace_back(d);
    } else if (const auto* s = std::get_if<std::vector<ir::sym_expr>>(&args[1])) {
      for (const ir::sym_expr& e : *s) dims.push_back(constant_int(e));
    } else {
      return false;
    }
    if (dims.size() != rank) return false;
    for (std::size_t k = 0; k < rank; ++k)
      if (wrap(dims[k]) != std::optional<std::size_t>(k)) return false;
    return true;
  }
  if (t == op_id_of<aten::transpose_int>) {
    if (args.size() != 3) return false;
    const auto d0 = wrap(constant_int(args[1])), d1 = wrap(constant_int(args[2]));
    return d0 && d1 && *d0 == *d1;
  }
  if (t == op_id_of<aten::_to_copy>) {
    // (self, dtype, layout, device, pin_memory, non_blocking, memory_format): the same dtype, and
    // nothing else asked for (None, or False for the flags)
    for (std::size_t k = 1; k < args.size(); ++k) {
      if (absent(k)) continue;
      if (k == 1 && std::holds_alternative<dtype>(args[k]) && std::get<dtype>(args[k]) == in.scalar_type) continue;
      if (k >= 4 && std::holds_alternative<bool>(args[k]) && !std::get<bool>(args[k])) continue;
      return false;
    }
    return true;
  }
  if (t == op_id_of<aten::slice_Tensor>) {
    // (self, dim=0, start=None, end=None, step=1)
    if (args.size() > 5 || rank == 0) return false;
    const auto dim = wrap(int_or(1, 0));
    const auto start = int_or(2, 0);
    const auto step = int_or(4, 1);
    if (!dim || !start || *start != 0 || !step || *step != 1) return false;
    if (absent(3)) return true;
    const ir::sym_expr& extent = in.shape[*dim];
    if (const auto* e = std::get_if<ir::sym_expr>(&args[3])) {
      if (*e == extent) return true;
    }
    const auto end = constant_int(args[3]);
    if (!end) return false;
    if (*end >= std::numeric_limits<std::int64_t>::max() / 2) return true;  // (sys.maxsize: "to the end")
    return extent.is_constant() && *end >= static_cast<std::int64_t>(*extent.value());
  }
  if (t == op_id_of<aten::flatten_using_ints>) {
    // (self, start_dim=0, end_dim=-1): a rank-0 value becomes rank 1 (not a no-op)
    if (rank == 0 || args.size() > 3) return false;
    if (rank == 1) return true;
    const auto s = wrap(int_or(1, 0)), e = wrap(int_or(2, -1));
    return s && e && *s == *e;
  }
  return false;
}

// ---- (b) splats

enum class splat_kind : unsigned char {
  none,    // not a splat (or not one the pass can compute)
  source,  // a splat made by a factory, a view or a conversion: kept, its value noted
  folded,  // a pointwise call on splats: becomes aten.full
};

// What call n (arguments `args`, already in the target graph `out`) gives, as a splat.
template <class SplatOf>
std::pair<splat_kind, splat> evaluate_splat(const ir::node& n, const std::vector<ir::argument>& args, const ir::graph& out,
                                            SplatOf&& splat_of) {
  const std::pair<splat_kind, splat> no{splat_kind::none, {}};
  if (n.vals.size() != 1 || !n.kwargs.empty()) return no;
  const dtype d = n.vals.front().scalar_type;
  if (!real_dtype(d)) return no;
  const op_id t = n.target;
  const auto made = [&](splat_kind k, double v) { return std::pair<splat_kind, splat>{k, splat{true, v, d}}; };
  const auto dtype_at = [&](std::size_t k) { return k < args.size() && std::holds_alternative<dtype>(args[k]) && std::get<dtype>(args[k]) == d; };

  // factories (the fill kernels: sizes and the dtype given; the _like forms in their input's dtype)
  if (t == op_id_of<aten::zeros> || t == op_id_of<aten::ones>) {
    if (!dtype_at(1)) return no;
    return made(splat_kind::source, t == op_id_of<aten::ones> ? 1.0 : 0.0);
  }
  if (t == op_id_of<aten::full>) {
    if (args.size() < 3 || !dtype_at(2)) return no;
    const auto v = fill_value(d, args[1]);
    return v ? made(splat_kind::source, *v) : no;
  }
  if (t == op_id_of<aten::zeros_like> || t == op_id_of<aten::ones_like> || t == op_id_of<aten::full_like>) {
    const auto* x = args.empty() ? nullptr : std::get_if<ir::value_ref>(&args[0]);
    if (x == nullptr || out.meta(*x).scalar_type != d) return no;
    if (t == op_id_of<aten::zeros_like>) return made(splat_kind::source, 0.0);
    if (t == op_id_of<aten::ones_like>) return made(splat_kind::source, 1.0);
    if (args.size() < 2) return no;
    const auto v = fill_value(d, args[1]);
    return v ? made(splat_kind::source, *v) : no;
  }
  if (args.empty()) return no;

  // a conversion of a splat: its number converted; a view of a splat: its number
  if (t == op_id_of<aten::_to_copy>) {
    const splat* s = splat_of(args[0]);
    if (s == nullptr) return no;
    const double v = s->value;
    return made(splat_kind::source, in_dtype(d, [v](auto x) { return static_cast<decltype(x)>(v); }));
  }
  const auto& unary = unary_folds();
  const auto& binary = binary_folds();
  const auto u = unary.find(t);
  const auto b = binary.find(t);
  const bool pow_number = t == op_id_of<pow_scalar_op>;
  if (u == unary.end() && b == binary.end() && !pow_number) {
    const ir::op_description* desc = ir::find_description(t);
    const splat* s = splat_of(args[0]);
    if (desc != nullptr && desc->traits.view && s != nullptr && s->type == d) return made(splat_kind::source, s->value);
    return no;
  }

  // pointwise: every tensor argument a splat of the result's dtype
  const auto operand = [&](const ir::argument& a, bool& tensor) -> std::optional<double> {
    tensor = std::holds_alternative<ir::value_ref>(a);
    if (tensor) {
      const splat* s = splat_of(a);
      if (s == nullptr || s->type != d) return std::nullopt;
      return s->value;
    }
    return real_number(a);  // (converted to the compute type by the op's value function, as scalar_tensor does)
  };
  bool tensor0 = false, tensor1 = false;
  if (u != unary.end()) {
    if (args.size() != 1) return no;
    const auto x = operand(args[0], tensor0);
    if (!x || !tensor0) return no;
    return made(splat_kind::folded, u->second(d, *x));
  }
  if (pow_number) {
    if (args.size() != 2) return no;
    const auto x = operand(args[0], tensor0);
    const auto e = real_number(args[1]);
    if (!x || !tensor0 || !e) return no;
    const double xv = *x, ev = *e;
    return made(splat_kind::folded, in_dtype(d, [xv, ev](auto tag) {
                  using T = decltype(tag);
                  return pow_scalar_op::scalar(static_cast<T>(xv), ev);
                }));
  }
  const bool scaled = t == op_id_of<add_op> || t == op_id_of<sub_op>;
  if (args.size() != 2 && !(scaled && args.size() == 3)) return no;
  if (args.size() == 3 && !std::holds_alternative<ir::none_t>(args[2])) {
    // alpha 1 only (self + alpha * other may be contracted to a fused multiply-add by a kernel)
    const auto alpha = real_number(args[2]);
    if (!alpha || *alpha != 1.0) return no;
  }
  const auto x = operand(args[0], tensor0);
  const auto y = operand(args[1], tensor1);
  if (!x || !y || !(tensor0 || tensor1)) return no;
  // (a number operand in the compute type, as the kernels' scalar_tensor converts it)
  const double xv = tensor0 ? *x : in_dtype(d, [v = *x](auto tag) { return static_cast<decltype(tag)>(v); });
  const double yv = tensor1 ? *y : in_dtype(d, [v = *y](auto tag) { return static_cast<decltype(tag)>(v); });
  return made(splat_kind::folded, b->second(d, xv, yv));
}

// The symbols an expression names.
inline void collect_symbols(const ir::sym_expr& e, std::unordered_set<std::string>& out) {
  switch (e.what()) {
    case ir::sym_expr::kind::constant: return;
    case ir::sym_expr::kind::symbol: out.emplace(e.name()); return;
    case ir::sym_expr::kind::op:
      collect_symbols(e.lhs(), out);
      collect_symbols(e.rhs(), out);
      return;
  }
}
inline bool names_only(const ir::sym_expr& e, const std::unordered_set<std::string>& symbols) {
  switch (e.what()) {
    case ir::sym_expr::kind::constant: return true;
    case ir::sym_expr::kind::symbol: return symbols.contains(std::string(e.name()));
    case ir::sym_expr::kind::op: return names_only(e.lhs(), symbols) && names_only(e.rhs(), symbols);
  }
  return false;
}

// ---- (c) symbolic arguments

// a made a plain int (list) where it is a constant once simplified; 1 when it changed.
inline std::size_t fold_symbolic(ir::argument& a) {
  if (const auto* e = std::get_if<ir::sym_expr>(&a)) {
    const ir::sym_expr s = e->is_constant() ? *e : simplify(*e);
    if (!s.is_constant()) return 0;
    a = static_cast<std::int64_t>(*s.value());
    return 1;
  }
  if (const auto* l = std::get_if<std::vector<ir::sym_expr>>(&a)) {
    std::vector<std::int64_t> v;
    v.reserve(l->size());
    for (const ir::sym_expr& e : *l) {
      const ir::sym_expr s = e.is_constant() ? e : simplify(e);
      if (!s.is_constant()) return 0;
      v.push_back(static_cast<std::int64_t>(*s.value()));
    }
    a = std::move(v);
    return 1;
  }
  return 0;
}

}  // namespace typex::passes::detail

TYPEX_API auto typex::passes::simplify(const ir::sym_expr& e) -> ir::sym_expr {
  if (e.what() != ir::sym_expr::kind::op) return e;
  return ir::sym_expr::apply(e.op(), simplify(e.lhs()), simplify(e.rhs()));
}

TYPEX_API auto typex::passes::fold(ir::graph& g, fold_options options) -> fold_stats {
  fold_stats stats;
  std::vector<bool> returned(g.size(), false);
  if (options.keep_output_names && g.has_output())
    ir::graph::for_each_ref(g.output(), [&](ir::value_ref r) { returned[r.node] = true; });
  // the symbols a backend binds from the inputs, before anything runs (a full's sizes may use these)
  std::unordered_set<std::string> bound;
  for (const ir::node& n : g.nodes())
    if (n.op == ir::node_op::placeholder)
      for (const ir::tensor_meta& m : n.vals)
        for (const ir::sym_expr& e : m.shape) detail::collect_symbols(e, bound);

  detail::graph_rewriter rw(g);
  std::vector<detail::splat> splats;  // per target node: its value 0 as a splat
  const auto note = [&](ir::node_id t, const detail::splat& s) {
    if (splats.size() <= t) splats.resize(t + 1);
    splats[t] = s;
  };
  const auto splat_of = [&](const ir::argument& a) -> const detail::splat* {
    const auto* r = std::get_if<ir::value_ref>(&a);
    if (r == nullptr || r->index != 0 || r->node >= splats.size() || !splats[r->node].known) return nullptr;
    return &splats[r->node];
  };

  for (ir::node_id i = 0; i < g.size(); ++i) {
    const ir::node& n = g[i];
    if (n.op != ir::node_op::call_function) {
      rw.copy(i);
      continue;
    }
    std::vector<ir::argument> args = rw.map_args(n);
    std::vector<std::pair<std::string, ir::argument>> kwargs = rw.map_kwargs(n);
    if (options.symbolic_arguments && !ir::is_assertion(n)) {
      for (ir::argument& a : args) stats.symbolic_arguments += detail::fold_symbolic(a);
      for (auto& kv : kwargs) stats.symbolic_arguments += detail::fold_symbolic(kv.second);
    }
    const ir::graph& out = rw.target();

    // (a) a no-op: its readers read its input
    if (options.noop_views && !returned[i] && detail::is_noop_target(n.target) && !args.empty() &&
        std::holds_alternative<ir::value_ref>(args.front())) {
      const ir::value_ref in = std::get<ir::value_ref>(args.front());
      if (detail::is_noop(n, args, out.meta(in))) {
        rw.bind_value(ir::value_ref{i, 0}, in);
        ++stats.noops_removed;
        continue;
      }
    }

    // (b) splats
    if (options.splat_constants) {
      const auto [kind, s] = detail::evaluate_splat(n, args, out, splat_of);
      if (kind == detail::splat_kind::folded) {
        const std::vector<ir::sym_expr>& shape = n.vals.front().shape;
        bool constant = true, bindable = true;
        for (const ir::sym_expr& e : shape) {
          constant = constant && e.is_constant();
          bindable = bindable && detail::names_only(e, bound);
        }
        if (bindable) {
          ir::argument sizes;
          if (constant) {
            std::vector<std::int64_t> v;
            for (const ir::sym_expr& e : shape) v.push_back(static_cast<std::int64_t>(*e.value()));
            sizes = std::move(v);
          } else {
            sizes = shape;
          }
          const ir::node_id t = rw.add_named({.target = op_id_of<aten::full>, .args = {std::move(sizes), s.value, s.type},
                                              .vals = n.vals, .nn_module_stack = n.nn_module_stack, .stack_trace = n.stack_trace},
                                             n.name);
          rw.bind_node(i, t);
          note(t, s);
          ++stats.splats_folded;
          continue;
        }
      }
      if (kind != detail::splat_kind::none) {  // (a source, or a fold whose sizes a backend could not bind: kept)
        note(rw.copy_with(i, std::move(args), std::move(kwargs)), s);
        continue;
      }
    }
    rw.copy_with(i, std::move(args), std::move(kwargs));
  }
  if (stats.total() == 0) return stats;
  g = rw.finish();
  return stats;
}

TYPEX_API auto typex::passes::fold_pass(fold_options options) -> pass {
  return pass{.name = "fold",
              .run = [options](ir::graph& g) { return fold(g, options).total() > 0; },
              .preserves = {.signature = true, .output_names = options.keep_output_names, .metadata = true}};
}
