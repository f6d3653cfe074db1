// typex/backend/cuda/detail/engine_impl.hpp — the CUDA backend's planned engine (program.hpp).
//
// Host C++ (no CUDA header but cuBLASLt's descriptors, lt.hpp): the planner's target lowers each
// step to launch records with device addresses resolved at plan time (the arena never moves), and
// the engine runs them on its device_runtime, natively or on the emulator.
#pragma once

#include <typex/backend/cuda/chain.hpp>
#include <typex/backend/cuda/data_dependent.hpp>
#include <typex/backend/cuda/detail/records.hpp>
#include <typex/backend/cuda/detail/device_ops_impl.hpp>  // (the device operations program_module and the optimizers use)
#include <typex/backend/cuda/device.hpp>
#if defined(TYPEX_CUDNN)
#include <typex/backend/cuda/dnn.hpp>
#endif
#include <typex/backend/cuda/launch.hpp>
#include <typex/backend/cuda/lt.hpp>
#include <typex/backend/cuda/memory.hpp>
#include <typex/backend/cuda/program.hpp>
#include <typex/backend/eigen/kernels.hpp>  // (constant folding at planning time runs on the host)
#include <typex/backend/kit/engine.hpp>
#include <typex/backend/kit/stepwise.hpp>
#include <typex/backend/cuda/eager.hpp>
#include <typex/export/decompositions.hpp>
#include <typex/ir/call.hpp>
#include <typex/ops/all.hpp>
#include <typex/plan/planner.hpp>

#include <algorithm>
#include <concepts>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace typex::cuda {

namespace detail {

// The ops the engine lowers besides the pointwise chain's (chain.hpp): by id.
inline bool is_copy_op(op_id op) { return op == op_id_of<aten::transpose_int> || op == op_id_of<aten::permute>; }
inline bool is_view_op(op_id op) { return has(plan::rules_of(op), plan::rule::view); }
inline bool is_binary_head(op_id op) { return has(plan::rules_of(op), plan::rule::pointwise_head); }

// The call of `node` with no tensors (what the lowering decodes attributes from).
struct call_of {
  std::vector<const any_tensor*> none;
  ir::call_args args;
  call_of(const ir::node& n, const symbol_table* s) : none(n.args.size(), nullptr), args(n.target, n.args, none, s) {}
};

// A reduction the row kernel runs (kernels/reduce.cuh): its kind, the reduced dims of its input
// (sorted; every dim where the call names none), and var's correction.
struct reduction_call {
  reduce_kind kind;
  std::vector<std::size_t> dims;
  double correction = 1.0;
};

inline bool is_reduction_op(op_id op) {
  return op == op_id_of<aten::softmax_int> || op == op_id_of<aten::log_softmax_int> || op == op_id_of<aten::sum_dim_IntList> ||
         op == op_id_of<aten::mean_dim> || op == op_id_of<aten::amax> || op == op_id_of<aten::amin> || op == op_id_of<aten::argmax> ||
         op == op_id_of<aten::var_correction> || op == op_id_of<aten::std_correction> || op == op_id_of<aten::logsumexp>;
}

// The reduction of `node` over an input of `rank` dims (softmax / log_softmax over one dim; sum,
// mean, amax, amin, var over a list, all dims where it is empty or None; argmax over one dim or all),
// or nothing where the kernel does not run it (a dtype conversion).
inline std::optional<reduction_call> reduction(const ir::node& node, std::size_t rank, const symbol_table* symbols) {
  const op_id op = node.target;
  if (!is_reduction_op(op)) return std::nullopt;
  const call_of c(node, symbols);
  const bool typed = op == op_id_of<aten::softmax_int> || op == op_id_of<aten::log_softmax_int> || op == op_id_of<aten::sum_dim_IntList> ||
                     op == op_id_of<aten::mean_dim>;  // (the ops with a dtype argument: a conversion the kernel does not make)
  if (typed && c.args.has("dtype")) return std::nullopt;
  reduction_call r{};
  const auto all = [&] {
    r.dims.clear();
    for (std::size_t d = 0; d < rank; ++d) r.dims.push_back(d);
  };
  const auto one = [&](std::int64_t d) { r.dims = {rank == 0 ? 0 : ir::wrap_dim(op.name(), d, rank)}; };
  if (op == op_id_of<aten::softmax_int> || op == op_id_of<aten::log_softmax_int>) {
    r.kind = op == op_id_of<aten::softmax_int> ? reduce_kind::softmax : reduce_kind::log_softmax;
    if (rank == 0) return r;  // (one element: the empty list of dims reads it alone)
    one(c.args.integer("dim"));
    return r;
  }
  if (op == op_id_of<aten::argmax>) {
    r.kind = reduce_kind::argmax;
    if (c.args.has("dim") && rank > 0) one(c.args.integer("dim"));
    else all();
    return r;
  }
  r.kind = op == op_id_of<aten::sum_dim_IntList> ? reduce_kind::sum
           : op == op_id_of<aten::mean_dim>      ? reduce_kind::mean
           : op == op_id_of<aten::amax>          ? reduce_kind::amax
           : op == op_id_of<aten::amin>          ? reduce_kind::amin
           : op == op_id_of<aten::logsumexp>     ? reduce_kind::logsumexp
           : op == op_id_of<aten::std_correction> ? reduce_kind::std
                                                 : reduce_kind::var;
  if (r.kind == reduce_kind::var || r.kind == reduce_kind::std) r.correction = c.args.has("correction") ? c.args.real("correction") : 1.0;
  const std::vector<std::int64_t> dims = c.args.has("dim") ? c.args.ints("dim") : std::vector<std::int64_t>{};
  if (dims.empty() || rank == 0) {
    all();
    return r;
  }
  for (std::int64_t d : dims) r.dims.push_back(ir::wrap_dim(op.name(), d, rank));
  std::sort(r.dims.begin(), r.dims.end());
  if (std::adjacent_find(r.dims.begin(), r.dims.end()) != r.dims.end()) return std::nullopt;  // (a dim twice: the op's error, on the host)
  return r;
}

// The reduction kernel's element type for a tensor's dtype (kernels/reduce.cuh), none for the others.
inline std::optional<reduce_type> reduce_type_of(dtype t) {
  switch (t) {
    case dtype::f32: return reduce_type::f32;
    case dtype::f64: return reduce_type::f64;
    case dtype::i64: return reduce_type::i64;
    case dtype::i32: return reduce_type::i32;
    case dtype::b8: return reduce_type::b8;
    default: return std::nullopt;
  }
}
// Whether the kernel computes reduction `kind` of an `in` tensor into an `out` one as torch does:
// f32 and f64 every kind in their own type (argmax: int64 indices); i64 and i32 sum (into int64),
// amax and amin (in their own type) and argmax; bool sum (into int64).
inline bool reduction_runs(reduce_kind kind, dtype in, dtype out) {
  if (kind == reduce_kind::argmax) return out == dtype::i64 && in != dtype::b8;
  if (in == dtype::f32 || in == dtype::f64) return out == in;
  if (kind == reduce_kind::sum) return out == dtype::i64;
  if (kind == reduce_kind::amax || kind == reduce_kind::amin) return in != dtype::b8 && out == in;
  return false;
}

// The ops lowered to the strided copy besides transpose / permute: slices, selections, expansions,
// a squeezed dim, concatenation, and aten.copy without a dtype change.
inline bool is_gather_op(op_id op) {
  return op == op_id_of<aten::slice_Tensor> || op == op_id_of<aten::select_int> || op == op_id_of<aten::expand> ||
         op == op_id_of<aten::squeeze_dim> || op == op_id_of<aten::cat> || op == op_id_of<copy_op> ||
         op == op_id_of<aten::select_scatter> || op == op_id_of<aten::slice_scatter> || op == op_id_of<aten::stack>;
}
inline bool is_matmul_op(op_id op) { return op == op_id_of<matmul_op> || op == op_id_of<aten::mm> || op == op_id_of<aten::bmm>; }
inline bool is_pool_backward_op(op_id op) {
  return op == op_id_of<max_pool2d_backward_op> || op == op_id_of<aten::avg_pool2d_backward> || op == op_id_of<aten::_adaptive_avg_pool2d_backward>;
}
inline bool is_pool_op(op_id op) {
  return op == op_id_of<aten::max_pool2d> || op == op_id_of<aten::avg_pool2d> || op == op_id_of<aten::adaptive_avg_pool2d> ||
         is_pool_backward_op(op);
}

// The indexing ops the index kernel runs (kernels/index.cuh).
inline bool is_index_op(op_id op) {
  return op == op_id_of<aten::index_select> || op == op_id_of<aten::gather> || op == op_id_of<aten::index_add> ||
         op == op_id_of<aten::scatter_add> || op == op_id_of<embedding_op> || op == op_id_of<aten::embedding_dense_backward>;
}
inline bool index_runs(const ir::graph& g, const ir::node& node) {
  const op_id op = node.target;
  if (!is_index_op(op)) return false;
  const ir::tensor_meta& out = node.vals.front();
  const std::size_t item = itemsize(out.scalar_type);
  const bool adds = op == op_id_of<aten::index_add> || op == op_id_of<aten::scatter_add> || op == op_id_of<aten::embedding_dense_backward>;
  if (adds ? (out.scalar_type != dtype::f32 && out.scalar_type != dtype::f64) : (item != 1 && item != 2 && item != 4 && item != 8)) return false;
  if (out.rank() > static_cast<std::size_t>(max_rank) || out.rank() == 0) return false;
  const bool embedding = op == op_id_of<embedding_op> || op == op_id_of<aten::embedding_dense_backward>;
  for (std::size_t k = 0; k < node.args.size(); ++k) {
    const ir::argument& a = node.args[k];
    if (std::holds_alternative<std::vector<ir::value_ref>>(a)) return false;
    if (const auto* r = std::get_if<ir::value_ref>(&a)) {
      const ir::tensor_meta& t = g[r->node].vals.front();
      if (t.rank() > static_cast<std::size_t>(max_rank)) return false;
      if (t.rank() == 0 && !(embedding && k == 1)) return false;  // (a 0-d source, self or index: not taken)
      if (t.scalar_type != out.scalar_type && t.scalar_type != dtype::i64 && t.scalar_type != dtype::i32) return false;
    }
  }
  return true;
}

// The losses the loss kernel runs (kernels/loss.cuh): nll_loss and cross_entropy over [N, C], [C]
// or spatial [N, C, d...] scores with class-index targets (cross_entropy without label smoothing), mse_loss of two tensors
// of one rank; f32, reductions none / mean / sum.
inline bool is_loss_op(op_id op) {
  return op == op_id_of<aten::nll_loss> || op == op_id_of<aten::cross_entropy_loss> || op == op_id_of<aten::mse_loss>;
}
inline bool loss_runs(const ir::graph& g, const ir::node& node) {
  const op_id op = node.target;
  if (!is_loss_op(op) || node.args.size() < 2 || node.vals.front().scalar_type != dtype::f32) return false;
  const auto* xr = std::get_if<ir::value_ref>(&node.args[0]);
  const auto* tr = std::get_if<ir::value_ref>(&node.args[1]);
  if (xr == nullptr || tr == nullptr) return false;
  const ir::tensor_meta& x = g[xr->node].vals.front();
  const ir::tensor_meta& t = g[tr->node].vals.front();
  const call_of c(node, nullptr);
  const std::size_t reduction_at = op == op_id_of<aten::mse_loss> ? 2 : 3;
  const std::int64_t reduction = c.args.has(reduction_at) ? c.args.integer(reduction_at) : 1;
  if (x.scalar_type != dtype::f32 || reduction < 0 || reduction > 2) return false;
  if (op == op_id_of<aten::mse_loss>) return t.scalar_type == dtype::f32 && t.shape == x.shape && x.rank() <= static_cast<std::size_t>(max_rank);
  // ([C] scores with a 0-d target, [N, C] with [N], spatial [N, C, d...] with [N, d...])
  if (x.rank() < 1 || x.rank() > static_cast<std::size_t>(max_rank) || t.rank() + 1 != x.rank() ||
      (t.scalar_type != dtype::i64 && t.scalar_type != dtype::i32))
    return false;
  if (node.args.size() > 2) {
    if (const auto* wr = std::get_if<ir::value_ref>(&node.args[2]); wr != nullptr && g[wr->node].vals.front().scalar_type != dtype::f32) return false;
  }
  if (op == op_id_of<aten::cross_entropy_loss> && c.args.has(5) && c.args.real(5) != 0.0) return false;
  return true;
}

// The map kernel's op for `node` (kernels/map.cuh), where the node is one it runs.
inline std::optional<map_op> map_op_of(op_id op) {
  struct entry {
    op_id id;
    map_op m;
  };
  static const entry table[] = {
      {op_id_of<eq_op>, map_op::eq}, {op_id_of<ne_op>, map_op::ne}, {op_id_of<lt_op>, map_op::lt}, {op_id_of<le_op>, map_op::le},
      {op_id_of<gt_op>, map_op::gt}, {op_id_of<ge_op>, map_op::ge}, {op_id_of<logical_and_op>, map_op::logical_and},
      {op_id_of<logical_or_op>, map_op::logical_or}, {op_id_of<logical_xor_op>, map_op::logical_xor},
      {op_id_of<logical_not_op>, map_op::logical_not}, {op_id_of<where_op>, map_op::where}, {op_id_of<maximum_op>, map_op::maximum},
      {op_id_of<minimum_op>, map_op::minimum}, {op_id_of<pow_op>, map_op::pow}, {op_id_of<aten::_to_copy>, map_op::convert},
      {op_id_of<copy_op>, map_op::convert}, {op_id_of<add_op>, map_op::add}, {op_id_of<sub_op>, map_op::sub},
      {op_id_of<mul_op>, map_op::mul}, {op_id_of<div_op>, map_op::div}, {op_id_of<neg_op>, map_op::neg}, {op_id_of<abs_op>, map_op::abs},
      {op_id_of<aten::threshold_backward>, map_op::threshold_backward},
      {op_id_of<aten::gelu_backward>, map_op::gelu_backward}, {op_id_of<aten::full>, map_op::fill},
      {op_id_of<aten::arange>, map_op::iota}, {op_id_of<aten::arange_start>, map_op::iota}, {op_id_of<aten::arange_start_step>, map_op::iota},
      {op_id_of<pow_scalar_op>, map_op::pow}, {op_id_of<clamp_op>, map_op::clamp}, {op_id_of<aten::zeros>, map_op::fill},
      {op_id_of<aten::ones>, map_op::fill}, {op_id_of<aten::zeros_like>, map_op::fill}, {op_id_of<aten::ones_like>, map_op::fill},
      {op_id_of<aten::full_like>, map_op::fill}, {op_id_of<masked_fill_op>, map_op::where}, {op_id_of<aten::tril>, map_op::tril},
      {op_id_of<aten::triu>, map_op::triu}, {op_id_of<dropout_mask_op>, map_op::dropout_mask}};
  for (const entry& e : table)
    if (e.id == op) return e.m;
  return std::nullopt;
}

inline bool map_readable(dtype t) { return t != dtype::f16 && t != dtype::bf16; }

// The map kernel's op for a node: map_op_of's, or relu of an integer tensor as a clamp below at 0
// (the pointwise chain, which runs relu of f32 / f64, has no integer type).
inline std::optional<map_op> map_op_for(const ir::node& node) {
  if (std::optional<map_op> m = map_op_of(node.target)) return m;
  const dtype out = node.vals.front().scalar_type;
  if (node.target == op_id_of<relu_op> && !is_floating_point(out) && out != dtype::b8) return map_op::clamp;
  return std::nullopt;
}

// The pointwise chain runs the node (f32 / f64, every tensor of the result's dtype): it fuses.
inline bool chain_runs(const ir::graph& g, const ir::node& node) {
  const dtype out = node.vals.front().scalar_type;
  if (out != dtype::f32 && out != dtype::f64) return false;
  if (node.vals.front().rank() > static_cast<std::size_t>(max_rank)) return false;
  for (const ir::argument& a : node.args) {
    if (const auto* r = std::get_if<ir::value_ref>(&a); r != nullptr && g[r->node].vals.front().scalar_type != out) return false;
    if (std::holds_alternative<std::vector<ir::value_ref>>(a)) return false;
  }
  if (is_binary_head(node.target)) {
    if (node.args.size() < 2) return false;
    for (std::size_t k = 0; k < 2; ++k) {
      const ir::argument& a = node.args[k];
      const bool number = std::holds_alternative<double>(a) || std::holds_alternative<std::int64_t>(a) || std::holds_alternative<ir::sym_expr>(a);
      if (!number && !std::holds_alternative<ir::value_ref>(a)) return false;
    }
    return std::holds_alternative<ir::value_ref>(node.args[0]) || std::holds_alternative<ir::value_ref>(node.args[1]);
  }
  if (node.args.empty() || !std::holds_alternative<ir::value_ref>(node.args[0])) return false;
  const call_of c(node, nullptr);
  return encode_unary(node.target, c.args).has_value();
}

// The map kernel runs the node: its op is one of map_op_of's, every tensor read and the result have
// dtypes it reads (not f16 / bf16), and it has at most 3 operands (a conversion names no layout,
// device or memory format).
inline bool map_runs(const ir::graph& g, const ir::node& node) {
  std::optional<map_op> m = map_op_for(node);
  if (!m && is_floating_point(node.vals.front().scalar_type) && !node.args.empty() && std::holds_alternative<ir::value_ref>(node.args[0]) &&
      encode_unary(node.target, call_of(node, nullptr).args))
    m = map_op::unary;  // (a unary op with math of a float result, on an operand of another dtype)
  if (!m || !map_readable(node.vals.front().scalar_type) || node.vals.front().rank() > static_cast<std::size_t>(max_rank)) return false;
  std::size_t tensors = 0;
  for (const ir::argument& a : node.args) {
    if (std::holds_alternative<std::vector<ir::value_ref>>(a)) return false;
    if (const auto* r = std::get_if<ir::value_ref>(&a)) {
      const ir::tensor_meta& t = g[r->node].vals.front();
      if (!map_readable(t.scalar_type) || t.rank() > static_cast<std::size_t>(max_rank)) return false;
      ++tensors;
    }
  }
  if (*m == map_op::convert && node.target == op_id_of<aten::_to_copy>) {
    const call_of c(node, nullptr);
    if (c.args.has("layout") || c.args.has("device") || c.args.has("memory_format")) return false;
  }
  if ((*m == map_op::tril || *m == map_op::triu) && node.vals.front().rank() < 2) return false;
  if ((*m == map_op::dropout_mask || *m == map_op::gelu_backward) && !is_floating_point(node.vals.front().scalar_type)) return false;
  return tensors <= 3;
}

// Number argument i of a call: a double, an integer, a bool, or a size the symbols give.
inline double number_arg(const ir::call_args& a, std::size_t i) {
  return a.is_integer(i) ? static_cast<double>(a.integer(i)) : a.real(i);
}

// An int[2] argument that may be one int or a list of one or two (stride=1, padding=[1, 2]).
inline std::array<std::int64_t, 2> pair_arg(const ir::call_args& a, std::size_t i, std::array<std::int64_t, 2> fallback) {
  if (!a.has(i)) return fallback;
  if (a.is_integer(i)) return {a.integer(i), a.integer(i)};
  const std::vector<std::int64_t> v = a.ints(i);
  if (v.empty()) return fallback;
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) a.fail_text(i, "should hold one or two values");
  return {v[0], v[1]};
}
}  // namespace detail

namespace detail {
// scaled_dot_product_attention as the fused kernel (kernels/attention.cuh): f32 query, key and value
// with static head dims of at most attention_max_head (the value's at least 1), no dropout (its
// mask's draws are the math path's), equal head counts, a bool or f32 mask (or none), at most
// max_rank dims. What it does not cover reaches the backend as the math path (its decomposition).
inline bool attention_runs(const ir::graph& g, const ir::node& node) {
  if (node.args.size() < 3 || node.vals.front().scalar_type != dtype::f32 || node.vals.front().rank() > static_cast<std::size_t>(max_rank))
    return false;
  const auto meta_of = [&](std::size_t i) -> const ir::tensor_meta* {
    const auto* r = i < node.args.size() ? std::get_if<ir::value_ref>(&node.args[i]) : nullptr;
    return r != nullptr ? &g[r->node].vals.front() : nullptr;
  };
  const auto head = [](const ir::tensor_meta* m, std::int64_t least) {
    if (m == nullptr || m->rank() < 2 || m->rank() > static_cast<std::size_t>(max_rank) || m->scalar_type != dtype::f32) return false;
    const std::optional<index_t> d = m->shape.back().value();
    return d.has_value() && *d >= least && *d <= attention_max_head;
  };
  if (!head(meta_of(0), 0) || !head(meta_of(1), 0) || !head(meta_of(2), 1)) return false;
  if (const ir::tensor_meta* mask = meta_of(3); mask != nullptr) {
    if ((mask->scalar_type != dtype::b8 && mask->scalar_type != dtype::f32) || mask->rank() > static_cast<std::size_t>(max_rank)) return false;
  } else if (node.args.size() > 3 && !std::holds_alternative<ir::none_t>(node.args[3])) {
    return false;
  }
  const call_of c(node, nullptr);
  return c.args.real_or_default("dropout_p") == 0.0 && !c.args.flag_or_default("enable_gqa");
}
}  // namespace detail

namespace detail {
// attention's backward ops as the fused kernels (attention.cuh's statistics pass,
// attention_backward.cuh): f32 operands, static head dims of at most attention_max_head for the
// statistics and attention_backward_max_head for the gradients (the value's at least 1), a bool or
// f32 mask (or none), at most max_rank dims. What they do not cover runs as their decompositions
// (the math path).
inline bool attention_backward_runs(const ir::graph& g, const ir::node& node) {
  const bool stats = node.target == op_id_of<attention_stats_op>;
  if (node.vals.front().scalar_type != dtype::f32 || node.vals.front().rank() > static_cast<std::size_t>(max_rank)) return false;
  const auto meta_of = [&](std::size_t i) -> const ir::tensor_meta* {
    const auto* r = i < node.args.size() ? std::get_if<ir::value_ref>(&node.args[i]) : nullptr;
    return r != nullptr ? &g[r->node].vals.front() : nullptr;
  };
  const std::int64_t widest = stats ? attention_max_head : attention_backward_max_head;
  const auto head = [&](const ir::tensor_meta* m, std::int64_t least) {
    if (m == nullptr || m->rank() < 2 || m->rank() > static_cast<std::size_t>(max_rank) || m->scalar_type != dtype::f32) return false;
    const std::optional<index_t> d = m->shape.back().value();
    return d.has_value() && *d >= least && *d <= widest;
  };
  // (stats: query, key, grad, out; the backward: grad, query, key, value, stats)
  const std::size_t tensors = stats ? 4 : 5, mask_at = stats ? 4 : 5;
  for (std::size_t i = 0; i < tensors; ++i) {
    const bool least_one = stats ? i >= 2 : (i == 0 || i == 3);  // (the value's and the output's head dims)
    if (!(stats || i != 4 ? head(meta_of(i), least_one ? 1 : 0) : meta_of(i) != nullptr && meta_of(i)->scalar_type == dtype::f32)) return false;
  }
  if (const ir::tensor_meta* mask = meta_of(mask_at); mask != nullptr) {
    if ((mask->scalar_type != dtype::b8 && mask->scalar_type != dtype::f32) || mask->rank() > static_cast<std::size_t>(max_rank)) return false;
  } else if (node.args.size() > mask_at && !std::holds_alternative<ir::none_t>(node.args[mask_at])) {
    return false;
  }
  return true;
}
}  // namespace detail

// Whether the backend runs call `node` of `g`: its op has a lowering here, and its result and every
// tensor argument have the dtypes and ranks the kernels take (f32; at most max_rank dims for the
// elementwise kernels). Asked of every node before anything is planned or allocated.
TYPEX_CUDA_API bool supports(const ir::graph& g, const ir::node& node) {
  if (node.op != ir::node_op::call_function) return true;
  const op_id op = node.target;
  const ir::tensor_meta& out = node.vals.front();
  if (detail::is_view_op(op)) return true;  // (any dtype: no kernel)
  const auto meta_of = [&](const ir::argument& a) -> const ir::tensor_meta* {
    const auto* r = std::get_if<ir::value_ref>(&a);
    return r != nullptr ? &g[r->node].vals.front() : nullptr;
  };
  if (detail::is_copy_op(op) || (detail::is_gather_op(op) && !(op == op_id_of<copy_op> && detail::map_runs(g, node) && [&] {
                                      const ir::tensor_meta* src = node.args.size() < 2 ? nullptr : meta_of(node.args[1]);
                                      return src != nullptr && src->scalar_type != out.scalar_type;
                                    }()))) {
    // (copies move bits: any dtype of 1, 2, 4 or 8 bytes, every tensor read of the result's dtype)
    const std::size_t item = itemsize(out.scalar_type);
    if (out.rank() > static_cast<std::size_t>(max_rank) || (item != 1 && item != 2 && item != 4 && item != 8)) return false;
    if (op == op_id_of<aten::cat> || op == op_id_of<aten::stack>) {
      const auto* list = node.args.empty() ? nullptr : std::get_if<std::vector<ir::value_ref>>(&node.args[0]);
      if (list == nullptr) return false;
      // (cat promotes: an input of another dtype is converted first, by the map kernel)
      for (const ir::value_ref& r : *list) {
        const ir::tensor_meta& m = g[r.node].vals.front();
        if (m.rank() > static_cast<std::size_t>(max_rank)) return false;
        if (m.scalar_type != out.scalar_type &&
            (op != op_id_of<aten::cat> || !detail::map_readable(m.scalar_type) || !detail::map_readable(out.scalar_type)))
          return false;
      }
      return true;
    }
    for (std::size_t k = 0; k < node.args.size(); ++k) {
      if (const ir::tensor_meta* m = meta_of(node.args[k]); m != nullptr && (m->scalar_type != out.scalar_type || m->rank() > static_cast<std::size_t>(max_rank)))
        return false;
    }
    return true;
  }
  // (the data-dependent ops: nonzero of any dtype of 1, 2, 4 or 8 bytes, masked_select of such a
  // self with a bool mask; programs with them run on the stepwise engine, node by node)
  if (op == op_id_of<aten::nonzero> || op == op_id_of<aten::masked_select>) {
    const ir::tensor_meta* self = node.args.empty() ? nullptr : meta_of(node.args[0]);
    const std::size_t item = self == nullptr ? 0 : itemsize(self->scalar_type);
    return self != nullptr && self->rank() <= static_cast<std::size_t>(max_rank) && (item == 1 || item == 2 || item == 4 || item == 8);
  }
  // (masked_scatter: self and source of one dtype of 1, 2, 4 or 8 bytes, a bool mask; planned, its
  // result being self's shape)
  if (op == op_id_of<aten::masked_scatter>) {
    const ir::tensor_meta* self = node.args.size() < 3 ? nullptr : meta_of(node.args[0]);
    const ir::tensor_meta* mask = node.args.size() < 3 ? nullptr : meta_of(node.args[1]);
    const ir::tensor_meta* source = node.args.size() < 3 ? nullptr : meta_of(node.args[2]);
    const std::size_t item = itemsize(out.scalar_type);
    return self != nullptr && mask != nullptr && source != nullptr && mask->scalar_type == dtype::b8 &&
           self->scalar_type == out.scalar_type && source->scalar_type == out.scalar_type &&
           out.rank() <= static_cast<std::size_t>(max_rank) && self->rank() <= out.rank() && mask->rank() <= out.rank() &&
           (item == 1 || item == 2 || item == 4 || item == 8);
  }
  if (detail::chain_runs(g, node)) return true;
  if (detail::map_runs(g, node)) return true;
  if (detail::is_index_op(op)) return detail::index_runs(g, node);
  if (detail::is_loss_op(op)) return detail::loss_runs(g, node);
  const ir::tensor_meta* x = node.args.empty() ? nullptr : meta_of(node.args[0]);
  if (detail::is_reduction_op(op)) {
    if (x == nullptr || x->rank() > static_cast<std::size_t>(max_rank) || !detail::reduce_type_of(x->scalar_type)) return false;
    const std::optional<detail::reduction_call> r = detail::reduction(node, x->rank(), nullptr);
    return r.has_value() && detail::reduction_runs(r->kind, x->scalar_type, out.scalar_type);
  }
  if (op == op_id_of<scaled_dot_product_attention_op>) return detail::attention_runs(g, node);
  if (op == op_id_of<attention_stats_op> || op == op_id_of<attention_backward_op>) return detail::attention_backward_runs(g, node);
  if (detail::is_pool_op(op)) {  // (f32 or f64: the result and every tensor read of one dtype)
    if ((out.scalar_type != dtype::f32 && out.scalar_type != dtype::f64) || x == nullptr || (x->rank() != 3 && x->rank() != 4)) return false;
    for (const ir::argument& a : node.args) {
      if (const ir::tensor_meta* m = meta_of(a); m != nullptr && m->scalar_type != out.scalar_type) return false;
      if (std::holds_alternative<std::vector<ir::value_ref>>(a)) return false;
    }
    return true;
  }
  if (op == op_id_of<linear_op> || detail::is_matmul_op(op) || op == op_id_of<aten::conv2d>) {
    // (the products and convolutions: f32 or f64, the result and every tensor read of one dtype)
    if (out.scalar_type != dtype::f32 && out.scalar_type != dtype::f64) return false;
    for (const ir::argument& a : node.args) {
      if (const ir::tensor_meta* m = meta_of(a); m != nullptr && m->scalar_type != out.scalar_type) return false;
      if (std::holds_alternative<std::vector<ir::value_ref>>(a)) return false;
    }
    if (op == op_id_of<linear_op>) return true;
    if (op == op_id_of<aten::conv2d>) {
      const ir::tensor_meta* w = node.args.size() < 2 ? nullptr : meta_of(node.args[1]);
      return x != nullptr && w != nullptr && (x->rank() == 3 || x->rank() == 4) && w->rank() == 4;
    }
    const ir::tensor_meta* y = node.args.size() < 2 ? nullptr : meta_of(node.args[1]);
    return x != nullptr && y != nullptr && x->rank() >= 1 && y->rank() >= 1 && out.rank() <= static_cast<std::size_t>(max_rank);
  }
  // (the other kernels compute in f32: every tensor read and the result; bits of another dtype
  // read as f32 would be wrong numbers, a bool read as f32 four times its bytes)
  if (out.scalar_type != dtype::f32) return false;
  for (const ir::argument& a : node.args) {
    if (const ir::tensor_meta* m = meta_of(a); m != nullptr && m->scalar_type != dtype::f32) return false;
    if (std::holds_alternative<std::vector<ir::value_ref>>(a)) return false;
  }
  if (op == op_id_of<layer_norm_op>) return x != nullptr;
  if (op == op_id_of<aten::group_norm>) return x != nullptr && x->rank() >= 2;
  if (op == op_id_of<batch_norm_op>) {  // (evaluation mode, with running statistics: training mode writes buffers)
    const detail::call_of c(node, nullptr);
    return x != nullptr && x->rank() >= 2 && c.args.has(3) && c.args.has(4) && !c.args.flag(5);
  }
  return false;  // (pointwise ops: chain_runs and map_runs above)
}

namespace detail {

// A plan for one set of input extents: its arena, its input slots, its records and its graph.
struct cuda_plan {
  std::vector<std::vector<index_t>> extents;  // the inputs' (the key)
  storage arena, slots, workspace;  // (workspace: cuBLASLt's, on a GPU)
  storage dnn_workspace;            // (cuDNN's: the most its convolutions' algorithms chose)
  std::size_t dnn_workspace_bytes = 0;
  std::vector<std::size_t> slot_offsets;
  std::list<lt_matmul> products;              // (a list: records hold indices, the objects never move)
  std::vector<lt_matmul*> product_at;
  std::vector<record> records;
  std::vector<storage> uploaded;              // folded values of this plan, on the device
  struct output {
    dtype dt;
    std::vector<index_t> extents;
    const std::byte* at;
  };
  std::vector<output> outputs;
  plan::report report;
  std::unique_ptr<captured_work> graph;
  bool graph_tried = false;
  // (plans with index ops, class losses or masked_scatter: the word their kernels raise on an index
  // out of range or a source too short, zeroed by the first record of every call, and what each
  // code reports: the node and its fault)
  storage error_word;
  std::vector<std::string> error_names;
  // (plans with random ops: each call's draws (seed, offset), taken in step order and copied here
  // before the records run, where the kernels read them)
  storage draw_slot;
  std::vector<std::uint64_t> draws;
};

// The device copies of one compiled program's weights, keyed by the host tensor's bytes: a program
// whose recorded shapes are not trusted has two engines (kit::checked_engine: the stepwise one for
// each new set of extents, the planned one after), and they share one upload, as tied names share
// one within an engine. Filled while make_engine_on makes them, then dropped (each engine keeps the
// copies it uses).
struct weight_uploads {
  std::vector<std::pair<const void*, any_tensor>> copies;
  // `host` on `rt`, uploaded once (synchronized: the copy may be read from another stream of the
  // device, the planned engine's)
  // (the same bytes seen as the same tensor: a view of them with other extents or another dtype is
  // a copy of its own)
  any_tensor get(const any_tensor& host, const std::shared_ptr<device_runtime>& rt) {
    if (const any_tensor* d = find(host)) return *d;
    any_tensor d = to_device(host, rt);
    copies.emplace_back(host.raw_data(), d);
    return d;
  }
  const any_tensor* find(const any_tensor& host) const noexcept {
    for (const auto& [h, d] : copies)
      if (h == host.raw_data() && d.scalar_type() == host.scalar_type() && d.extents() == host.extents()) return &d;
    return nullptr;
  }
};

// conv_engine::cudnn runs through cuDNN the convolutions whose kernel window is no larger than their
// output (the forward's, the input gradient's), and typex's split-K kernel the others: a weight
// gradient, which the derivative writes as a convolution whose kernel is the output gradient (a
// reduction over whole images into a kernel-sized output), is slow in cuDNN's forward algorithms:
// on an H100 the reference CNN's training step with every convolution through cuDNN took 2.7x
// (batch 32) and 5.4x (batch 256) the time of typex's kernel, though cuDNN's forward convolutions
// were the faster ones (docs/cuda_backend.md).
constexpr bool cudnn_suits(const conv_params& cp) noexcept { return !cp.f64 && cp.kh * cp.kw <= cp.oh * cp.ow; }

// conv_engine::cudnn in a build without cuDNN: refused when the engine is made (planned or run
// node by node), before anything is uploaded.
inline void check_conv_engine([[maybe_unused]] const compile_options& o) {
#if !defined(TYPEX_CUDNN)
  if (o.convolutions == conv_engine::cudnn) {
    typex::detail::raise_message<unsupported_error>(
        "typex::cuda: compile_options::convolutions is conv_engine::cudnn, but this build of typex's CUDA engine has no cuDNN "
        "(configure with -DTYPEX_CUDNN=ON where cuDNN is installed; cuda::has_cudnn() says which build this is)");
  }
#endif
}

class planned_engine final : public kit::engine, private plan::target {
 public:
  static constexpr std::size_t lt_workspace_bytes = std::size_t{32} << 20;  // (32 MiB: cuBLASLt's guidance for Hopper)

  // rt: the runtime the engine runs on (its stream); out: the one its outputs are allocated from (the
  // caller's: an output the user keeps does not keep the engine's stream and pool alive).
  // shared: weights another engine of this program uploaded already (a program not trusted), or null
  planned_engine(program_binding b, compile_options o, std::shared_ptr<device_runtime> rt, std::shared_ptr<device_runtime> out,
                 const weight_uploads* shared = nullptr)
      : binding_(std::move(b)), options_(std::move(o)), rt_(std::move(rt)), memory_(rt_), out_memory_(std::move(out)),
        planner_(*binding_.graph, binding_.inputs, binding_.constants, {options_.fuse}) {
    check_conv_engine(options_);
    // the weights, uploaded once (tied names share one upload)
    for (const auto& [id, t] : binding_.constants) upload_constant(t, shared);
  }

  // (work of a call that threw may still be running on the engine's stream: it ends before the
  // plans' memory and the weights, some of them the caller's runtime's (weight_uploads), go back)
  ~planned_engine() override {
    try {
      rt_->synchronize();
    } catch (...) {  // (a device error was reported by the call that caused it)
    }
  }

  bool planned_for(std::span<const any_tensor> inputs) const noexcept override { return find(inputs) != nullptr; }

  void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) override {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      // (the device tag, then the runtime behind the bytes: an emulated device's tensor is host memory,
      // which a GPU must never be given, though both say cuda:0)
      if (inputs[i].device() != rt_->where()) wrong_device(i, inputs[i]);
      const device_info& in = detail::runtime_of(inputs[i].get_storage(), "typex::cuda: an input")->info();
      if (in.emulated != rt_->info().emulated) wrong_device(i, inputs[i]);
    }
    cuda_plan* p = find(inputs);
    if (p == nullptr) p = &make_plan(inputs, symbols);
    touch(*p);
    // the inputs into their fixed slots
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].nbytes() != 0) rt_->copy_on_device(p->slots.data() + p->slot_offsets[i], inputs[i].raw_data(), inputs[i].nbytes());
    // this call's draws, one per random op in step order (as the Eigen backend takes them)
    for (std::size_t k = 0; k < p->draws.size(); k += 2) {
      const rng_state d = take_draw();
      p->draws[k] = d.seed;
      p->draws[k + 1] = d.offset;
    }
    if (!p->draws.empty()) rt_->copy_to_device(p->draw_slot.data(), p->draws.data(), p->draws.size() * sizeof(std::uint64_t));
    if (options_.graphs && !rt_->info().emulated && !p->graph_tried) {
      p->graph_tried = true;
      try {
        p->graph = rt_->capture([&] { run_records(*p); });  // (captured, not run: replayed below)
      } catch (const device_error&) {
        p->graph = nullptr;  // (a plan that cannot be captured runs its records each call)
      }
    }
    if (p->graph) p->graph->replay();
    else run_records(*p);
    outputs.resize(p->outputs.size());
    bool allocated = false;
    for (std::size_t i = 0; i < p->outputs.size(); ++i) {
      const cuda_plan::output& o = p->outputs[i];
      any_tensor& t = outputs[i];
      if (t.scalar_type() != o.dt || t.extents() != o.extents || t.device() != rt_->where() || t.get_storage().use_count() > 1) {
        t = out_memory_.make_tensor(o.dt, o.extents);
        allocated = true;
      }
    }
    // (memory from the caller's stream-ordered pool is this stream's to write once that stream has
    // reached the allocation)
    if (allocated && out_memory_.runtime() != rt_) out_memory_.synchronize();
    for (std::size_t i = 0; i < p->outputs.size(); ++i)
      if (outputs[i].nbytes() != 0) rt_->copy_on_device(outputs[i].raw_data(), p->outputs[i].at, outputs[i].nbytes());
    rt_->synchronize();  // (a failure of the call is reported by the call)
    if (!p->error_names.empty()) {
      int code = 0;
      rt_->copy_to_host(&code, p->error_word.data(), sizeof code);
      rt_->synchronize();
      if (code > 0) {
        const std::string& fault = p->error_names[static_cast<std::size_t>(code - 1) % p->error_names.size()];
        typex::detail::raise<argument_error>([&](auto& w) {
          w.put("typex::cuda: "); w.put(fault); w.put(" (no result of this call is valid)");
        });
      }
    }
  }

  plan::report report() const override { return plans_.empty() ? plan::report{} : plans_.front()->report; }

 private:
  // ---- plans ------------------------------------------------------------------------------------

  cuda_plan* find(std::span<const any_tensor> inputs) const noexcept {
    for (const auto& p : plans_) {
      bool same = p->extents.size() == inputs.size();
      for (std::size_t i = 0; same && i < inputs.size(); ++i) same = p->extents[i] == inputs[i].extents();
      if (same) return p.get();
    }
    return nullptr;
  }
  void touch(cuda_plan& p) {  // (most recently used first)
    const auto it = std::find_if(plans_.begin(), plans_.end(), [&](const auto& q) { return q.get() == &p; });
    if (it != plans_.begin()) std::rotate(plans_.begin(), it, it + 1);
  }

  cuda_plan& make_plan(std::span<const any_tensor> inputs, const symbol_table& symbols) {
    auto p = std::make_unique<cuda_plan>();
    building_ = p.get();
    pending_.clear();
    converted_.clear();
    // slots for the inputs (each at a 256-byte boundary), allocated before the plan's arena
    std::size_t at = 0;
    for (const any_tensor& t : inputs) {
      p->slot_offsets.push_back(at);
      at += (t.nbytes() + 255) / 256 * 256;
      p->extents.push_back(t.extents());
    }
    error_names_.clear();
    draws_ = 0;
    planner_.plan(inputs, symbols, *this);
    p->slots = memory_.allocate(at);
    if (draws_ > 0) {
      p->draw_slot = memory_.allocate(draws_ * 2 * sizeof(std::uint64_t));
      p->draws.assign(draws_ * 2, 0);
    }
    if (!error_names_.empty()) {
      p->error_word = memory_.allocate(sizeof(int));
      p->error_names = error_names_;
      record z;
      z.what = record::zero{p->error_word.data(), sizeof(int)};
      z.name = "the device checks";
      p->records.push_back(std::move(z));
    }
    p->arena = memory_.allocate(planner_.arena().peak());
    // cuBLASLt's workspace (a GPU's algorithms may use up to this much; the emulator's model none)
    if (!p->products.empty() && !rt_->info().emulated) p->workspace = memory_.allocate(lt_workspace_bytes);
    if (p->dnn_workspace_bytes > 0) p->dnn_workspace = memory_.allocate(p->dnn_workspace_bytes);
    // addresses are known now: every record's operands, then the outputs
    for (auto& make : pending_) p->records.push_back(make());
    pending_.clear();
    converted_.clear();
    for (ir::node_id o : planner_.outputs()) {
      const plan::value& v = planner_.at(o);
      p->outputs.push_back({v.dt, v.extents, address(v.at)});
    }
    p->report = planner_.summary();
    building_ = nullptr;
    plans_.insert(plans_.begin(), std::move(p));
    if (plans_.size() > std::max<std::size_t>(options_.max_plans, 1)) plans_.pop_back();  // (its graph and arena go with it)
    return *plans_.front();
  }

  void run_records(cuda_plan& p) { run_records_on(*rt_, p.records, p.product_at, p.arena, rt_->info().emulated); }

  // ---- addresses --------------------------------------------------------------------------------

  std::byte* address(const plan::location& at) {
    switch (at.kind) {
      case plan::location::where::arena: return building_->arena.data() + planner_.arena().offset(at.index);
      case plan::location::where::input: return building_->slots.data() + building_->slot_offsets[at.index];
      case plan::location::where::constant: return constant(*at.tensor);
      case plan::location::where::none: break;
    }
    typex::detail::raise_message<ir::graph_error>("typex::cuda: a value without a location (a bug in the lowering)");
  }
  // A host constant's device copy: uploaded when the engine was made, or (a value folded at
  // planning time) now, kept with the plan.
  std::byte* constant(const any_tensor& t) {
    for (const auto& [host, dev] : weights_)
      if (host == t.raw_data() && dev.bytes() >= t.nbytes()) return dev.data();
    any_tensor d = memory_.copy_of(t);
    building_->uploaded.push_back(d.get_storage());
    return d.raw_data();
  }
  void upload_constant(const any_tensor& t, const weight_uploads* shared) {
    for (const auto& [host, dev] : weights_)
      if (host == t.raw_data()) return;
    if (const any_tensor* up = shared ? shared->find(t) : nullptr) {
      weights_.emplace_back(t.raw_data(), up->get_storage());
      return;
    }
    any_tensor d = memory_.copy_of(t);
    weights_.emplace_back(t.raw_data(), d.get_storage());
  }

  // ---- plan::target -----------------------------------------------------------------------------

  any_tensor evaluate(const ir::node& node, std::span<const any_tensor* const> args, std::span<const any_tensor* const> list,
                      const symbol_table& symbols) override {
    const eigen::kernel_fn k = eigen::find_kernel(node.target);
    if (k == nullptr) {
      typex::detail::raise<unsupported_error>([&](auto& w) {
        w.put("typex::cuda: node '"); w.put(node.name); w.put("' ("); w.put(node.target.name());
        w.put(") reads only constants and is folded at planning time on the host, where no kernel runs it");
      });
    }
    return k(ir::call_args(node.target, node.args, args, &symbols, list));
  }
  bool is_activation(const ir::node& node, const symbol_table& symbols) override {
    if (node.op != ir::node_op::call_function || node.vals.front().scalar_type != dtype::f32) return false;
    std::vector<const any_tensor*> none(node.args.size(), nullptr);
    return encode_unary(node.target, ir::call_args(node.target, node.args, none, &symbols)).has_value();
  }
  bool fuses(dtype dt) const override { return dt == dtype::f32; }
  // (matmul, mm and bmm read transposed and batch-strided operands in place: cuBLASLt's layouts)
  bool reads_strided(const ir::graph&, const ir::node& reader) override { return detail::is_matmul_op(reader.target); }
  std::size_t max_chain() const override { return max_links - 1; }  // (the head takes a link)

  bool lower(plan::planner& p, plan::step_plan& s) override {
    const ir::node& node = p.graph()[s.node];
    s.pool = plan::no_node;  // (no pooled epilogues on this backend yet: the pool runs as its own step)
    if (node.target == op_id_of<linear_op>) return lower_linear(p, s), true;
    if (detail::is_copy_op(node.target)) return lower_copy(p, s), true;
    if (node.target == op_id_of<copy_op>) {  // (with a dtype change: a conversion)
      const plan::value* src = p.arg(node, 1);
      if (src != nullptr && src->dt != p.at(s.node).dt) return lower_map(p, s), true;
    }
    if (detail::is_gather_op(node.target)) return lower_gather(p, s), true;
    if (detail::is_index_op(node.target)) return lower_index(p, s), true;
    if (node.target == op_id_of<aten::masked_scatter>) return lower_masked_scatter(p, s), true;
    if (detail::is_loss_op(node.target)) return lower_loss(p, s), true;
    if (!detail::chain_runs(p.graph(), node) && detail::map_runs(p.graph(), node)) return lower_map(p, s), true;
    if (detail::is_matmul_op(node.target)) return lower_matmul(p, s), true;
    if (node.target == op_id_of<layer_norm_op> || node.target == op_id_of<aten::group_norm> || node.target == op_id_of<batch_norm_op>)
      return lower_norm(p, s), true;
    if (node.target == op_id_of<aten::conv2d>) return lower_conv(p, s), true;
    if (node.target == op_id_of<scaled_dot_product_attention_op> || node.target == op_id_of<attention_stats_op> ||
        node.target == op_id_of<attention_backward_op>)
      return lower_attention(p, s), true;
    if (detail::is_pool_op(node.target)) return lower_pool(p, s), true;
    if (detail::is_reduction_op(node.target)) {
      const plan::value* x = p.arg(node, 0);
      if (const std::optional<detail::reduction_call> r = detail::reduction(node, x->extents.size(), &p.symbols()))
        return lower_reduction(p, s, *r), true;
      return false;
    }
    return lower_chain(p, s);
  }
  void lower_kernel(plan::planner&, ir::node_id n) override {
    const ir::node& node = planner_.graph()[n];
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex::cuda: node '"); w.put(node.name); w.put("' ("); w.put(node.target.name());
      w.put(") has no CUDA kernel for its arguments");
    });
  }

  static std::string name_of(const ir::node& n) {
    std::string s = "node '";
    s += n.name;
    s += "' (";
    s += n.target.name();
    s += ')';
    return s;
  }

  // linear: Y[m, n] = X[m, k] W[n, k]ᵀ + b through cuBLASLt (lt.hpp: its A is W, its B is X), with
  // the activation after it in the product's epilogue where cuBLASLt has it (relu; tanh GELU) and
  // the bias there where it has a value per output feature. What the epilogue cannot do runs right
  // after, in place, as one chain kernel over Y viewed as [m, n]: a bias of one element
  // (broadcast), the other activations (exact GELU: cuBLASLt's GELU is the tanh form). A product
  // over k = 0 is zeros (then the bias and the activation).
  void lower_linear(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value* wt = p.arg(node, 1);
    const plan::value* b = p.arg(node, 2);
    const plan::value& y = p.at(s.node);
    const index_t k = x->extents.back(), n = wt->extents.front();
    index_t m = 1;
    for (std::size_t d = 0; d + 1 < x->extents.size(); ++d) m *= x->extents[d];
    const bool gemm = k > 0 && m > 0 && n > 0;
    // (f64 products take no epilogue: the bias and the activation run as a chain after them)
    const bool f64 = y.dt == dtype::f64;
    const bool bias_in_epilogue = b != nullptr && b->numel() == n && gemm && !f64;
    epilogue e = epilogue::none;
    std::optional<chain_link> act;
    if (s.epilogue != plan::no_node) {
      const ir::node& an = p.graph()[s.epilogue];
      const detail::call_of c(an, &p.symbols());
      const bool tanh_gelu = an.target == op_id_of<gelu_op> && c.args.has("approximate") && c.args.text("approximate") == "tanh";
      if (gemm && !f64 && (b == nullptr || bias_in_epilogue) && an.target == op_id_of<relu_op>) e = epilogue::relu;
      else if (gemm && !f64 && (b == nullptr || bias_in_epilogue) && tanh_gelu) e = epilogue::gelu_tanh;
      else act = encode_unary(an.target, c.args);
    }
    const std::string what = name_of(node);
    const plan::value* yv = &y;
    // a training forward's tanh GELU after the product, whose input the backward reads too: the
    // product writes the GELU's value (D) and keeps its input, y, as the epilogue's aux matrix
    ir::node_id gelu_node = plan::no_node;
    if (gemm && e == epilogue::none && !act && y.dt == dtype::f32 && p.opts().fuse && (b == nullptr || bias_in_epilogue) && n % 8 == 0)
      gelu_node = gelu_reader_of(p, s);
    if (gelu_node != plan::no_node) e = epilogue::gelu_tanh_aux;
    if (gemm) {
      cuda_plan& cp = *building_;
      cp.products.push_back(make_linear(m, n, k, e, bias_in_epilogue, y.dt, options_.matmul_precision));
      if (uses_aux(cp.products.back().epi)) cp.products.back().set_aux_for_query(n);
      if (gelu_node != plan::no_node && !rt_->can_matmul(cp.products.back(), lt_workspace_bytes)) {
        cp.products.back() = make_linear(m, n, k, epilogue::none, bias_in_epilogue, y.dt, options_.matmul_precision);
        gelu_node = plan::no_node;
      }
      const plan::value* dv = gelu_node != plan::no_node ? &p.also_compute(s, gelu_node) : yv;
      const plan::value* aux = gelu_node != plan::no_node ? yv : nullptr;
      const std::size_t product = cp.product_at.size();
      cp.product_at.push_back(&cp.products.back());
      pending_.push_back([this, x, wt, b, dv, aux, n, product, what, bias_in_epilogue] {
        record r;
        record::gemm g;
        g.product = product;
        g.args = row_major_operands(address(x->at), address(wt->at), address(dv->at));  // (swapped for cuBLAS there)
        g.args.workspace = building_->workspace.data();
        g.args.workspace_bytes = building_->workspace.bytes();
        if (bias_in_epilogue) {
          g.args.bias = address(b->at);
          building_->product_at[product]->set_bias_pointer(g.args.bias);
        }
        if (aux != nullptr) {  // (the GELU's input, y, written beside D)
          building_->product_at[product]->set_aux(address(aux->at), n);
          r.out2 = address(aux->at);
          r.out2_bytes = aux->bytes();
        }
        r.what = g;
        r.name = what;
        r.out = static_cast<std::byte*>(g.args.d);
        r.out_bytes = dv->bytes();
        return r;
      });
    } else {
      push_zero(*yv, what);
    }
    const bool bias_after = b != nullptr && !bias_in_epilogue;
    if (!bias_after && !act) return;
    const std::string after_name = act ? name_of(p.graph()[s.epilogue]) : what;
    pending_.push_back([this, yv, b, bias_after, act, m, n, f64, after_name] {
      chain_params c{};
      c.dtype = f64 ? chain_dtype::f64 : chain_dtype::f32;
      c.out = address(yv->at);
      set_extents(c, {m, n});
      add_operand(c, address(yv->at), {n, 1});
      if (bias_after) {
        chain_link add;
        add.kind = link_kind::add;
        add.operand = static_cast<std::int8_t>(c.n_operands);
        add_operand(c, address(b->at), {0, b->numel() == 1 ? 0 : 1});
        c.links[c.n_links++] = add;
      }
      if (act) c.links[c.n_links++] = *act;
      return kernel_record(chain_launch(c), after_name, static_cast<std::byte*>(c.out), yv->bytes());
    });
  }

  // transpose / permute: a strided copy into the result's buffer.
  void lower_copy(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    const std::vector<std::size_t> perm = plan::permutation(c.args, x->extents.size());
    const std::vector<index_t> base = plan::contiguous_strides(x->extents);
    std::vector<index_t> strides(perm.size());
    for (std::size_t d = 0; d < perm.size(); ++d) strides[d] = base[perm[d]];
    const std::string what = name_of(node);
    pending_.push_back([this, x, yv = &y, strides, what] {
      copy_params cp{};
      cp.dst = address(yv->at);
      cp.src = address(x->at);
      cp.itemsize = static_cast<int>(itemsize(yv->dt));
      cp.rank = static_cast<int>(yv->extents.size());
      cp.n = yv->numel();
      for (std::size_t d = 0; d < yv->extents.size(); ++d) {
        cp.extent[d] = yv->extents[d];
        cp.src_stride[d] = strides[d];
      }
      return kernel_record(copy_launch(cp), what, static_cast<std::byte*>(cp.dst), yv->bytes());
    });
  }

  // The reductions and softmax: one block per output row (kernels/reduce.cuh). Reduced dims that are
  // the input's trailing dims read the input as a contiguous [rows, cols] matrix; any other set is
  // read through strides (the kept dims' and the reduced dims').
  void lower_reduction(plan::planner& p, plan::step_plan& s, const detail::reduction_call& rc) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value& y = p.at(s.node);
    const std::vector<index_t>& e = x->extents;
    const std::vector<index_t> strides = plan::contiguous_strides(e);
    reduce_params r{};
    r.kind = rc.kind;
    r.type = *detail::reduce_type_of(x->dt);  // (supports() accepted the dtype)
    r.correction = rc.correction;
    r.rows = 1;
    r.cols = 1;
    std::vector<bool> reduced(e.size(), false);
    for (std::size_t d : rc.dims) reduced[d] = true;
    bool trailing = true;  // (the reduced dims are the last ones)
    for (std::size_t d = 0; d < e.size(); ++d) {
      if (reduced[d]) {
        r.cols *= e[d];
        r.red_extent[r.rank_red] = e[d];
        r.red_stride[r.rank_red++] = strides[d];
      } else {
        trailing = trailing && r.rank_red == 0;
        r.rows *= e[d];
        r.kept_extent[r.rank_kept] = e[d];
        r.kept_stride[r.rank_kept++] = strides[d];
      }
    }
    if (trailing) r.rank_kept = r.rank_red = 0;  // (the contiguous matrix)
    const std::string what = name_of(node);
    pending_.push_back([this, x, yv = &y, r, what]() mutable {
      r.in = address(x->at);
      if (r.kind == reduce_kind::argmax) r.index_out = reinterpret_cast<std::int64_t*>(address(yv->at));
      else r.out = address(yv->at);
      return kernel_record(reduce_launch(r), what, address(yv->at), yv->bytes());
    });
  }

  // layer_norm over the trailing dims the normalized shape names; group_norm over each image's
  // groups of channels; batch_norm in evaluation mode with its running statistics over each image's
  // channel planes: one block per row.
  void lower_norm(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const op_id op = node.target;
    const plan::value* x = p.arg(node, 0);
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    const std::vector<index_t>& e = x->extents;
    norm_params n{};
    const plan::value* w = nullptr;
    const plan::value* b = nullptr;
    const plan::value* rm = nullptr;
    const plan::value* rv = nullptr;
    index_t inner = 1;
    for (std::size_t d = 2; d < e.size(); ++d) inner *= e[d];
    if (op == op_id_of<layer_norm_op>) {
      w = p.arg(node, 2), b = p.arg(node, 3);
      const std::size_t k = c.args.ints("normalized_shape").size();
      n.eps = c.args.has("eps") ? c.args.real("eps") : 1e-5;
      n.rows = 1;
      n.cols = 1;
      for (std::size_t d = 0; d < e.size(); ++d) (d + k < e.size() ? n.rows : n.cols) *= e[d];
    } else if (op == op_id_of<aten::group_norm>) {
      w = p.arg(node, 2), b = p.arg(node, 3);
      n.kind = norm_kind::group;
      n.groups = c.args.integer(1);
      n.eps = c.args.has(4) ? c.args.real(4) : 1e-5;
      n.channels_per_group = e[1] / n.groups;
      n.inner = inner;
      n.rows = e[0] * n.groups;
      n.cols = n.channels_per_group * inner;
    } else {
      w = p.arg(node, 1), b = p.arg(node, 2), rm = p.arg(node, 3), rv = p.arg(node, 4);
      n.kind = norm_kind::batch_eval;
      n.eps = c.args.real(7);
      n.channels = e[1];
      n.rows = e[0] * e[1];
      n.cols = inner;
    }
    if (n.rows == 0) return;
    const std::string what = name_of(node);
    pending_.push_back([this, x, w, b, rm, rv, yv = &y, n, what]() mutable {
      n.in = reinterpret_cast<const float*>(address(x->at));
      n.weight = w != nullptr ? reinterpret_cast<const float*>(address(w->at)) : nullptr;
      n.bias = b != nullptr ? reinterpret_cast<const float*>(address(b->at)) : nullptr;
      n.running_mean = rm != nullptr ? reinterpret_cast<const float*>(address(rm->at)) : nullptr;
      n.running_var = rv != nullptr ? reinterpret_cast<const float*>(address(rv->at)) : nullptr;
      n.out = reinterpret_cast<float*>(address(yv->at));
      return kernel_record(norm_launch(n), what, address(yv->at), yv->bytes());
    });
  }

  // conv2d: the implicit GEMM (kernels/conv.cuh), the bias and the activation after it (the step's
  // epilogue) applied as the tile is stored.
  void lower_conv(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value* w = p.arg(node, 1);
    const plan::value* b = p.arg(node, 2);
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    const bool batched = x->extents.size() == 4;
    conv_params cp{};
    cp.f64 = y.dt == dtype::f64;
    cp.n = batched ? x->extents[0] : 1;
    cp.c = x->extents[batched ? 1 : 0];
    cp.h = x->extents[batched ? 2 : 1];
    cp.w = x->extents[batched ? 3 : 2];
    cp.oc = w->extents[0];
    cp.kh = w->extents[2];
    cp.kw = w->extents[3];
    cp.oh = y.extents[y.extents.size() - 2];
    cp.ow = y.extents.back();
    const auto stride = detail::pair_arg(c.args, 3, {1, 1}), pad = detail::pair_arg(c.args, 4, {0, 0}), dil = detail::pair_arg(c.args, 5, {1, 1});
    for (int d = 0; d < 2; ++d) cp.stride[d] = stride[d], cp.pad[d] = pad[d], cp.dil[d] = dil[d];
    cp.groups = c.args.has(6) ? c.args.integer(6) : 1;
    std::string what = name_of(node);
    if (s.epilogue != plan::no_node) {
      const ir::node& an = p.graph()[s.epilogue];
      if (const std::optional<chain_link> act = encode_unary(an.target, detail::call_of(an, &p.symbols()).args)) {
        cp.has_act = true;
        cp.act = *act;
      } else {
        s.epilogue = plan::no_node;  // (not reached: is_activation accepted it)
      }
    }
    if (cp.n * cp.oh * cp.ow == 0 || cp.oc == 0) return;  // (an empty result: nothing to write)
#if defined(TYPEX_CUDNN)
    if (options_.convolutions == conv_engine::cudnn && cudnn_suits(cp)) return lower_conv_cudnn(cp, x, w, b, &y, std::move(what));
#endif
    // (few output tiles over a long reduction: K split over more blocks, launch.hpp's conv_k_splits)
    cp.k_splits = conv_k_splits(cp);
    const plan::location partial =
        cp.k_splits > 1 ? p.scratch(static_cast<std::size_t>(cp.k_splits) * static_cast<std::size_t>(y.numel()) * itemsize(y.dt), s.node)
                        : plan::location{};
    // (one record, or with split K two: the stretches into `partial`, then the finish into y)
    for (const bool finish : {false, true}) {
      if (finish && cp.k_splits == 1) break;
      pending_.push_back([this, x, w, b, yv = &y, cp, partial, what, finish]() mutable {
        cp.in = address(x->at);
        cp.weight = address(w->at);
        cp.bias = b != nullptr ? address(b->at) : nullptr;
        cp.out = address(yv->at);
        if (cp.k_splits > 1) cp.partial = address(partial);
        cp.finish = finish;
        const bool to_partial = cp.k_splits > 1 && !finish;
        return kernel_record(conv_launch(cp), what, to_partial ? address(partial) : address(yv->at),
                             to_partial ? static_cast<std::size_t>(cp.k_splits) * yv->bytes() : yv->bytes());
      });
    }
  }

#if defined(TYPEX_CUDNN)
  // conv2d through cuDNN (dnn.hpp): the descriptors built now, the algorithm chosen by the device now
  // (once per shape for the process), its workspace reserved with the plan; then, where the step has a
  // bias or an activation, conv.cuh's finish pass over the result in place (one thread per element).
  void lower_conv_cudnn(conv_params cp, const plan::value* x, const plan::value* w,
                        const plan::value* b, const plan::value* yv, std::string what) {
    conv_geometry g;
    g.n = cp.n, g.c = cp.c, g.h = cp.h, g.w = cp.w, g.oc = cp.oc, g.kh = cp.kh, g.kw = cp.kw, g.oh = cp.oh, g.ow = cp.ow;
    for (int d = 0; d < 2; ++d) g.stride[d] = cp.stride[d], g.pad[d] = cp.pad[d], g.dil[d] = cp.dil[d];
    g.groups = cp.groups;
    const bool tf32 = options_.matmul_precision != matmul_precision::f32;
    auto conv = std::make_shared<dnn_convolution>(
        dnn_convolution::build(g, dtype::f32, tf32, detail::conv_label(g, dtype::f32, tf32) + " of " + what));
    const std::size_t ws = rt_->choose_convolution(*conv, what);
    building_->dnn_workspace_bytes = std::max(building_->dnn_workspace_bytes, ws);
    pending_.push_back([this, conv = std::shared_ptr<const dnn_convolution>(conv), x, w, yv, what] {
      record r;
      record::dnn d{conv, {}};
      d.args.x = address(x->at);
      d.args.w = address(w->at);
      d.args.y = address(yv->at);
      d.args.workspace = building_->dnn_workspace.data();
      d.args.workspace_bytes = building_->dnn_workspace.bytes();
      r.what = std::move(d);
      r.name = what;
      r.out = address(yv->at);
      r.out_bytes = yv->bytes();
      return r;
    });
    if (b == nullptr && !cp.has_act) return;
    cp.k_splits = 1;
    cp.finish = true;
    pending_.push_back([this, b, yv, cp, what]() mutable {
      cp.out = address(yv->at);
      cp.partial = cp.out;  // (in place: each element read, then written, by one thread)
      cp.bias = b != nullptr ? address(b->at) : nullptr;
      return kernel_record(conv_launch(cp), what + " (its bias and activation)", address(yv->at), yv->bytes());
    });
  }
#endif

  // scaled_dot_product_attention: the fused kernel (kernels/attention.cuh), one launch; the batch
  // dims of query, key, value and mask broadcast to the output's (right-aligned, as matmul's), the
  // mask's last two dims to [L, S].
  void lower_attention(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const op_id op = node.target;
    const bool stats = op == op_id_of<attention_stats_op>, backward = op == op_id_of<attention_backward_op>;
    // (the operands by the op's schema: sdpa (q, k, v, mask, ...); attention_stats (q, k, grad, out,
    // mask, ...); the backward (grad, q, k, v, stats, mask, ...))
    const std::size_t first = backward ? 1 : 0, mask_at = backward ? 5 : stats ? 4 : 3;
    const plan::value* q = p.arg(node, first);
    const plan::value* k = p.arg(node, first + 1);
    const plan::value* v = stats ? k : p.arg(node, first + 2);  // (the statistics read no values)
    const plan::value* grad = stats ? p.arg(node, 2) : backward ? p.arg(node, 0) : nullptr;
    const plan::value* fwd_out = stats ? p.arg(node, 3) : nullptr;
    const plan::value* st = backward ? p.arg(node, 4) : nullptr;
    const plan::value* mask = node.args.size() > mask_at ? p.arg(node, mask_at) : nullptr;
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    attention_params ap{};
    if (stats) ap.pass = attention_pass::stats;
    const std::int64_t which = backward ? c.args.integer(8) : -1;
    if (backward) ap.pass = which == 0 ? attention_pass::grad_query : which == 1 ? attention_pass::grad_key : attention_pass::grad_value;
    const std::vector<index_t>& shaped = grad != nullptr ? grad->extents : y.extents;  // (the output's shape)
    const std::size_t rank = shaped.size(), batch_rank = rank - 2;
    ap.batch_rank = static_cast<int>(batch_rank);
    ap.l = shaped[rank - 2];
    ap.ev = shaped[rank - 1];
    ap.s = k->extents[k->extents.size() - 2];
    ap.e = q->extents.back();
    for (std::size_t d = 0; d < batch_rank; ++d) ap.batch_extent[d] = shaped[d], ap.batches *= shaped[d];
    // (an operand's batch stride along output batch dim d: 0 where it has no such dim or extent 1)
    const auto batch_strides = [&](const std::vector<index_t>& ext, std::int64_t* stride, std::size_t trailing) {
      std::int64_t step = 1;
      for (std::size_t t = 0; t < trailing && t < ext.size(); ++t) step *= ext[ext.size() - 1 - t];
      const std::size_t own = ext.size() > trailing ? ext.size() - trailing : 0;
      for (std::size_t d = batch_rank; d-- > 0;) {
        const std::size_t from_end = batch_rank - 1 - d;
        if (from_end >= own) { stride[d] = 0; continue; }
        const index_t extent = ext[own - 1 - from_end];
        stride[d] = extent == 1 ? 0 : step;
        step *= extent;
      }
    };
    batch_strides(q->extents, ap.q_batch_stride, 2);
    batch_strides(k->extents, ap.k_batch_stride, 2);
    batch_strides(v->extents, ap.v_batch_stride, 2);
    if (mask != nullptr) {
      const std::vector<index_t>& me = mask->extents;
      ap.mask_kind = mask->dt == dtype::b8 ? attention_mask::boolean : attention_mask::additive;
      // (the mask's [L, S] dims, right-aligned: extent 1 or missing broadcasts)
      const index_t cols = !me.empty() ? me.back() : 1, rows = me.size() >= 2 ? me[me.size() - 2] : 1;
      ap.mask_col_stride = cols == 1 ? 0 : 1;
      ap.mask_row_stride = rows == 1 ? 0 : cols;
      batch_strides(me, ap.mask_batch_stride, 2);
    }
    ap.causal = c.args.flag_or_default("is_causal");
    ap.scale = static_cast<float>(c.args.has("scale") ? c.args.real("scale") : 1.0 / std::sqrt(static_cast<double>(ap.e)));
    const std::string what = name_of(node);
    if (y.numel() == 0) return;  // (an empty result: nothing to write)
    if (ap.l == 0 || ap.s == 0) {  // (no queries or no keys: a gradient of zeros)
      push_zero(y, what);
      if (!stats || ap.l == 0) return;  // (statistics over no keys: -inf and grad . out, by the kernel)
    }
    // the key's and the value's gradients of the same call: one pass writes both (the other's node
    // is this step's second result)
    const plan::value* kv_other = nullptr;
    if ((which == 1 || which == 2) && p.opts().fuse) {
      const ir::node_id other = attention_kv_sibling(p, s, 3 - which);
      if (other != plan::no_node) {
        kv_other = &p.also_compute(s, other);
        ap.pass = attention_pass::grad_key_value;
      }
    }
    const bool key_here = which == 1;
    pending_.push_back([this, q, k, v, mask, grad, fwd_out, st, yv = &y, kv_other, key_here, ap, what]() mutable {
      ap.q = reinterpret_cast<const float*>(address(q->at));
      ap.k = reinterpret_cast<const float*>(address(k->at));
      ap.v = reinterpret_cast<const float*>(address(v->at));
      ap.mask = mask != nullptr ? static_cast<const void*>(address(mask->at)) : nullptr;
      ap.grad = grad != nullptr ? reinterpret_cast<const float*>(address(grad->at)) : nullptr;
      ap.fwd_out = fwd_out != nullptr ? reinterpret_cast<const float*>(address(fwd_out->at)) : nullptr;
      ap.stats = st != nullptr ? reinterpret_cast<const float*>(address(st->at)) : nullptr;
      if (kv_other == nullptr) {
        ap.out = reinterpret_cast<float*>(address(yv->at));
        return kernel_record(attention_launch(ap), what, address(yv->at), yv->bytes());
      }
      // (the key's gradient to out, the value's to out2, whichever of the two nodes this step is)
      const plan::value* key = key_here ? yv : kv_other;
      const plan::value* value = key_here ? kv_other : yv;
      ap.out = reinterpret_cast<float*>(address(key->at));
      ap.out2 = reinterpret_cast<float*>(address(value->at));
      record r = kernel_record(attention_launch(ap), what, address(key->at), key->bytes());
      r.out2 = address(value->at);
      r.out2_bytes = value->bytes();
      return r;
    });
  }

  // The backward node of the same attention call (the same gradient, operands, statistics, mask and
  // scalars) that computes input `which` (1: the key's gradient, 2: the value's), not yet planned:
  // the key's and value's pass computes both. no_node: none.
  ir::node_id attention_kv_sibling(const plan::planner& p, const plan::step_plan& s, std::int64_t which) const {
    const ir::graph& g = p.graph();
    const ir::node& node = g[s.node];
    const auto* st = std::get_if<ir::value_ref>(&node.args[4]);
    if (st == nullptr) return plan::no_node;
    const auto same = [](const ir::argument& a, const ir::argument& b) {
      return a.index() == b.index() && std::visit(
                                           [&](const auto& x) {
                                             using X = std::decay_t<decltype(x)>;
                                             if constexpr (std::equality_comparable<X>) return x == std::get<X>(b);
                                             else return false;
                                           },
                                           a);
    };
    for (const ir::node_id u : p.users(st->node)) {
      const ir::node& n = g[u];
      if (u == s.node || n.op != ir::node_op::call_function || n.target != op_id_of<attention_backward_op> || n.args.size() != node.args.size() ||
          !p.claimable(s, u))
        continue;
      bool match = true;
      for (std::size_t a = 0; a < n.args.size() && match; ++a)
        match = a == 8 ? std::holds_alternative<std::int64_t>(n.args[a]) && std::get<std::int64_t>(n.args[a]) == which : same(n.args[a], node.args[a]);
      if (match && n.vals.front().scalar_type == node.vals.front().scalar_type) return u;
    }
    return plan::no_node;
  }

  // max_pool2d, avg_pool2d, adaptive_avg_pool2d: a thread per output element; the output's extents
  // are the planner's (the op's shape rule). Their backward ops (grad_output, self, the pool's
  // arguments): a thread per input element.
  void lower_pool(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const op_id op = node.target;
    const bool backward = detail::is_pool_backward_op(op);
    const plan::value* g = backward ? p.arg(node, 0) : nullptr;
    const plan::value* x = p.arg(node, backward ? 1 : 0);
    const plan::value& y = p.at(s.node);
    const plan::value& small = backward ? *g : y;  // (the pooled extents)
    const detail::call_of c(node, &p.symbols());
    const std::size_t r = x->extents.size(), at = backward ? 1 : 0;  // (at: the pool's arguments start after grad_output)
    pool_params pp{};
    pp.f64 = y.dt == dtype::f64;
    pp.h = x->extents[r - 2];
    pp.w = x->extents[r - 1];
    pp.oh = small.extents[r - 2];
    pp.ow = small.extents[r - 1];
    pp.planes = 1;
    for (std::size_t d = 0; d + 2 < r; ++d) pp.planes *= x->extents[d];
    if (op == op_id_of<aten::adaptive_avg_pool2d> || op == op_id_of<aten::_adaptive_avg_pool2d_backward>) {
      pp.kind = backward ? pool_kind::adaptive_avg_backward : pool_kind::adaptive_avg;
    } else {
      const bool mx = op == op_id_of<aten::max_pool2d> || op == op_id_of<max_pool2d_backward_op>;
      pp.kind = mx ? (backward ? pool_kind::max_backward : pool_kind::max) : (backward ? pool_kind::avg_backward : pool_kind::avg);
      const auto k = detail::pair_arg(c.args, at + 1, {1, 1});
      const auto st = detail::pair_arg(c.args, at + 2, k);  // (stride=[]: the kernel's)
      const auto pad = detail::pair_arg(c.args, at + 3, {0, 0});
      const auto dil = mx ? detail::pair_arg(c.args, at + 4, {1, 1}) : std::array<std::int64_t, 2>{1, 1};
      for (int d = 0; d < 2; ++d) pp.k[d] = k[d], pp.stride[d] = st[d], pp.pad[d] = pad[d], pp.dil[d] = dil[d];
      if (!mx) {
        pp.include_pad = c.args.flag_or_default("count_include_pad");
        pp.divisor = c.args.has("divisor_override") ? c.args.integer("divisor_override") : 0;
      }
    }
    if (pp.planes * pp.h * pp.w == 0 || pp.oh * pp.ow == 0) {
      if (backward && y.bytes() != 0) {  // (no window: a zero gradient)
        push_zero(y, name_of(node));
      }
      return;
    }
    const std::string what = name_of(node);
    pending_.push_back([this, x, g, yv = &y, pp, what]() mutable {
      pp.in = address(x->at);
      pp.grad = g != nullptr ? address(g->at) : nullptr;
      pp.out = address(yv->at);
      return kernel_record(pool_launch(pp), what, address(yv->at), yv->bytes());
    });
  }

  // One strided copy of a value's elements into (a slice of) a buffer.
  struct copy_piece {
    const plan::value* src;
    std::int64_t src_offset = 0;              // elements
    std::vector<index_t> extents, src_strides;
    std::int64_t dst_offset = 0;              // elements
    std::vector<index_t> dst_strides;         // (empty: contiguous)
  };
  // (dt: the elements' dtype; dst_bytes: the bytes at dst_at the copies may write)
  void push_copies(const std::vector<copy_piece>& pieces, dtype dt, plan::location dst_at, std::size_t dst_bytes, const std::string& what) {
    for (const copy_piece& cp : pieces) {
      index_t n = 1;
      for (index_t e : cp.extents) n *= e;
      if (n == 0) continue;
      pending_.push_back([this, cp, dt, dst_at, dst_bytes, what] {
        copy_params c{};
        const std::size_t item = itemsize(dt);
        c.src = address(cp.src->at) + cp.src_offset * static_cast<std::int64_t>(item);
        std::byte* base = address(dst_at);
        c.dst = base + cp.dst_offset * static_cast<std::int64_t>(item);
        c.itemsize = static_cast<int>(item);
        c.rank = static_cast<int>(cp.extents.size());
        c.n = 1;
        for (std::size_t d = 0; d < cp.extents.size(); ++d) {
          c.extent[d] = cp.extents[d];
          c.src_stride[d] = cp.src_strides[d];
          c.n *= cp.extents[d];
          if (!cp.dst_strides.empty()) c.dst_stride[d] = cp.dst_strides[d];
        }
        c.dst_strided = !cp.dst_strides.empty();
        return kernel_record(copy_launch(c), what, base, dst_bytes);
      });
    }
  }

  // A record that zeroes `bytes` at `at` (scratch a kernel adds into), or value y (a result with
  // nothing to sum: its location read when the records are made, as every record reads it).
  static record zero_record(std::byte* at, std::size_t bytes, const std::string& what) {
    record r;
    r.what = record::zero{at, bytes};
    r.name = what;
    r.out = at;
    r.out_bytes = bytes;
    return r;
  }
  void push_zero_at(plan::location at, std::size_t bytes, const std::string& what) {
    pending_.push_back([this, at, bytes, what] { return zero_record(address(at), bytes, what); });
  }
  void push_zero(const plan::value& y, const std::string& what) {
    pending_.push_back([this, yv = &y, what] { return zero_record(address(yv->at), yv->bytes(), what); });
  }

  // `v` converted to `dt` (the map kernel's convert) into scratch of node n, as a value of the plan
  // being made (kept in converted_ until its records are made).
  const plan::value& converted(plan::planner& p, ir::node_id n, const plan::value& v, dtype dt, const std::string& what) {
    plan::value& c = converted_.emplace_back();
    c.dt = dt;
    c.extents = v.extents;
    c.at = p.scratch(std::max<std::size_t>(c.bytes(), 1), n);
    map_params mp{};
    mp.op = map_op::convert;
    mp.compute = dt == dtype::f64 ? map_compute::f64 : is_floating_point(dt) ? map_compute::f32 : map_compute::i64;
    mp.out_dt = static_cast<map_dtype>(dt);
    mp.rank = static_cast<std::int32_t>(v.extents.size());
    mp.n = v.numel();
    mp.n_operands = 1;
    for (std::size_t d = 0; d < v.extents.size(); ++d) mp.extent[d] = v.extents[d];
    if (mp.n == 0) return c;
    pending_.push_back([this, mp, from = &v, to = &c, what]() mutable {
      map_operand& o = mp.operands[0];
      o.data = address(from->at);
      o.dt = static_cast<map_dtype>(from->dt);
      const std::vector<index_t> st = plan::contiguous_strides(from->extents);
      for (std::size_t d = 0; d < st.size(); ++d) o.stride[d] = st[d];
      mp.out = address(to->at);
      return kernel_record(map_launch(mp), what, address(to->at), to->bytes());
    });
    return c;
  }

  // slice, select, expand, squeeze, cat, copy: strided copies of the input into the result.
  void lower_gather(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    const op_id op = node.target;
    std::vector<copy_piece> pieces;
    if (op == op_id_of<aten::stack>) {  // (each input into its index along the new dim)
      const auto& refs = std::get<std::vector<ir::value_ref>>(node.args[0]);
      const std::size_t rank = y.extents.size();
      const std::size_t dim = ir::wrap_dim(op.name(), c.args.has(1) ? c.args.integer(1) : 0, rank);
      const std::vector<index_t> ys = plan::contiguous_strides(y.extents);
      std::vector<index_t> into;
      for (std::size_t d = 0; d < rank; ++d)
        if (d != dim) into.push_back(ys[d]);
      if (into.empty()) into.assign(1, 0);
      index_t k = 0;
      for (const ir::value_ref& r : refs) {
        const plan::value& v = p.at(r.node);
        pieces.push_back({&v, 0, v.extents, plan::contiguous_strides(v.extents), k++ * ys[dim], into});
      }
    } else if (op == op_id_of<aten::cat>) {
      const auto& refs = std::get<std::vector<ir::value_ref>>(node.args[0]);
      const std::size_t rank = y.extents.size();
      const std::size_t dim = ir::wrap_dim(op.name(), c.args.has(1) ? c.args.integer(1) : 0, rank);
      const std::vector<index_t> ys = plan::contiguous_strides(y.extents);
      index_t at = 0;
      for (const ir::value_ref& r : refs) {
        const plan::value* v = &p.at(r.node);
        if (v->extents.size() != rank) continue;  // (torch's legacy empty [0] tensor: contributes nothing)
        if (v->dt != y.dt) v = &converted(p, s.node, *v, y.dt, name_of(node));  // (a mixed cat: promoted first)
        pieces.push_back({v, 0, v->extents, plan::contiguous_strides(v->extents), at * ys[dim], ys});
        at += v->extents[dim];
      }
    } else if (op == op_id_of<aten::select_scatter> || op == op_id_of<aten::slice_scatter>) {
      // the input, then the source into its slice
      const plan::value* x = p.arg(node, 0);
      const plan::value* src = p.arg(node, 1);
      const std::vector<index_t> ys = plan::contiguous_strides(y.extents);
      pieces.push_back({x, 0, y.extents, plan::contiguous_strides(x->extents), 0, {}});
      const std::size_t rank = y.extents.size();
      const std::size_t dim = ir::wrap_dim(op.name(), c.args.has(2) ? c.args.integer(2) : 0, rank);
      copy_piece into{src, 0, src->extents, plan::contiguous_strides(src->extents), 0, {}};
      if (op == op_id_of<aten::select_scatter>) {
        index_t index = c.args.integer(3);
        if (index < 0) index += y.extents[dim];
        if (index < 0 || index >= y.extents[dim]) {
          typex::detail::raise<argument_error>([&](auto& w) {
            w.put("typex::cuda: node '"); w.put(node.name); w.put("' (aten.select_scatter.default): index "); w.put_int(c.args.integer(3));
            w.put(" is out of range for a dim of "); w.put_int(y.extents[dim]);
          });
        }
        into.dst_offset = index * ys[dim];
        for (std::size_t d = 0; d < rank; ++d)
          if (d != dim) into.dst_strides.push_back(ys[d]);
      } else {
        const index_t len = y.extents[dim];
        index_t start = c.args.has(3) ? c.args.integer(3) : 0;
        if (start < 0) start += len;
        start = std::clamp<index_t>(start, 0, len);
        const index_t step = c.args.has(5) ? c.args.integer(5) : 1;
        into.dst_offset = start * ys[dim];
        into.dst_strides = ys;
        into.dst_strides[dim] *= step;
      }
      if (into.dst_strides.empty()) into.dst_strides.assign(1, 0);  // (a rank-0 source: one element, still placed)
      pieces.push_back(std::move(into));
    } else {
      const plan::value* x = p.arg(node, op == op_id_of<copy_op> ? 1 : 0);
      const std::vector<index_t> xs = plan::contiguous_strides(x->extents);
      copy_piece cp{x, 0, y.extents, {}, 0, {}};
      if (op == op_id_of<aten::slice_Tensor>) {
        const std::size_t rank = x->extents.size();
        const std::size_t dim = ir::wrap_dim(op.name(), c.args.has(1) ? c.args.integer(1) : 0, rank);
        const index_t len = x->extents[dim];
        index_t start = c.args.has(2) ? c.args.integer(2) : 0;
        const index_t step = c.args.has(4) ? c.args.integer(4) : 1;
        if (start < 0) start += len;
        start = std::clamp<index_t>(start, 0, len);
        cp.src_strides = xs;
        cp.src_strides[dim] *= step;
        cp.src_offset = start * xs[dim];
      } else if (op == op_id_of<aten::select_int>) {
        const std::size_t rank = x->extents.size();
        const std::size_t dim = ir::wrap_dim(op.name(), c.args.integer(1), rank);
        index_t index = c.args.integer(2);
        if (index < 0) index += x->extents[dim];
        if (index < 0 || index >= x->extents[dim]) {
          typex::detail::raise<argument_error>([&](auto& w) {
            w.put("typex::cuda: node '"); w.put(node.name); w.put("' (aten.select.int): index "); w.put_int(c.args.integer(2));
            w.put(" is out of range for a dim of "); w.put_int(x->extents[dim]);
          });
        }
        cp.src_offset = index * xs[dim];
        for (std::size_t d = 0; d < rank; ++d)
          if (d != dim) cp.src_strides.push_back(xs[d]);
      } else if (op == op_id_of<aten::squeeze_dim>) {
        for (std::size_t d = 0; d < x->extents.size(); ++d)
          if (x->extents.size() != y.extents.size() + 1 || d != ir::wrap_dim(op.name(), c.args.integer(1), x->extents.size()))
            cp.src_strides.push_back(xs[d]);
      } else {  // expand, copy: broadcast into the result's extents
        cp.src_strides = contiguous_strides_in(x->extents, y.extents);
      }
      pieces.push_back(std::move(cp));
    }
    push_copies(pieces, y.dt, y.at, y.bytes(), name_of(node));
  }

  // An operand of a product as cuBLASLt reads it: its matrices (rows x cols) at a uniform batch
  // stride, each row-major (ld: the row stride) or transposed (column-major: ld the column stride).
  struct gemm_operand {
    plan::location at;
    std::int64_t offset = 0;  // (elements)
    bool transposed = false;
    std::int64_t ld = 0, batch_stride = 0;
  };
  // Operand v (rank >= 2 after a vector's unit dim) in the output's batch dims `batch`: read in
  // place where its strides allow it, else copied (broadcast, contiguous) into scratch first.
  gemm_operand gemm_read(plan::planner& p, ir::node_id n, const plan::value& v, std::vector<index_t> ext, std::vector<index_t> str,
                         const std::vector<index_t>& batch, const std::string& what) {
    const std::size_t nb = batch.size(), own = ext.size() - 2;
    const index_t rows = ext[own], cols = ext[own + 1];
    const index_t sr = str[own], sc = str[own + 1];
    // the batch strides in the output's batch dims (0 where v is broadcast)
    std::vector<index_t> bs(nb, 0);
    for (std::size_t d = 0; d < own; ++d)
      if (ext[d] != 1) bs[nb - own + d] = str[d];
    // one stride over the flattened batch?
    bool uniform = true;
    std::int64_t unit = -1, span = 1;  // (unit: the stride of one step of the flat batch index)
    for (std::size_t d = nb; d-- > 0;) {
      if (batch[d] == 1) continue;
      if (unit < 0) unit = bs[d] == 0 ? 0 : bs[d] / span;
      if (bs[d] != unit * span || (unit == 0 && bs[d] != 0)) uniform = false;
      span *= batch[d];
    }
    gemm_operand g;
    g.at = v.at;
    g.batch_stride = unit < 0 ? 0 : unit;
    const bool row_major = (sc == 1 || cols == 1) && (rows == 1 || sr >= cols);
    const bool col_major = !row_major && (sr == 1 || rows == 1) && (cols == 1 || sc >= rows);
    if (uniform && (row_major || col_major)) {
      g.transposed = col_major;
      g.ld = row_major ? (rows == 1 ? cols : sr) : (cols == 1 ? rows : sc);
      g.ld = std::max<index_t>(g.ld, 1);
      return g;
    }
    // copy: [batch..., rows, cols], contiguous
    std::vector<index_t> ce(batch), cs(bs);
    ce.push_back(rows), ce.push_back(cols);
    cs.push_back(sr), cs.push_back(sc);
    index_t count = 1;
    for (index_t e : ce) count *= e;
    const std::size_t bytes = static_cast<std::size_t>(count) * itemsize(v.dt);
    const plan::location scratch = p.scratch(bytes, n);
    push_copies({copy_piece{&v, 0, ce, cs, 0, {}}}, v.dt, scratch, bytes, what);
    g.at = scratch;
    g.transposed = false;
    g.ld = std::max<index_t>(cols, 1);
    index_t per = rows * cols;
    g.batch_stride = span > 1 ? per : 0;
    return g;
  }

  // A bias gradient beside a weight gradient (cuBLASLt's BGRADA / BGRADB): a later
  // aten.sum.dim_IntList, without a dtype, over every dim but the last of the dense f32 tensor that
  // the product reads in place as one operand, `count` sums of k terms each. That operand is the
  // matmul's argument `which` (0: the left one, read transposed: dW = gᵀ·x sums op(A)'s rows; 1: the
  // right one, read as stored: dW = xᵀ·g sums op(B)'s columns), reached through views (a linear
  // layer's derivative reshapes its gradient and transposes it). no_node: none.
  ir::node_id bias_gradient_of(plan::planner& p, const plan::step_plan& s, std::size_t which, const gemm_operand& op, index_t count,
                               index_t k) const {
    const ir::graph& g = p.graph();
    const auto* ref = std::get_if<ir::value_ref>(&g[s.node].args[which]);
    if (ref == nullptr || op.offset != 0 || op.ld != count) return plan::no_node;
    // the operand's node and the views it is a view of
    std::vector<ir::node_id> chain{ref->node};
    for (ir::node_id cur = ref->node; chain.size() < 8;) {
      const ir::node& n = g[cur];
      if (n.op != ir::node_op::call_function || n.args.empty()) break;
      const plan::rule r = plan::rules_of(n.target);
      if (!plan::has(r, plan::rule::view) && !plan::has(r, plan::rule::permute)) break;
      const auto* up = std::get_if<ir::value_ref>(&n.args[0]);
      if (up == nullptr) break;
      chain.push_back(cur = up->node);
    }
    const auto same_place = [](const plan::location& a, const plan::location& b) {
      return a.kind == b.kind && a.index == b.index && a.tensor == b.tensor;
    };
    for (const ir::node_id base : chain) {
      for (const ir::node_id u : p.users(base)) {
        const ir::node& n = g[u];
        if (n.op != ir::node_op::call_function || n.target != op_id_of<aten::sum_dim_IntList> || !p.claimable(s, u)) continue;
        if (n.vals.front().scalar_type != dtype::f32) continue;
        const detail::call_of c(n, &p.symbols());
        if (c.args.has("dtype")) continue;
        const plan::value* x = p.arg(n, 0);
        if (x == nullptr || x->strided() || x->dt != dtype::f32 || !same_place(x->at, op.at) || x->extents.size() < 2) continue;
        const std::size_t rank = x->extents.size();
        index_t lead = 1;
        for (std::size_t d = 0; d + 1 < rank; ++d) lead *= x->extents[d];
        if (x->extents.back() != count || lead != k || !c.args.has("dim")) continue;
        std::vector<bool> reduced(rank, false);
        bool dims_ok = true;
        for (std::int64_t d : c.args.ints("dim")) {
          if (d < 0) d += static_cast<std::int64_t>(rank);
          if (d < 0 || d >= static_cast<std::int64_t>(rank) || reduced[static_cast<std::size_t>(d)]) dims_ok = false;
          else reduced[static_cast<std::size_t>(d)] = true;
        }
        for (std::size_t d = 0; dims_ok && d < rank; ++d) dims_ok = reduced[d] == (d + 1 < rank);
        if (dims_ok) return u;
      }
    }
    return plan::no_node;
  }

  // The tanh-form GELU that reads a linear layer's result y where y has other readers too (a
  // training forward: gelu_backward reads y), for cuBLASLt's GELU_AUX: a gelu_op of the tanh form of
  // y itself (f32, y's extents). no_node: none.
  ir::node_id gelu_reader_of(plan::planner& p, const plan::step_plan& s) const {
    const ir::graph& g = p.graph();
    const plan::value& y = p.at(s.node);
    if (y.strided()) return plan::no_node;
    for (const ir::node_id u : p.users(s.node)) {
      const ir::node& n = g[u];
      if (n.op != ir::node_op::call_function || n.target != op_id_of<gelu_op> || n.args.empty()) continue;
      const auto* in = std::get_if<ir::value_ref>(&n.args[0]);
      if (in == nullptr || in->node != s.node || n.vals.front().scalar_type != dtype::f32 || !p.claimable(s, u, /*of_result=*/true)) continue;
      const detail::call_of c(n, &p.symbols());
      if (gelu_op::from_arguments(c.args).approximate != gelu_approximation::tanh) continue;
      return u;
    }
    return plan::no_node;
  }

  // GELU's gradient applied to a product (cuBLASLt's DGELU): the only reader of the product's result
  // y is an aten.gelu_backward of the tanh form whose gradient is y and whose input x is a dense f32
  // value of y's extents (the layer's pre-activation, which the forward keeps); y is no output. The
  // product then writes the gelu_backward's value, reading x as the epilogue's aux matrix, and y is
  // never written. no_node: none.
  ir::node_id gelu_gradient_of(plan::planner& p, const plan::step_plan& s) const {
    const ir::graph& g = p.graph();
    if (p.is_output(s.node) || p.users(s.node).size() != 1) return plan::no_node;
    const ir::node_id u = p.users(s.node).front();
    const ir::node& n = g[u];
    if (n.op != ir::node_op::call_function || n.target != op_id_of<aten::gelu_backward> || n.args.size() < 2 ||
        !p.claimable(s, u, /*of_result=*/true))
      return plan::no_node;
    const auto* grad = std::get_if<ir::value_ref>(&n.args[0]);
    const auto* input = std::get_if<ir::value_ref>(&n.args[1]);
    if (grad == nullptr || grad->node != s.node || input == nullptr || input->node == s.node) return plan::no_node;
    const detail::call_of c(n, &p.symbols());
    if (aten::gelu_backward::from_arguments(c.args).approximate != gelu_approximation::tanh) return plan::no_node;
    const plan::value& y = p.at(s.node);
    const plan::value* x = p.arg(n, 1);
    if (x == nullptr || x->strided() || x->dt != dtype::f32 || x->extents != y.extents || n.vals.front().scalar_type != dtype::f32)
      return plan::no_node;
    return u;
  }

  // matmul / mm / bmm through one (batched) cuBLASLt product: the operands' transposes and batch
  // strides read in place (the planner hands permutes to this reader as strided values); an
  // operand whose batch does not flatten to one stride (broadcast in some dims only) is copied
  // first. A product over k = 0 is zeros.
  void lower_matmul(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* a = p.arg(node, 0);
    const plan::value* b = p.arg(node, 1);
    const plan::value& y = p.at(s.node);
    const std::string what = name_of(node);
    const auto view = [](const plan::value& v) {  // (extents, element strides, location offset 0)
      return std::pair{v.extents, v.strided() ? v.strides : plan::contiguous_strides(v.extents)};
    };
    auto [ae, as] = view(*a);
    auto [be, bs] = view(*b);
    if (ae.size() == 1) ae.insert(ae.begin(), 1), as.insert(as.begin(), 0);  // ([k] as [1, k])
    if (be.size() == 1) be.push_back(1), bs.push_back(0);                     // ([k] as [k, 1])
    const index_t m = ae[ae.size() - 2], k = ae.back(), n = be.back();
    std::vector<index_t> batch(std::max(ae.size(), be.size()) - 2, 1);
    for (std::size_t d = 0; d + 2 < ae.size(); ++d) batch[batch.size() - (ae.size() - 2) + d] = ae[d];
    for (std::size_t d = 0; d + 2 < be.size(); ++d) {
      index_t& o = batch[batch.size() - (be.size() - 2) + d];
      o = o == 1 ? be[d] : o;
    }
    index_t count = 1;
    for (index_t e : batch) count *= e;
    if (count == 0 || m == 0 || n == 0) return;  // (an empty result)
    if (k == 0) {
      push_zero(y, what);
      return;
    }
    // a batched A against one B: one product of count m rows
    std::vector<index_t> rows_batch = batch;
    gemm_operand ga, gb;
    index_t mm = m, batches = count;
    bool folded = false;
    {
      bool b_single = true;
      for (std::size_t d = 0; d + 2 < be.size(); ++d) b_single = b_single && be[d] == 1;
      bool a_dense = !a->strided() && ae.size() - 2 == batch.size();
      for (std::size_t d = 0; a_dense && d + 2 < ae.size(); ++d) a_dense = ae[d] == batch[d];
      folded = b_single && a_dense && count > 1;
    }
    if (folded) {
      mm = m * count;
      batches = 1;
      ga = gemm_read(p, s.node, *a, {mm, k}, {k, 1}, {}, what);
      std::vector<index_t> be2{be[be.size() - 2], be.back()}, bs2{bs[bs.size() - 2], bs.back()};
      gb = gemm_read(p, s.node, *b, be2, bs2, {}, what);
    } else {
      ga = gemm_read(p, s.node, *a, ae, as, batch, what);
      gb = gemm_read(p, s.node, *b, be, bs, batch, what);
    }
    matmul_geometry g{};
    g.m = mm, g.n = n, g.k = k;
    g.transpose_a = ga.transposed, g.transpose_b = gb.transposed;
    g.lda = ga.ld, g.ldb = gb.ld, g.ldc = n;
    g.batch = batches;
    g.stride_a = batches > 1 ? ga.batch_stride : 0;
    g.stride_b = batches > 1 ? gb.batch_stride : 0;
    g.stride_c = batches > 1 ? m * n : 0;
    // the bias gradient beside a weight gradient, where cuBLASLt has an algorithm for it (f32
    // products only: what the gradient epilogues do with reduced-precision operands is not documented)
    epilogue e = epilogue::none;
    ir::node_id bias_grad = plan::no_node;
    if (p.opts().fuse && y.dt == dtype::f32 && options_.matmul_precision == matmul_precision::f32 && batches == 1) {
      if (ga.transposed && (bias_grad = bias_gradient_of(p, s, 0, ga, mm, k)) != plan::no_node) e = epilogue::bgrad_b;
      else if (!gb.transposed && (bias_grad = bias_gradient_of(p, s, 1, gb, n, k)) != plan::no_node) e = epilogue::bgrad_a;
    }
    // GELU's gradient of the result, in the epilogue (its aux leading dimension, n, a multiple of 8)
    ir::node_id gelu_grad = plan::no_node;
    if (e == epilogue::none && p.opts().fuse && y.dt == dtype::f32 && options_.matmul_precision == matmul_precision::f32 && batches == 1 &&
        n % 8 == 0 && (gelu_grad = gelu_gradient_of(p, s)) != plan::no_node)
      e = epilogue::dgelu_tanh;
    cuda_plan& cp = *building_;
    cp.products.push_back(make_matmul(g, e, y.dt, options_.matmul_precision));
    if (reads_aux(e)) cp.products.back().set_aux_for_query(n);
    if (e != epilogue::none && !rt_->can_matmul(cp.products.back(), lt_workspace_bytes)) {
      cp.products.back() = make_matmul(g, epilogue::none, y.dt, options_.matmul_precision);
      e = epilogue::none;
      bias_grad = gelu_grad = plan::no_node;
    }
    const plan::value* bg = bias_grad != plan::no_node ? &p.also_compute(s, bias_grad) : nullptr;
    // (with DGELU the product writes the gelu_backward's value, not its own)
    const plan::value* aux = gelu_grad != plan::no_node ? p.arg(p.graph()[gelu_grad], 1) : nullptr;
    const plan::value* out = gelu_grad != plan::no_node ? &p.also_compute(s, gelu_grad) : &y;
    const std::size_t product = cp.product_at.size();
    cp.product_at.push_back(&cp.products.back());
    const std::int64_t item = static_cast<std::int64_t>(itemsize(y.dt));
    pending_.push_back([this, ga, gb, yv = out, bg, aux, n, product, item, what] {
      record r;
      record::gemm gm;
      gm.product = product;
      gm.args = row_major_operands(address(ga.at) + ga.offset * item, address(gb.at) + gb.offset * item, address(yv->at));
      gm.args.workspace = building_->workspace.data();
      gm.args.workspace_bytes = building_->workspace.bytes();
      if (bg != nullptr) {  // (the bias gradient's buffer: the descriptor's pointer, the call's a cross-check)
        gm.args.bias = address(bg->at);
        building_->product_at[product]->set_bias_pointer(gm.args.bias);
        r.out2 = address(bg->at);
        r.out2_bytes = bg->bytes();
      }
      if (aux != nullptr) building_->product_at[product]->set_aux(address(aux->at), n);  // (DGELU's GELU input)
      r.what = gm;
      r.name = what;
      r.out = address(yv->at);
      r.out_bytes = yv->bytes();
      return r;
    });
  }

  // The indexing ops (kernels/index.cuh): a take over the result's shape, or the input copied into
  // the result (zeros for embedding's backward) and an atomic add over the source's. Each raises
  // the plan's error word with its own code on an index out of range.
  void lower_index(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    const op_id op = node.target;
    const std::string what = name_of(node);
    index_params ip{};
    ip.itemsize = static_cast<std::int32_t>(itemsize(y.dt));
    const plan::value* src = nullptr;
    const plan::value* index = nullptr;
    std::optional<plan::location> counts;  // (embedding's backward with scale_grad_by_freq)
    std::vector<index_t> iter;
    std::vector<index_t> src_st, out_st, idx_st;
    const auto take_along = [&](const plan::value* from, const plan::value* idx, std::size_t dim) {
      iter = y.extents;
      src_st = plan::contiguous_strides(from->extents);
      out_st = plan::contiguous_strides(y.extents);
      idx_st.assign(iter.size(), 0);
      idx_st[dim] = 1;
      ip.dim = static_cast<std::int32_t>(dim);
      ip.dim_size = from->extents[dim];
      src = from, index = idx;
    };
    if (op == op_id_of<aten::index_select>) {
      const plan::value* x = p.arg(node, 0);
      take_along(x, p.arg(node, 2), ir::wrap_dim(op.name(), c.args.integer(1), x->extents.size()));
    } else if (op == op_id_of<embedding_op> || op == op_id_of<aten::embedding_dense_backward>) {
      const bool backward = op == op_id_of<aten::embedding_dense_backward>;
      const plan::value* table = p.arg(node, 0);  // (weight, or the gradient)
      index = p.arg(node, 1);
      const index_t d = backward ? y.extents.back() : table->extents.back();
      const index_t rows = index->numel();
      iter = {rows, d};
      src_st = {d, 1};
      out_st = {d, 1};
      idx_st = {1, 0};
      ip.dim = 0;
      src = table;
      if (backward) {
        ip.kind = index_kind::add;
        ip.dim_size = y.extents.front();
        const std::int64_t pad = c.args.integer(3);
        ip.skip_index = pad >= 0 ? pad : -1;
        if (c.args.has(4) && c.args.flag(4) && ip.dim_size > 0)
          counts = p.scratch(static_cast<std::size_t>(ip.dim_size) * sizeof(double), s.node);
        push_zero(y, what);
      } else {
        ip.dim_size = table->extents.front();
      }
    } else if (op == op_id_of<aten::gather>) {
      const plan::value* x = p.arg(node, 0);
      index = p.arg(node, 2);
      const std::size_t dim = ir::wrap_dim(op.name(), c.args.integer(1), x->extents.size());
      iter = y.extents;
      src_st = plan::contiguous_strides(x->extents);
      out_st = plan::contiguous_strides(y.extents);
      idx_st = plan::contiguous_strides(index->extents);
      ip.dim = static_cast<std::int32_t>(dim);
      ip.dim_size = x->extents[dim];
      src = x;
    } else {  // index_add(self, dim, index, source, alpha), scatter_add(self, dim, index, src)
      const plan::value* x = p.arg(node, 0);
      const std::size_t dim = ir::wrap_dim(op.name(), c.args.integer(1), x->extents.size());
      index = p.arg(node, 2);
      src = p.arg(node, 3);
      ip.kind = index_kind::add;
      ip.dim = static_cast<std::int32_t>(dim);
      ip.dim_size = x->extents[dim];
      out_st = plan::contiguous_strides(y.extents);
      src_st = plan::contiguous_strides(src->extents);
      if (op == op_id_of<aten::index_add>) {
        iter = src->extents;
        idx_st.assign(iter.size(), 0);
        idx_st[dim] = 1;
        ip.alpha = c.args.has("alpha") ? c.args.real("alpha") : 1.0;
      } else {
        iter = index->extents;
        idx_st = plan::contiguous_strides(index->extents);
      }
      push_copies({copy_piece{x, 0, y.extents, plan::contiguous_strides(x->extents), 0, {}}}, y.dt, y.at, y.bytes(), what);
    }
    ip.rank = static_cast<std::int32_t>(iter.size());
    ip.n = 1;
    for (std::size_t d = 0; d < iter.size(); ++d) {
      ip.extent[d] = iter[d];
      ip.src_stride[d] = src_st[d];
      ip.out_stride[d] = out_st[d];
      ip.index_stride[d] = idx_st[d];
      ip.n *= iter[d];
    }
    ip.index32 = index->dt == dtype::i32;
    if (ip.n == 0) return;
    error_names_.push_back(index_fault(what));
    ip.code = static_cast<int>(error_names_.size());
    if (counts) {  // (each index's frequency, zeroed then counted over the index's elements)
      const std::size_t bytes = static_cast<std::size_t>(ip.dim_size) * sizeof(double);
      push_zero_at(*counts, bytes, what);
      pending_.push_back([this, ip, at = *counts, bytes, index, what]() mutable {
        index_params cp = ip;
        cp.kind = index_kind::count;
        cp.rank = 1;
        cp.dim = 0;
        cp.n = index->numel();
        cp.extent[0] = cp.n;
        cp.index_stride[0] = 1;
        cp.index = address(index->at);
        cp.counts = reinterpret_cast<double*>(address(at));
        cp.error = reinterpret_cast<int*>(building_->error_word.data());
        return kernel_record(index_launch(cp), what, address(at), bytes);
      });
    }
    pending_.push_back([this, yv = &y, ip, src, index, counts, what]() mutable {
      if (counts) ip.counts = reinterpret_cast<double*>(address(*counts));
      ip.src = address(src->at);
      ip.index = address(index->at);
      ip.out = address(yv->at);
      ip.error = reinterpret_cast<int*>(building_->error_word.data());
      return kernel_record(index_launch(ip), what, address(yv->at), yv->bytes());
    });
  }

  static std::string index_fault(const std::string& what) {
    return what + " was given an index out of range for the dim it indexes, which the kernel skipped";
  }

  // masked_scatter (kernels/select.cuh) over the result's shape, self and the bool mask broadcast to
  // it: a count pass per chunk of the mask, the one-block scan of the counts into each chunk's first
  // source element, the scatter pass. All on the device, no synchronization: a plan with it is
  // captured as any other. A source shorter than the mask's count raises the error word.
  void lower_masked_scatter(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value& y = p.at(s.node);
    const plan::value* self = p.arg(node, 0);
    const plan::value* mask = p.arg(node, 1);
    const plan::value* source = p.arg(node, 2);
    const std::string what = name_of(node);
    select_params sp{};
    sp.rank = static_cast<std::int32_t>(y.extents.size());
    sp.n = y.numel();
    sp.coords = false;
    sp.itemsize = static_cast<std::int32_t>(itemsize(y.dt));
    sp.cond_itemsize = 1;
    sp.source_n = source->numel();
    for (std::size_t d = 0; d < y.extents.size(); ++d) sp.extent[d] = y.extents[d];
    broadcast_strides(self->extents, y.extents.size(), sp.src_stride);
    broadcast_strides(mask->extents, y.extents.size(), sp.cond_stride);
    if (sp.n == 0) return;
    const std::size_t count_bytes = static_cast<std::size_t>(select_blocks(sp.n)) * sizeof(std::int64_t);
    const plan::location counts = p.scratch(count_bytes, s.node);
    error_names_.push_back(what + "'s mask selects more elements than its source has, which the kernel did not read past");
    sp.code = static_cast<int>(error_names_.size());
    pending_.push_back([this, sp, mask, counts, count_bytes, what]() mutable {
      sp.kind = select_kind::count;
      sp.cond = address(mask->at);
      sp.counts = reinterpret_cast<std::int64_t*>(address(counts));
      return kernel_record(select_launch(sp), what, address(counts), count_bytes);
    });
    pending_.push_back([this, sp, counts, count_bytes, what]() mutable {
      sp.kind = select_kind::scan;
      sp.counts = reinterpret_cast<std::int64_t*>(address(counts));
      return kernel_record(select_launch(sp), what, address(counts), count_bytes);
    });
    pending_.push_back([this, sp, self, mask, source, counts, yv = &y, what]() mutable {
      sp.kind = select_kind::scatter;
      sp.cond = address(mask->at);
      sp.offsets = reinterpret_cast<const std::int64_t*>(address(counts));
      sp.src = address(self->at);
      sp.source = address(source->at);
      sp.out = address(yv->at);
      sp.error = reinterpret_cast<int*>(building_->error_word.data());
      return kernel_record(select_launch(sp), what, address(yv->at), yv->bytes());
    });
  }

  // nll_loss, cross_entropy, mse_loss: one loss kernel, and for a reduced loss a one-block finish
  // over the partial sums it leaves in scratch.
  void lower_loss(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value* t = p.arg(node, 1);
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    const op_id op = node.target;
    const bool mse = op == op_id_of<aten::mse_loss>;
    const std::string what = name_of(node);
    loss_params lp{};
    lp.kind = mse ? loss_kind::mse : op == op_id_of<aten::cross_entropy_loss> ? loss_kind::cross_entropy : loss_kind::nll;
    const std::size_t reduction_at = mse ? 2 : 3;
    lp.reduction = static_cast<loss_reduction>(c.args.has(reduction_at) ? c.args.integer(reduction_at) : 1);
    const plan::value* w = mse ? nullptr : p.arg(node, 2);
    if (mse) {
      if (x->extents != t->extents) {
        typex::detail::raise<unsupported_error>([&](auto& o) {
          o.put("typex::cuda: "); o.put(what); o.put(" broadcasts its target; the CUDA backend's mse_loss takes two tensors of one shape");
        });
      }
      lp.rows = x->numel();
      lp.cols = 1;
    } else {
      // ([C]; [N, C]; spatial [N, C, d...]: a row per (n, position), its scores `inner` apart)
      lp.cols = x->extents.size() == 1 ? x->extents.front() : x->extents[1];
      lp.rows = x->extents.size() == 1 ? 1 : x->extents.front();
      for (std::size_t d = 2; d < x->extents.size(); ++d) lp.inner *= x->extents[d];
      lp.rows *= lp.inner;
      if (lp.inner == 0) lp.inner = 1;  // (an empty spatial dim: no rows)
      lp.ignore_index = c.args.has(4) ? c.args.integer(4) : -100;
      lp.target32 = t->dt == dtype::i32;
      error_names_.push_back(index_fault(what));
      lp.code = static_cast<int>(error_names_.size());
    }
    const bool reduced = lp.reduction != loss_reduction::none;
    const std::int64_t blocks = loss_blocks(lp);
    const plan::location partial = reduced ? p.scratch(static_cast<std::size_t>(2 * blocks) * sizeof(float), s.node) : plan::location{};
    const std::size_t partial_bytes = reduced ? static_cast<std::size_t>(2 * blocks) * sizeof(float) : 0;
    if (lp.rows == 0 && !reduced) return;
    pending_.push_back([this, x, t, w, yv = &y, lp, partial, partial_bytes, reduced, what]() mutable {
      lp.in = reinterpret_cast<const float*>(address(x->at));
      lp.target = address(t->at);
      lp.weight = w != nullptr ? reinterpret_cast<const float*>(address(w->at)) : nullptr;
      lp.out = reinterpret_cast<float*>(address(yv->at));
      lp.error = lp.kind == loss_kind::mse ? nullptr : reinterpret_cast<int*>(building_->error_word.data());
      if (reduced) lp.partial = reinterpret_cast<float*>(address(partial));
      if (reduced) return kernel_record(loss_launch(lp), what, address(partial), partial_bytes);
      return kernel_record(loss_launch(lp), what, address(yv->at), yv->bytes());
    });
    if (!reduced) return;
    pending_.push_back([this, yv = &y, lp, partial, blocks, what]() mutable {
      loss_params f{};
      f.kind = loss_kind::finish;
      f.reduction = lp.reduction;
      f.rows = lp.rows == 0 && lp.kind != loss_kind::mse ? 0 : blocks;
      f.partial = reinterpret_cast<float*>(address(partial));
      f.out = reinterpret_cast<float*>(address(yv->at));
      return kernel_record(loss_launch(f), what, address(yv->at), yv->bytes());
    });
  }

  // An elementwise op of any dtype (kernels/map.cuh): the compute type is the result's (a float
  // type, else int64), except for comparisons and logic, which compute in the operands' promoted
  // type (a float type where any operand is one).
  void lower_map(plan::planner& p, plan::step_plan& s) {
    s.chain.clear();  // (a pointwise chain the planner formed after this node runs as steps of its own)
    const ir::node& node = p.graph()[s.node];
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    map_params mp{};
    const std::optional<map_op> known = detail::map_op_for(node);
    mp.op = known ? *known : map_op::unary;
    if (mp.op == map_op::unary) mp.link = *encode_unary(node.target, c.args);
    mp.out_dt = static_cast<map_dtype>(y.dt);
    const auto compute_of = [](dtype t) {
      return t == dtype::f64 ? map_compute::f64 : is_floating_point(t) ? map_compute::f32 : map_compute::i64;
    };
    mp.compute = compute_of(y.dt);
    const bool boolean = mp.op == map_op::eq || mp.op == map_op::ne || mp.op == map_op::lt || mp.op == map_op::le ||
                         mp.op == map_op::gt || mp.op == map_op::ge;
    std::vector<std::pair<const plan::value*, double>> operands;  // (a tensor, or null and a number)
    const std::size_t first = node.target == op_id_of<copy_op> ? 1 : 0;  // (copy(self, src): src)
    std::size_t count = 0;
    switch (mp.op) {
      case map_op::fill: count = 0; break;
      case map_op::dropout_mask: count = 0; break;
      case map_op::tril: case map_op::triu: count = 1; break;
      case map_op::iota: count = 0; break;
      case map_op::convert: case map_op::neg: case map_op::abs: case map_op::logical_not: case map_op::clamp: case map_op::unary:
        count = 1;
        break;
      case map_op::where: count = 3; break;
      default: count = 2; break;
    }
    const bool masked_fill = node.target == op_id_of<masked_fill_op>;  // (self, mask, value): where(mask, value, self)
    const std::size_t order[3] = {masked_fill ? 1u : first, masked_fill ? 2u : first + 1, masked_fill ? 0u : first + 2};
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = order[k];
      if (const plan::value* v = p.arg(node, i)) operands.emplace_back(v, 0.0);
      else operands.emplace_back(nullptr, detail::number_arg(c.args, i));
    }
    if (boolean) {  // (the promoted type of the operands)
      map_compute m = map_compute::i64;
      for (const auto& [v, number] : operands) {
        const map_compute k = v != nullptr ? compute_of(v->dt) : (number == static_cast<double>(static_cast<std::int64_t>(number)) ? map_compute::i64 : map_compute::f32);
        if (k == map_compute::f64 || (k == map_compute::f32 && m == map_compute::i64)) m = k;
      }
      mp.compute = m;
    }
    if (mp.op == map_op::add || mp.op == map_op::sub) mp.alpha = c.args.has("alpha") ? c.args.real("alpha") : 1.0;
    if (mp.op == map_op::threshold_backward) mp.a = detail::number_arg(c.args, 2);
    if (mp.op == map_op::gelu_backward)
      mp.a = aten::gelu_backward::from_arguments(c.args).approximate == gelu_approximation::tanh ? 1.0 : 0.0;
    if (mp.op == map_op::fill) {
      const op_id t = node.target;
      mp.a = t == op_id_of<aten::zeros> || t == op_id_of<aten::zeros_like> ? 0.0
             : t == op_id_of<aten::ones> || t == op_id_of<aten::ones_like> ? 1.0
                                                                             : detail::number_arg(c.args, 1);
    }
    if (mp.op == map_op::tril || mp.op == map_op::triu) mp.a = c.args.has(1) ? detail::number_arg(c.args, 1) : 0.0;
    std::size_t draw = 0;  // (dropout_mask: its draw's index among the plan's, taken in step order each call)
    if (mp.op == map_op::dropout_mask) {
      const double prob = c.args.real(1);
      if (!(prob >= 0 && prob <= 1)) c.args.fail_text(1, "is not a probability in [0, 1]");
      mp.threshold = keep_threshold(prob);
      mp.a = prob >= 1 ? 0.0 : 1.0 / (1.0 - prob);
      draw = draws_++;
    }
    if (mp.op == map_op::clamp && node.target == op_id_of<relu_op>) {
      mp.has_lo = true, mp.has_hi = false, mp.a = 0.0, mp.b = 0.0;  // (relu of integers: max(x, 0))
    } else if (mp.op == map_op::clamp) {
      mp.has_lo = c.args.has(1), mp.has_hi = c.args.has(2);
      mp.a = mp.has_lo ? detail::number_arg(c.args, 1) : 0.0;
      mp.b = mp.has_hi ? detail::number_arg(c.args, 2) : 0.0;
    }
    if (mp.op == map_op::iota) {
      if (node.target == op_id_of<aten::arange>) mp.a = 0, mp.b = 1;
      else mp.a = detail::number_arg(c.args, 0), mp.b = node.target == op_id_of<aten::arange_start_step> && c.args.has(2) ? detail::number_arg(c.args, 2) : 1.0;
    }
    mp.rank = static_cast<std::int32_t>(y.extents.size());
    mp.n = y.numel();
    for (std::size_t d = 0; d < y.extents.size(); ++d) mp.extent[d] = y.extents[d];
    mp.n_operands = static_cast<std::int32_t>(operands.size());
    if (mp.n == 0) return;
    const std::string what = name_of(node);
    pending_.push_back([this, yv = &y, mp, operands, draw, what]() mutable {
      if (mp.op == map_op::dropout_mask) mp.draw = reinterpret_cast<const std::uint64_t*>(building_->draw_slot.data()) + 2 * draw;
      for (std::size_t k = 0; k < operands.size(); ++k) {
        map_operand& o = mp.operands[k];
        if (operands[k].first == nullptr) {
          o.data = nullptr;
          o.number = operands[k].second;
          continue;
        }
        const plan::value& v = *operands[k].first;
        o.data = address(v.at);
        o.dt = static_cast<map_dtype>(v.dt);
        const std::vector<index_t> st = contiguous_strides_in(v.extents, yv->extents);
        for (std::size_t d = 0; d < st.size(); ++d) o.stride[d] = st[d];
      }
      mp.out = address(yv->at);
      return kernel_record(map_launch(mp), what, address(yv->at), yv->bytes());
    });
  }

  // A pointwise step: a binary head (add / sub / mul / div) or a lone activation, then the chain
  // the planner formed after it, as one chain kernel. A chain longer than a kernel takes (links,
  // tensor operands) is cut: the planner runs the rest as steps of their own.
  bool lower_chain(plan::planner& p, plan::step_plan& s) {
    const ir::graph& g = p.graph();
    const ir::node& node = g[s.node];
    const plan::value& y = p.at(s.node);
    struct pending_link {
      chain_link link;
      const plan::value* operand = nullptr;  // (a binary link's tensor)
    };
    std::vector<pending_link> links;
    const plan::value* start = nullptr;
    ir::node_id prev = plan::no_node;
    std::size_t tensors = 1, taken = 0;  // (taken: the chain's nodes lowered into this step)
    std::vector<ir::node_id> nodes{s.node};
    nodes.insert(nodes.end(), s.chain.begin(), s.chain.end());
    for (ir::node_id id : nodes) {
      const ir::node& u = g[id];
      // (the planner forms chains of the head's dtype; a link the chain kernel would not run alone
      // still ends the chain here, and it and the rest run as steps of their own)
      if (u.vals.front().scalar_type != y.dt || !detail::chain_runs(g, u)) break;
      const detail::call_of c(u, &p.symbols());
      pending_link pl;
      if (detail::is_binary_head(u.target)) {
        const auto* r0 = std::get_if<ir::value_ref>(&u.args[0]);
        const auto* r1 = std::get_if<ir::value_ref>(&u.args[1]);
        // which argument continues the running value (y), and which is the link's operand
        std::size_t other = 1;
        bool second = false;
        if (prev == plan::no_node) {
          if (r0 != nullptr) {
            start = p.arg(u, 0);
          } else {  // (a number first: the running value is the second argument)
            start = p.arg(u, 1);
            second = true;
            other = 0;
          }
        } else {
          second = r1 != nullptr && r1->node == prev;
          other = second ? 0 : 1;
        }
        pl.link.kind = u.target == op_id_of<add_op>   ? link_kind::add
                       : u.target == op_id_of<sub_op> ? link_kind::sub
                       : u.target == op_id_of<mul_op> ? link_kind::mul
                                                      : link_kind::div;
        pl.link.chain_second = second;
        const bool with_alpha = pl.link.kind == link_kind::add || pl.link.kind == link_kind::sub;  // (mul / div have none)
        pl.link.alpha = with_alpha && c.args.has("alpha") ? detail::number_arg(c.args, c.args.index("alpha")) : 1.0;
        if (const auto* r = std::get_if<ir::value_ref>(&u.args[other])) {
          pl.operand = &p.at(r->node);
        } else {
          pl.link.number = detail::number_arg(c.args, other);  // (a double, an integer, or a size: evaluated with the plan's symbols)
          pl.link.operand = -1;
        }
      } else {
        const std::optional<chain_link> l = encode_unary(u.target, c.args);
        if (!l) break;  // (the planner forms chains of what is_activation accepts: not reached)
        if (prev == plan::no_node) start = p.arg(u, 0);
        pl.link = *l;
      }
      if (links.size() + 1 > static_cast<std::size_t>(max_links) || tensors + (pl.operand != nullptr) > static_cast<std::size_t>(max_operands))
        break;
      tensors += pl.operand != nullptr;
      links.push_back(pl);
      prev = id;
      ++taken;
    }
    if (start == nullptr || taken == 0) return false;  // (supports() refused what makes this so: not reached)
    s.chain.resize(taken - 1);  // (the rest: steps of their own)
    const std::string what = name_of(node);
    pending_.push_back([this, yv = &y, start, links, what] {
      chain_params c{};
      c.dtype = yv->dt == dtype::f64 ? chain_dtype::f64 : chain_dtype::f32;
      c.out = address(yv->at);
      set_extents(c, yv->extents);
      add_operand(c, address(start->at), contiguous_strides_in(start->extents, yv->extents));
      for (const auto& l : links) {
        chain_link link = l.link;
        if (l.operand != nullptr) {
          link.operand = static_cast<std::int8_t>(c.n_operands);
          add_operand(c, address(l.operand->at), contiguous_strides_in(l.operand->extents, yv->extents));
        }
        c.links[c.n_links++] = link;
      }
      return kernel_record(chain_launch(c), what, static_cast<std::byte*>(c.out), yv->bytes());
    });
    return true;
  }

  // The element strides of a contiguous tensor of extents `e` read at output extents `out`
  // (broadcasting: a leading or size-1 dim reads stride 0).
  static std::vector<index_t> contiguous_strides_in(const std::vector<index_t>& e, const std::vector<index_t>& out) {
    std::vector<index_t> s(out.size(), 0);
    const std::vector<index_t> own = plan::contiguous_strides(e);
    const std::size_t shift = out.size() - e.size();
    for (std::size_t d = 0; d < e.size(); ++d) s[d + shift] = e[d] == 1 && out[d + shift] != 1 ? 0 : own[d];
    return s;
  }
  static void set_extents(chain_params& c, const std::vector<index_t>& e) {
    c.rank = static_cast<int>(e.size());
    c.n = 1;
    for (std::size_t d = 0; d < e.size(); ++d) {
      c.extent[d] = e[d];
      c.n *= e[d];
    }
  }
  static void add_operand(chain_params& c, const void* at, const std::vector<index_t>& strides) {
    const int k = c.n_operands++;
    c.operands[k].data = at;
    for (std::size_t d = 0; d < strides.size(); ++d) c.operands[k].stride[d] = strides[d];
  }
  static record kernel_record(const kernel_launch& k, const std::string& what, std::byte* out, std::size_t bytes) {
    record r;
    r.what = k;
    r.name = what;
    r.out = out;
    r.out_bytes = bytes;
    return r;
  }

  [[noreturn]] void wrong_device(std::size_t i, const any_tensor& t) const {
    typex::detail::raise<device_error>([&](auto& w) {
      w.put("typex::cuda: input "); w.put_int(static_cast<long long>(i)); w.put(" is on "); w.put(t.device().to_string());
      if (!t.device().is_host()) w.put(detail::runtime_of(t.get_storage(), "typex::cuda: an input")->info().emulated ? " (emulated)" : " (a GPU)");
      w.put(", but the program runs on "); w.put(rt_->where().to_string());
      w.put(rt_->info().emulated ? " (emulated)" : " (a GPU)");
    });
  }

  program_binding binding_;
  compile_options options_;
  std::shared_ptr<device_runtime> rt_;
  device_memory memory_, out_memory_;
  plan::planner planner_;
  std::vector<std::pair<const void*, storage>> weights_;  // host tensor's bytes -> its device copy
  std::vector<std::unique_ptr<cuda_plan>> plans_;         // most recently used first
  cuda_plan* building_ = nullptr;
  std::vector<std::function<record()>> pending_;          // (a plan's records, made once its arena exists)
  std::deque<plan::value> converted_;                     // (values the records being made convert into: converted())
  std::vector<std::string> error_names_;                  // (the device checks of the plan being made: each code's fault)
  std::size_t draws_ = 0;                                 // (the random ops of the plan being made)
};

}  // namespace detail

namespace detail {

// (eager.hpp, which includes program.hpp and so this header: declared here for the order in which
// a unit that includes eager.hpp first sees them)
inline any_tensor run_call(const ir::call_args& a);

// The stepwise engine's kernel for every op: eager.hpp's run_call (the data-dependent ops by their
// own kernels, every other op as a program of one node through the planned engine's lowering).
inline kit::host_kernel step_kernel(op_id) { return &run_call; }

// A program run node by node on the device (the kit's stepwise engine): its weights uploaded once
// to `rt` (the caller's runtime, which its results are allocated from), its inputs checked to be on
// that device as the planned engine checks them, and `rt` the runtime of the calls that have no
// tensor argument (full, arange).
class stepwise_on_device final : public kit::engine {
 public:
  // uploads: the program's weights on the device, shared with the planned engine of a program not
  // trusted (kit::checked_engine), or null
  stepwise_on_device(program_binding b, const compile_options& o, std::shared_ptr<device_runtime> rt, weight_uploads* uploads = nullptr)
      : rt_(std::move(rt)), options_((check_conv_engine(o), o)), inner_(uploaded(std::move(b), rt_, uploads), "cuda", &step_kernel) {}

  bool planned_for(std::span<const any_tensor>) const noexcept override { return false; }
  plan::report report() const override { return inner_.report(); }

  void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) override {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool here = inputs[i].device() == rt_->where() &&
                        detail::runtime_of(inputs[i].get_storage(), "typex::cuda: an input")->info().emulated == rt_->info().emulated;
      if (!here)
        typex::detail::raise<device_error>([&](auto& w) {
          w.put("typex::cuda: input "); w.put_int(static_cast<long long>(i)); w.put(" is on "); w.put(inputs[i].device().to_string());
          w.put(", but the program runs on "); w.put(rt_->where().to_string());
          w.put(rt_->info().emulated ? " (emulated)" : " (a GPU)");
        });
    }
    struct restore {
      std::shared_ptr<device_runtime> previous;
      const compile_options* previous_options;
      ~restore() {
        step_runtime = std::move(previous);
        step_options = previous_options;
      }
    } r{std::exchange(step_runtime, rt_), std::exchange(step_options, &options_)};
    inner_.run(inputs, symbols, outputs);
  }

 private:
  static program_binding uploaded(program_binding b, const std::shared_ptr<device_runtime>& rt, weight_uploads* shared) {
    weight_uploads own;  // (tied names: one upload)
    weight_uploads& up = shared ? *shared : own;
    for (auto& [id, t] : b.constants) t = up.get(t, rt);
    return b;
  }
  std::shared_ptr<device_runtime> rt_;
  compile_options options_;  // (the module's; its device and graphs are not the one-node programs')
  kit::stepwise_engine inner_;
};

}  // namespace detail

// The engine on `rt` itself (no stream of its own: an eager call, which runs and is gone).
TYPEX_CUDA_API std::shared_ptr<kit::engine> detail::make_engine_on(program_binding binding, const compile_options& options,
                                                           const std::shared_ptr<device_runtime>& rt,
                                                           const std::shared_ptr<device_runtime>& out) {
  // (a program not trusted has both engines, the stepwise one made first: they share its upload of
  // the weights, made on the caller's runtime, which the stepwise engine's calls run on)
  weight_uploads uploads;
  return kit::compile_program(std::move(binding), kit::backend_parts{
      "cuda", "CUDA", [](const ir::graph& g, const ir::node& n) { return supports(g, n); },
      [&](program_binding b) -> std::unique_ptr<kit::engine> { return std::make_unique<planned_engine>(std::move(b), options, rt, out, &uploads); },
      // (a program whose sizes the data decide (nonzero), or whose recorded shapes are checked first
      // (an archive loaded untrusted): node by node on the device, on the caller's runtime)
      [&](program_binding b) -> std::unique_ptr<kit::engine> {
        return std::make_unique<detail::stepwise_on_device>(std::move(b), options, out, &uploads);
      }});
}

TYPEX_CUDA_API bool has_cudnn() noexcept {
#if defined(TYPEX_CUDNN)
  return true;
#else
  return false;
#endif
}

TYPEX_CUDA_API passes::decomposition_table fallback_decompositions(const ir::graph& g) {
  passes::decomposition_table t;
  for (const ir::node& n : g.nodes()) {
    if (n.op != ir::node_op::call_function || ir::is_assertion(n) || ir::is_control_flow(n) || t.decomposes(n.target)) continue;
    if (supports(g, n) || !passes::decomposition_of(n.target)) continue;
    t.add(n.target);
  }
  return t;
}

TYPEX_CUDA_API exported_program with_fallback_decompositions(const exported_program& ep) {
  exported_program out = ep;
  for (int round = 0; round < 8; ++round) {
    const passes::decomposition_table t = fallback_decompositions(out.graph());
    if (t.size() == 0) break;
    out = run_decompositions_merged(out, t);  // (attention's backward ops share the scores: they merge)
  }
  return out;
}

}  // namespace typex::cuda

TYPEX_CUDA_API auto typex::cuda_backend::prepare(const exported_program& ep) -> exported_program {
  return cuda::with_fallback_decompositions(ep);
}

namespace typex::cuda {

TYPEX_CUDA_API std::shared_ptr<kit::engine> detail::make_engine(program_binding binding, const compile_options& options) {
  // (module state, the buffers a program writes and the parameters a joint program trains, comes as
  // inputs after the user's: device tensors the module placed (cuda_backend::place_state), staged
  // into their slots as the user inputs are; the written values come back as outputs)
  // (each engine on a stream of its own: device_runtime::for_engine; a device made here is one already)
  const std::shared_ptr<device_runtime> caller = options.device ? options.device : make_native_device(0);
  const std::shared_ptr<device_runtime> rt = options.device ? caller->for_engine() : caller;
  return make_engine_on(std::move(binding), options, rt, caller);
}

}  // namespace typex::cuda
