// typex/passes/fold.hpp — constant folding and no-op removal, in one linear sweep.
//
//   const passes::fold_stats s = passes::fold(g);   // then passes::eliminate_dead_code(g)
//
// (a) No-op views and copies go; their readers (the output too) read their input instead:
//     reshape / view / expand to the input's own shape, permute by the identity, transpose of a
//     dim with itself, _to_copy to the input's dtype with nothing else asked (no layout, device,
//     memory format), slice of the whole extent with step 1, flatten of a rank-1 value or of a
//     single-dim range. Each needs the node's metadata to equal its input's (dtype and shape).
//     Where the output returned such a node, it returns the input's value — the same values, under
//     the input's name (fold_options::keep_output_names keeps such nodes instead).
// (b) Splat constants fold: a value is a splat when every element is one number that the pass
//     knows exactly — aten.full / zeros / ones (with their dtype given), zeros_like / ones_like /
//     full_like (in their input's dtype), and a view (reshape, expand, permute, slice, ...) or a
//     _to_copy of a splat. A pointwise call whose every tensor argument is a splat becomes one
//     aten.full of the call's shape (symbolic sizes included) holding the number the op computes,
//     where the pass computes exactly what a kernel would:
//       - results of dtype f32 or f64, every splat argument of that dtype, computed in that type
//         (float for f32), a number argument converted as the kernels convert it;
//       - the binary ops add and sub (alpha 1), mul, div, maximum, minimum, pow, their op's
//         `scalar(a, b)`; pow with a number (`pow_scalar_op::scalar`);
//       - the unary ops whose math (ops/unary.hpp: `math(m, x, y)` over scalar_math) takes no
//         attribute and is not an activation: neg, abs, exp, log, sqrt, rsqrt, log1p, sin, cos,
//         erf, reciprocal. (Activations — relu, sigmoid, gelu, ... — run as vectorised epilogues on
//         the Eigen backend, whose packet math need not match the scalar functions to the last bit.)
//     The full takes the folded node's name, metadata, nn_module_stack and stack_trace. Its sizes
//     may name only symbols the placeholders' shapes bind (a backend binds those before running);
//     the splats it read stay for eliminate_dead_code to remove when nothing else reads them.
// (c) Symbolic arithmetic: a sym_expr argument that is a constant once simplified (rebuilt through
//     sym_expr's own simplifications: (s0 + 4) - s0 is 4) becomes a plain int, and a list of
//     sym_exprs that are all constants a list of ints. (Assertions keep theirs: typex._assert_shape
//     takes SymInts.)
// Everything else is copied with its name and metadata. Linear in the graph's size.
#pragma once

#include <typex/ir/graph.hpp>
#include <typex/ir/sym_expr.hpp>
#include <typex/passes/pass.hpp>

#include <cstddef>

namespace typex::passes {

struct fold_options {
  bool noop_views = true;          // (a)
  bool splat_constants = true;     // (b)
  bool symbolic_arguments = true;  // (c)
  // a no-op node that the output returns stays (the output keeps the names it returned)
  bool keep_output_names = false;
};

struct fold_stats {
  std::size_t noops_removed = 0;       // (a) nodes removed, their readers reading their input
  std::size_t splats_folded = 0;       // (b) pointwise calls made one aten.full
  std::size_t symbolic_arguments = 0;  // (c) arguments made plain ints
  std::size_t total() const noexcept { return noops_removed + splats_folded + symbolic_arguments; }
};

// The three parts in one sweep, as `options` enables them.
TYPEX_API fold_stats fold(ir::graph& g, fold_options options = {});

inline fold_stats remove_noop_views(ir::graph& g) {
  return fold(g, {.noop_views = true, .splat_constants = false, .symbolic_arguments = false});
}
inline fold_stats fold_splat_constants(ir::graph& g) {
  return fold(g, {.noop_views = false, .splat_constants = true, .symbolic_arguments = false});
}
inline fold_stats fold_symbolic_arguments(ir::graph& g) {
  return fold(g, {.noop_views = false, .splat_constants = false, .symbolic_arguments = true});
}

// e rebuilt bottom-up through sym_expr::apply, which folds constants and cancels sums.
TYPEX_API ir::sym_expr simplify(const ir::sym_expr& e);

// fold as a pipeline pass ("fold"): keeps the signature and metadata; the output's names only
// with keep_output_names.
TYPEX_API pass fold_pass(fold_options options = {});

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/passes/detail/fold_impl.hpp>
#endif  // TYPEX_HEADER_DEFINITIONS
