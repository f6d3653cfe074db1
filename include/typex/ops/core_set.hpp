// typex/ops/core_set.hpp — the core op set: the small functional set every backend implements.
//
// The analogue of PyTorch's Core ATen opset: every other op of the registry has a decomposition
// into these (written in its own header: `template <class C> static void decompose(C& c)`), so a
// backend that runs the core set runs every program after passes::run_decompositions. The list,
// and why each op is core, is in docs/transforming_programs.md. In short:
//   - pointwise math and comparisons that a kernel computes in one pass (relu, exp, erf, sigmoid,
//     tanh, pow, clamp, where, ...), as Core ATen keeps them;
//   - reductions (sum, mean, amax, amin, argmax), the GEMMs (mm, bmm, and matmul: where typex
//     differs from Core ATen, which lowers matmul to views and bmm: typex's backends read
//     broadcast batch dims and transposed operands through strides, which the views would copy),
//     conv2d and the pools with their backward ops;
//   - the shape ops that stay functional (reshape, permute, unsqueeze, squeeze, expand, slice,
//     select, their scatters, cat), the index ops (index_select, gather, index_add, scatter_add,
//     and the data-dependent nonzero, masked_select, masked_scatter), full and arange.start_step,
//     _to_copy, copy, and the random primitive typex.dropout_mask.
// Everything a model's layers add (linear, gelu, silu, softmax, layer_norm, batch_norm, group_norm,
// attention, the losses, var, logsumexp, the *_like factories, ...) is not core: it decomposes.
#pragma once

#include <typex/ops/all.hpp>

#include <algorithm>
#include <array>
#include <string_view>

namespace typex {

using core_ops = op_list<
    // pointwise
    neg_op, abs_op, relu_op, exp_op, log_op, sqrt_op, rsqrt_op, tanh_op, log1p_op, sin_op, cos_op, erf_op, reciprocal_op,
    pow_scalar_op, clamp_op, sigmoid_op, logical_not_op, aten::_to_copy, add_op, sub_op, mul_op, div_op, maximum_op,
    minimum_op, pow_op, eq_op, ne_op, lt_op, le_op, gt_op, ge_op, logical_and_op, logical_or_op, logical_xor_op, where_op,
    // reductions
    aten::sum_dim_IntList, aten::mean_dim, aten::amax, aten::amin, aten::argmax,
    // linear algebra, convolution, pooling
    matmul_op, aten::mm, aten::bmm, aten::conv2d, aten::max_pool2d, aten::avg_pool2d, aten::adaptive_avg_pool2d,
    aten::avg_pool2d_backward, aten::_adaptive_avg_pool2d_backward, max_pool2d_backward_op, aten::embedding_dense_backward,
    // shapes and indexing
    aten::reshape, aten::permute, aten::unsqueeze, aten::squeeze_dim, aten::expand, aten::slice_Tensor, aten::select_int,
    aten::select_scatter, aten::slice_scatter, aten::cat, aten::index_select, aten::gather, aten::index_add,
    aten::scatter_add, aten::nonzero, aten::masked_select, aten::masked_scatter,
    // factories, copies, randomness
    aten::full, aten::arange_start_step, copy_op, dropout_mask_op, aten::nll_loss>;

namespace detail {
// The core ops' targets ("aten.relu.default"), sorted. By name, not by op_id_of<Op>: an id parses the
// op's schema at compile time, which a unit asking "is this op core?" should not pay for every op.
template <class... Ops>
constexpr auto core_op_names(op_list<Ops...>) {
  std::array<std::string_view, sizeof...(Ops)> names{Ops::target...};
  std::sort(names.begin(), names.end());
  return names;
}
template <class List = core_ops>
inline constexpr auto core_op_name_array = core_op_names(List{});
}  // namespace detail

// Whether op `id` is in the core set.
template <class List = core_ops>
constexpr bool is_core_op(op_id id) noexcept {
  const auto& names = detail::core_op_name_array<List>;
  return std::binary_search(names.begin(), names.end(), id.name());
}

}  // namespace typex
