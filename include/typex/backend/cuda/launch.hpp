// typex/backend/cuda/launch.hpp — kernel launch records: what the CUDA backend's lowering
// produces from a plan step and what a device (native or emulated, device.hpp) runs.
//
// Host C++ only, no CUDA header (nvcc compiles it too: the kernels read their parameter structs
// from here, so both sides agree on every byte). A record is plain data: the kernel, its launch
// geometry and its parameters, passed by value to the kernel. The geometry comes from the helpers
// below (chain_launch, copy_launch, reduce_launch), never from the lowering, so that the geometry
// a kernel is written for and the one it is launched with are decided in one place.
#pragma once

#include <typex/config.hpp>
#include <typex/core/error.hpp>
#include <typex/ops/unary.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace typex::cuda {

// A grid or block extent (CUDA's dim3, without the CUDA header).
struct launch_dims {
  unsigned x = 1, y = 1, z = 1;
  friend constexpr bool operator==(const launch_dims&, const launch_dims&) = default;
};

inline constexpr int max_rank = 6;      // dims of a chain's or copy's output
inline constexpr int max_operands = 8;  // tensor operands of a pointwise chain
inline constexpr int max_links = 8;     // ops of a pointwise chain
inline constexpr std::size_t op_bytes = 32;  // the bytes of an op object a chain link carries

// ---- the pointwise chain interpreter (kernels/pointwise.cuh)

// The unary ops a chain link can apply: those of the registry's unary ops whose scalar math is
// written once over a math policy (ops/unary.hpp: op.math(m, x, y)). A link names one by its index
// in this list (unary_code<Op>), fixed at compile time on the host and the device alike.
namespace detail {
template <class Op>
constexpr bool has_unary_math = requires(const Op& op, float x, float& y) { op.math(scalar_math<float>{}, x, y); };
template <class... Ops>
auto unary_math_ops_of(op_list<Ops...>) -> op_list_cat_t<std::conditional_t<has_unary_math<Ops>, op_list<Ops>, op_list<>>...>;
template <class Op, class... Ops>
constexpr int index_in(op_list<Ops...>) {
  int i = 0, found = -1;
  ((std::is_same_v<Op, Ops> ? (found = i, ++i) : ++i), ...);
  return found;
}
template <class... Ops>
constexpr bool all_fit(op_list<Ops...>) {
  return ((std::is_trivially_copyable_v<Ops> && sizeof(Ops) <= op_bytes && alignof(Ops) <= 8) && ...);
}
}  // namespace detail

using chain_unary_ops = decltype(detail::unary_math_ops_of(unary_ops{}));

// A link copies the op object (its attributes: gelu's approximation, leaky_relu's slope, ...) into
// its bytes; the kernel copies them back into an Op and calls its math.
// (An error here: an op with math grew attributes that are not trivially copyable or take more
// than op_bytes; raise op_bytes or keep the attributes plain numbers.)
static_assert(detail::all_fit(chain_unary_ops{}), "typex::cuda: a unary op with math does not fit a chain link's op bytes");
static_assert(chain_unary_ops::size <= 255, "typex::cuda: chain link codes are one byte");

// The code of unary op Op in a chain link (its index in chain_unary_ops).
template <class Op>
inline constexpr int unary_code = detail::index_in<Op>(chain_unary_ops{});

enum class chain_dtype : std::uint8_t { f32, f64 };
enum class link_kind : std::uint8_t { unary, add, sub, mul, div };

// One op applied to the chain's running value y.
//   unary:   y = Op::math(y), Op = the chain_unary_ops entry `code`, its object in `op`;
//   binary:  y = y (op) b, b = operand `operand` at this element, or `number` where operand < 0;
//            add / sub: y + alpha b, y - alpha b (torch's alpha); with chain_second, y is the op's
//            second argument: b + alpha y, b - alpha y, b * y, b / y.
struct chain_link {
  link_kind kind = link_kind::unary;
  std::uint8_t code = 0;
  std::int8_t operand = -1;
  bool chain_second = false;
  double number = 0.0;
  double alpha = 1.0;
  alignas(8) unsigned char op[op_bytes] = {};
};

// A tensor operand: its data and its element strides per output dim (0: broadcast along it).
struct chain_operand {
  const void* data = nullptr;
  std::int64_t stride[max_rank] = {};
};

// out[i] = links applied in order to operand 0 at element i, for the n elements of a contiguous
// output of `rank` dims (`extent`, row-major). Every operand and the output have dtype `dtype`.
struct chain_params {
  chain_dtype dtype = chain_dtype::f32;
  std::int32_t rank = 0;
  std::int32_t n_operands = 0;
  std::int32_t n_links = 0;
  void* out = nullptr;
  std::int64_t n = 0;
  std::int64_t extent[max_rank] = {};
  chain_operand operands[max_operands];
  chain_link links[max_links];
};
// (CUDA kernel parameters: at most 4 KiB before CUDA 12.1 / Volta, and trivially copyable)
static_assert(sizeof(chain_params) < 4096 && std::is_trivially_copyable_v<chain_params>);

// ---- strided copy (kernels/copy.cuh)

// dst[i] = src[offset of element i] (see dst_strided), for the n elements of a contiguous output of `rank` dims
// (`extent`, row-major), src read with element strides `src_stride` (any, 0 and negative too);
// elements of `itemsize` bytes (1, 2, 4 or 8: the copy moves bits, whatever the dtype).
struct copy_params {
  const void* src = nullptr;
  void* dst = nullptr;
  std::int32_t itemsize = 4;
  std::int32_t rank = 0;
  std::int64_t n = 0;
  std::int64_t extent[max_rank] = {};
  std::int64_t src_stride[max_rank] = {};
  // (with dst_strided, element i goes to dst at its offset under dst_stride: a slice of a larger
  // tensor, as cat and the scatters write; else dst is contiguous)
  bool dst_strided = false;
  std::int64_t dst_stride[max_rank] = {};
};
static_assert(std::is_trivially_copyable_v<copy_params>);

// ---- reductions and softmax over any dims (kernels/reduce.cuh)

enum class reduce_kind : std::uint8_t { sum, mean, softmax, log_softmax, amax, amin, argmax, var, std, logsumexp };

// One block per row: a row is one element of the output (sum, mean, amax, amin, argmax, var) or one
// softmax line, over `cols` input elements. Addressing:
//   rank_red == 0: the contiguous f32 matrix [rows, cols] (row r at in + r cols; softmax's output
//                  likewise, the others' at out[r]);
//   rank_red > 0:  row r's first element at sum(coord_k(r) kept_stride[k]) for r's coordinates in
//                  kept_extent (row-major), and element c at sum(coord_j(c) red_stride[j]) for c's
//                  coordinates in red_extent; softmax writes the output at the same offsets (its
//                  output is contiguous like its input), the others write out[r].
// argmax writes int64 indices (index_out; the flat index over the reduced dims, the first maximum,
// a NaN counting as the maximum, as torch); var divides by max(cols - correction, 0), std is its root;
// logsumexp is max + log(sum(exp(x - max))) (an infinite max is the result).
// The input's dtype (`type`): f32 and f64, every kind, computed in that type; i64, i32 and b8
// (integers: sum, amax, amin, argmax; b8 sum only), computed in int64, exactly. The output: sum of
// an integer type is int64 (torch's promotion), amax / amin keep the input's type, the other kinds
// the input's (f32 / f64).
enum class reduce_type : std::uint8_t { f32, f64, i64, i32, b8 };
struct reduce_params {
  reduce_kind kind = reduce_kind::sum;
  const void* in = nullptr;
  void* out = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t* index_out = nullptr;
  double correction = 1.0;
  std::int32_t rank_kept = 0;
  std::int32_t rank_red = 0;
  std::int64_t kept_extent[max_rank] = {};
  std::int64_t kept_stride[max_rank] = {};
  std::int64_t red_extent[max_rank] = {};
  std::int64_t red_stride[max_rank] = {};
  reduce_type type = reduce_type::f32;
};
static_assert(std::is_trivially_copyable_v<reduce_params>);

// ---- layer norm, group norm, batch norm with running statistics (kernels/norm.cuh)

enum class norm_kind : std::uint8_t { layer, group, batch_eval };

// y[r, c] = (x[r, c] - mean_r) / sqrt(var_r + eps) * weight[.] + bias[.] over the contiguous f32
// [rows, cols] (var: the biased variance, as torch); weight / bias may be null. The statistics and
// the affine's index:
//   layer:      each row's own; weight[c];
//   group:      each row's own (a row is one image's group of channels_per_group channels of
//               `inner` elements each); weight[(r % groups) channels_per_group + c / inner];
//   batch_eval: running_mean / running_var[r % channels] (a row is one image's channel plane);
//               weight[r % channels].
// mean / rstd, where not null, get each row's mean and 1 / sqrt(var + eps) (native_layer_norm's
// saved statistics).
struct norm_params {
  norm_kind kind = norm_kind::layer;
  std::int64_t groups = 1, channels_per_group = 1, inner = 1, channels = 1;
  const float* running_mean = nullptr;
  const float* running_var = nullptr;
  const float* in = nullptr;
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  double eps = 1e-5;
};
static_assert(std::is_trivially_copyable_v<norm_params>);

// ---- convolution (kernels/conv.cuh)

// conv2d of the f32 NCHW input [n, c, h, w] by the weight [oc, c / groups, kh, kw] into [n, oc, oh,
// ow], + bias[oc] (may be null), then the activation `act` where has_act: an implicit GEMM
// (M = n oh ow output pixels, N = oc / groups channels per group, K = c / groups kh kw).
struct conv_params {
  bool f64 = false;  // (the element type of every tensor: double, else float)
  const void* in = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* out = nullptr;
  std::int64_t n = 0, c = 0, h = 0, w = 0;
  std::int64_t oc = 0, kh = 0, kw = 0, oh = 0, ow = 0, groups = 1;
  std::int64_t stride[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  bool has_act = false;
  chain_link act;
  // Split K (a product whose few output tiles would leave the GPU idle while each block walks a
  // long reduction: the weight gradient's convolution, K = batch x output pixels): k_splits > 1
  // blocks per tile each sum one stretch of K (a whole number of slabs) into partial[split] (the
  // output's layout), and a `finish` launch (one thread per output element) adds the stretches in
  // order (deterministic), then the bias and the activation.
  int k_splits = 1;
  bool finish = false;
  void* partial = nullptr;
};
static_assert(std::is_trivially_copyable_v<conv_params>);

// ---- pooling (kernels/pool.cuh)

enum class pool_kind : std::uint8_t { max, avg, adaptive_avg, max_backward, avg_backward, adaptive_avg_backward };

// Over `planes` f32 (or f64, where f64) planes [h, w] into [oh, ow] each: max (NaN propagates; padding never wins),
// avg (count_include_pad, divisor: divisor_override or 0), adaptive avg (torch's windows
// [floor(i h / oh), ceil((i + 1) h / oh))). The backward kinds write the gradient of the input
// (out: planes x [h, w]) from the output's (grad: planes x [oh, ow]), one thread per input element
// summing over the windows that hold it (no atomics: deterministic); max's goes to each window's
// first maximum, recomputed from the input (in), as torch's.
struct pool_params {
  pool_kind kind = pool_kind::max;
  bool f64 = false;                // (the element type of in, grad and out: double, else float)
  const void* in = nullptr;
  const void* grad = nullptr;
  void* out = nullptr;
  std::int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
  std::int64_t k[2] = {1, 1}, stride[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  bool include_pad = true;
  std::int64_t divisor = 0;
};
static_assert(std::is_trivially_copyable_v<pool_params>);

// ---- elementwise ops of any dtype (kernels/map.cuh)

// The ops of the map kernel: those of the registry that the pointwise chain (f32 / f64, one dtype)
// does not take: comparisons and logic (a bool result), where, maximum / minimum, pow, conversion
// between dtypes, the arithmetic of integers, and the factories (fill, iota).
enum class map_op : std::uint8_t {
  convert, eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor, logical_not, where, maximum, minimum, pow,
  add, sub, mul, div, neg, abs, threshold_backward, fill, iota, clamp, unary, tril, triu, dropout_mask, gelu_backward
};
// The type the op computes in: the operands are read into it, the result written from it.
enum class map_compute : std::uint8_t { f32, f64, i64 };
// (typex's dtype codes, core/dtype.hpp, as one byte: b8, u8, i8, i16, i32, i64, f16, bf16, f32, f64)
enum class map_dtype : std::uint8_t { b8, u8, i8, i16, i32, i64, f16, bf16, f32, f64 };

// An operand: a tensor read through element strides per output dim (0: broadcast), or a number.
struct map_operand {
  const void* data = nullptr;  // (null: `number`)
  map_dtype dt = map_dtype::f32;
  double number = 0.0;
  std::int64_t stride[max_rank] = {};
};

// out[i] = op(operands at element i) for the n elements of a contiguous output of `rank` dims.
//   convert, neg, abs, logical_not: one operand; where: (condition, a, b); threshold_backward:
//   (grad, x) with `a` the threshold (0 where x <= a, else grad); gelu_backward: (grad, x), grad
//   times gelu'(x), the tanh form where `a` is 1 (a float compute type only); add / sub: y = x0 ± alpha x1;
//   fill: every element `a`; iota: a + i b (arange's start and step); clamp: to [a, b] where
//   has_lo / has_hi; unary: the registry op `link` (a chain link) of a float compute type, on an
//   operand of another dtype (tanh of an int64 tensor); tril / triu: the operand where the element's
//   column minus its row (the last two dims) is at most / at least `a`, else 0; dropout_mask: `a`
//   (1 / (1 - p)) where element i of the draw at `draw` (its seed and offset, written into device
//   memory before each call) is kept (its Philox word below `threshold`: core/random.hpp), else 0:
//   the CPU's mask for the same draw, bit for bit.
struct map_params {
  map_op op = map_op::convert;
  map_compute compute = map_compute::f32;
  map_dtype out_dt = map_dtype::f32;
  std::int32_t rank = 0;
  std::int32_t n_operands = 0;
  void* out = nullptr;
  std::int64_t n = 0;
  double a = 0.0, b = 0.0, alpha = 1.0;
  bool has_lo = false, has_hi = false;
  const std::uint64_t* draw = nullptr;
  std::uint64_t threshold = 0;
  std::int64_t extent[max_rank] = {};
  map_operand operands[3];
  chain_link link;
};
static_assert(sizeof(map_params) < 4096 && std::is_trivially_copyable_v<map_params>);

// ---- indexing (kernels/index.cuh)

enum class index_kind : std::uint8_t { take, add, count };

// Over the n elements of an iteration shape (`rank` dims, `extent`), each with coordinates c:
//   take: out[c . out_stride] = src[c . src_stride with c[dim] replaced by idx]  (index_select,
//         embedding, gather: bits of `itemsize` bytes);
//   add:  out[c . out_stride with c[dim] replaced by idx] += alpha src[c . src_stride]  (index_add,
//         scatter_add, embedding's backward: f32 or f64 (`itemsize` 4 or 8), atomically).
//   count: counts[idx] += 1 (doubles, atomically: exact to 2^53), for embedding's backward with
//         scale_grad_by_freq, whose add then scales each term by 1 / counts[idx] (as torch's);
// idx = index[c . index_stride] (int64, or int32 where index32); an idx outside [0, dim_size) is
// skipped (take writes 0) and sets *error to `code` where that is larger (the engine reads it after
// the call and throws naming the node); idx == skip_index is skipped silently (embedding's
// padding_idx; -1: none).
struct index_params {
  index_kind kind = index_kind::take;
  std::int32_t itemsize = 4;
  std::int32_t rank = 0;
  std::int32_t dim = 0;
  bool index32 = false;
  const void* src = nullptr;
  void* out = nullptr;
  const void* index = nullptr;
  int* error = nullptr;
  int code = 1;
  std::int64_t n = 0;
  std::int64_t dim_size = 0;
  std::int64_t skip_index = -1;
  double alpha = 1.0;
  double* counts = nullptr;  // (count: written; add: each term divided by counts[idx] where given)
  std::int64_t extent[max_rank] = {};
  std::int64_t src_stride[max_rank] = {};
  std::int64_t out_stride[max_rank] = {};
  std::int64_t index_stride[max_rank] = {};
};
static_assert(std::is_trivially_copyable_v<index_params>);

// ---- compaction (kernels/select.cuh): nonzero, masked_select, masked_scatter

enum class select_kind : std::uint8_t { count, write, scan, scatter };

// Over the n elements of an iteration shape (`rank` dims, `extent`, row-major), in chunks of
// select_chunk elements (one block each): an element is selected where its condition
// cond[c . cond_stride] is not zero (items of cond_itemsize bytes; cond_float: a float of that width,
// its sign bit ignored, so -0.0 is zero and NaN is not, as torch's nonzero, for f16 and bf16 too).
//   count: counts[block] = the selected elements of the block's chunk;
//   write: the selected elements of the block's chunk, in order, from offsets[block] on (the counts'
//          exclusive prefix sums, made on the host): with `coords`, each one's coordinates
//          (int64, `rank` per element: nonzero); else the bits of src[c . src_stride] (`itemsize`
//          bytes: masked_select).
//   scan: one block: counts[0, chunks) (chunks = select_blocks(n)) replaced in place by their
//          exclusive prefix sums, each chunk's first position in the source (a planned
//          masked_scatter's offsets, made on the device: no synchronization, capturable).
//   scatter: every element of the chunk: out[i] = the next element of source (the flat
//          source_n elements, from offsets[block] on, in order) where its condition holds, else the
//          bits of src[c . src_stride] (self, broadcast); past source's end nothing is read and
//          `error` takes `code` (atomic max: the plan's error word), as the index kernels do.
struct select_params {
  select_kind kind = select_kind::count;
  std::int32_t rank = 0;
  std::int32_t cond_itemsize = 1;
  bool cond_float = false;
  bool coords = true;
  std::int32_t itemsize = 4;
  std::int64_t n = 0;
  const void* cond = nullptr;
  const void* src = nullptr;
  void* out = nullptr;
  std::int64_t* counts = nullptr;
  const std::int64_t* offsets = nullptr;
  const void* source = nullptr;  // (scatter)
  std::int64_t source_n = 0;
  int* error = nullptr;
  int code = 0;
  std::int64_t extent[max_rank] = {};
  std::int64_t cond_stride[max_rank] = {};
  std::int64_t src_stride[max_rank] = {};
};
static_assert(std::is_trivially_copyable_v<select_params>);
inline constexpr std::int64_t select_chunk = 4096;  // (elements per block: 16 rounds of 256 threads)

// ---- losses (kernels/loss.cuh)

enum class loss_kind : std::uint8_t { nll, cross_entropy, mse, finish };
enum class loss_reduction : std::uint8_t { none = 0, mean = 1, sum = 2 };  // (torch's Reduction enum)

// nll / cross_entropy: one block per row of the f32 [rows, cols] input (scores, or log-probabilities
// for nll), target[row] a class index (int64, or int32 where target32; ignore_index: no loss, no
// weight; another index outside [0, cols): the error word, as the index kernel's); the row's loss
// -w log p (cross_entropy: the log-softmax of the row, in the same block) and its weight w (weight[t],
// or 1). mse: block b sums (in[i] - target[i])^2 over its share of the n = rows elements (target f32).
// With reduction none each row's loss is out[row] (mse: out[i]); else each block leaves (loss,
// weight) in partial[2 row], and `finish` (one block) writes out[0]: the sum, or the sum over the
// weights' sum (mean).
struct loss_params {
  loss_kind kind = loss_kind::nll;
  loss_reduction reduction = loss_reduction::mean;
  bool target32 = false;
  const float* in = nullptr;
  const void* target = nullptr;
  const float* weight = nullptr;
  float* out = nullptr;
  float* partial = nullptr;
  int* error = nullptr;
  int code = 1;
  std::int64_t rows = 0, cols = 0;
  std::int64_t ignore_index = -100;
  // (nll / cross_entropy over spatial scores [N, C, d...]: the product of d..., each row (n, p)
  // reading its C scores at in[(n C) inner + c inner + p]; 1 for [N, C] and [C])
  std::int64_t inner = 1;
};
static_assert(std::is_trivially_copyable_v<loss_params>);

// ---- optimizer updates (kernels/optim.cuh)

enum class optim_kind : std::uint8_t { sgd, adam, scale, power_sum, many, many_power_sums };

// One parameter's update, element by element (n elements of f32, or f64 where f64): torch.optim's
// single-tensor step as nn/optim.hpp's host loop writes it, the scalars in double and converted to
// the parameter's dtype in the kernel as the host converts them. sgd: buf1 the momentum buffer
// (null: none); adam: buf1 exp_avg, buf2 exp_avg_sq, buf3 max_exp_avg_sq (null: no AMSGrad); scale:
// param *= factor.
struct optim_params {
  optim_kind kind = optim_kind::sgd;
  bool f64 = false;
  bool maximize = false, first = false, nesterov = false, decoupled = false, weight_decay_on = false;
  void* param = nullptr;
  const void* grad = nullptr;
  void* buf1 = nullptr;
  void* buf2 = nullptr;
  void* buf3 = nullptr;
  std::int64_t n = 0;
  double weight_decay = 0, momentum = 0, keep = 1, lr_step = 0;
  double step_size = 0, bias2_sqrt = 1, one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0, eps = 0, decay = 1;
  double factor = 1;
  // power_sum (clip_grad_norm_): sums[c] = chunk c's sum of |param|^norm_type (tensor/device_ops.hpp's
  // power_sum_chunk elements each, in order; the largest |param| for an infinite norm_type), a thread
  // per chunk
  double norm_type = 2;
  bool inf_norm = false;  // (decided on the host: std::isinf(norm_type))
  double* sums = nullptr;
  std::int64_t chunk = 1024;
  // many (one optimizer step over several parameters, one launch): `count` updates (sgd, adam or
  // scale, all of this launch's dtype) in a table in device memory, ordered by `first_block`; each
  // block updates `chunk` elements of the entry whose blocks it falls in (blocks: the sum of every
  // entry's ceil(n / chunk)). No two entries may touch the same memory (optimizer_step checks).
  // many_power_sums (clip_grad_norm_'s sums of several gradients, one launch): `count` power_sum
  // entries in `table`, ordered by `first_block` (there: the entry's first chunk in the launch), a
  // thread per chunk over the n chunks of them all.
  const optim_params* table = nullptr;
  std::int32_t count = 0;
  std::int64_t blocks = 0;
  std::int64_t first_block = 0;  // (an entry's: its first block, or chunk, in the launch)
};
static_assert(std::is_trivially_copyable_v<optim_params>);

// ---- fused attention (kernels/attention.cuh)

enum class attention_mask : std::uint8_t { none, boolean, additive };
// What an attention launch computes: the forward (out [b, l, ev]); the backward's statistics
// (typex.attention_stats: out [b, l, 2], from grad and fwd_out); the query's, key's or value's
// gradient (typex.scaled_dot_product_attention_backward: out [b, l, e], [b, s, e] or [b, s, ev],
// from grad and stats; kernels/attention_backward.cuh), or the key's and the value's in one pass
// (grad_key_value: out the key's, out2 the value's).
enum class attention_pass : std::uint8_t { forward, stats, grad_query, grad_key, grad_value, grad_key_value };

// scaled_dot_product_attention without dropout, the scores never stored: out[b, i, :] =
// sum_j softmax_j(scale q[b, i] . k[b, j] + mask) v[b, j] for the `batches` batch entries of the
// output's batch dims (batch_rank of them, `batch_extent`, row-major), each operand's batch entry at
// the sum of its batch strides (0 along a broadcast dim). q [l, e], k [s, e], v [s, ev] and out
// [l, ev] are contiguous in their last two dims; a mask element (i, j) of batch entry b is at its
// batch offset + i mask_row_stride + j mask_col_stride (bool: false excludes the key; additive: f32
// added to the score). causal: key j only for query i >= j (top-left aligned, as PyTorch). A row
// whose every key is excluded is NaN (the math path's 0 / 0); s = 0 gives zeros (an empty sum).
struct attention_params {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const void* mask = nullptr;
  float* out = nullptr;
  attention_mask mask_kind = attention_mask::none;
  bool causal = false;
  float scale = 1.0f;
  int batch_rank = 0;
  std::int64_t batches = 1, l = 0, s = 0, e = 0, ev = 0;
  std::int64_t batch_extent[max_rank] = {};
  std::int64_t q_batch_stride[max_rank] = {}, k_batch_stride[max_rank] = {}, v_batch_stride[max_rank] = {},
               mask_batch_stride[max_rank] = {};
  std::int64_t mask_row_stride = 0, mask_col_stride = 0;
  attention_pass pass = attention_pass::forward;
  const float* grad = nullptr;     // (stats, gradients: the output's gradient, [b, l, ev])
  const float* fwd_out = nullptr;  // (stats: the forward's output, [b, l, ev])
  const float* stats = nullptr;    // (gradients: [b, l, 2])
  float* out2 = nullptr;           // (grad_key_value: the value's gradient, [b, s, ev]; out is the key's)
};
static_assert(std::is_trivially_copyable_v<attention_params>);

// ---- the record

enum class kernel_kind : std::uint8_t { chain, copy, reduce, norm, conv, pool, map, index, loss, optim, attention, select };

inline constexpr const char* kernel_name(kernel_kind k) noexcept {
  switch (k) {
    case kernel_kind::chain: return "chain";
    case kernel_kind::copy: return "copy";
    case kernel_kind::reduce: return "reduce";
    case kernel_kind::norm: return "norm";
    case kernel_kind::conv: return "conv";
    case kernel_kind::pool: return "pool";
    case kernel_kind::map: return "map";
    case kernel_kind::index: return "index";
    case kernel_kind::loss: return "loss";
    case kernel_kind::optim: return "optim";
    case kernel_kind::attention: return "attention";
    case kernel_kind::select: return "select";
  }
  return "?";
}

struct kernel_launch {
  kernel_kind kind = kernel_kind::chain;
  launch_dims grid, block;
  std::uint32_t shared_bytes = 0;  // dynamic shared memory
  std::variant<chain_params, copy_params, reduce_params, norm_params, conv_params, pool_params, map_params, index_params, loss_params,
               optim_params, attention_params, select_params>
      params;
};

// ---- launch geometry

// Elementwise kernels: 256 threads per block, a grid-stride loop, at most this many blocks (enough
// to fill an H100's 132 SMs several times; more blocks only add scheduling).
inline constexpr unsigned elementwise_threads = 256;
inline constexpr unsigned elementwise_max_blocks = 1024;
// Row kernels: one block of 256 threads per row (8 warps), shared memory of one float per warp.
inline constexpr unsigned row_threads = 256;

namespace detail {
inline launch_dims elementwise_grid(std::int64_t n) {
  const std::int64_t blocks = (n + elementwise_threads - 1) / elementwise_threads;
  return {static_cast<unsigned>(blocks < 1 ? 1 : blocks > elementwise_max_blocks ? elementwise_max_blocks : blocks), 1, 1};
}
inline void check_extents(const char* kernel, int rank, const std::int64_t* extent, std::int64_t n) {
  if (rank < 0 || rank > max_rank)
    typex::detail::raise_message<argument_error>(std::string("typex::cuda::") + kernel + "_launch: rank " + std::to_string(rank) +
                                                 " (at most " + std::to_string(max_rank) + ")");
  std::int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    // (an extent below 0, or a product past 2^62, core/sizes.hpp's limit: refused before it wraps)
    if (extent[d] < 0 || (extent[d] != 0 && count > (std::int64_t{1} << 62) / extent[d]))
      typex::detail::raise_message<argument_error>(std::string("typex::cuda::") + kernel + "_launch: extent " + std::to_string(extent[d]) +
                                                   " of dim " + std::to_string(d) + " is negative or makes the element count overflow");
    count *= extent[d];
  }
  if (count != n)
    typex::detail::raise_message<argument_error>(std::string("typex::cuda::") + kernel + "_launch: n = " + std::to_string(n) +
                                                 " is not the product of the extents (" + std::to_string(count) + ")");
}
}  // namespace detail

inline kernel_launch chain_launch(const chain_params& p) {
  detail::check_extents("chain", p.rank, p.extent, p.n);
  if (p.n_operands < 1 || p.n_operands > max_operands || p.n_links < 0 || p.n_links > max_links)
    typex::detail::raise_message<argument_error>(std::string("typex::cuda::chain_launch: ") + std::to_string(p.n_operands) + " operands and " +
                                                 std::to_string(p.n_links) + " links (1 to 8 operands, at most 8 links)");
  for (int l = 0; l < p.n_links; ++l) {
    const chain_link& k = p.links[l];
    if (k.kind == link_kind::unary ? k.code >= chain_unary_ops::size : k.operand >= p.n_operands)
      typex::detail::raise_message<argument_error>(std::string("typex::cuda::chain_launch: link ") + std::to_string(l) +
                                                   " names an op code or operand the chain does not have");
  }
  return {kernel_kind::chain, detail::elementwise_grid(p.n), {elementwise_threads, 1, 1}, 0, p};
}

inline kernel_launch copy_launch(const copy_params& p) {
  detail::check_extents("copy", p.rank, p.extent, p.n);
  if (p.itemsize != 1 && p.itemsize != 2 && p.itemsize != 4 && p.itemsize != 8)
    typex::detail::raise_message<argument_error>(std::string("typex::cuda::copy_launch: itemsize ") + std::to_string(p.itemsize) + " (1, 2, 4 or 8)");
  return {kernel_kind::copy, detail::elementwise_grid(p.n), {elementwise_threads, 1, 1}, 0, p};
}

inline kernel_launch reduce_launch(const reduce_params& p) {
  if (p.rows < 0 || p.cols < 0 || p.rows > 2147483647)
    typex::detail::raise_message<argument_error>(std::string("typex::cuda::reduce_launch: ") + std::to_string(p.rows) + " rows of " +
                                                 std::to_string(p.cols) + " (one block per row: at most 2^31 - 1 rows)");
  if (p.rank_kept < 0 || p.rank_kept > max_rank || p.rank_red < 0 || p.rank_red > max_rank ||
      (p.kind == reduce_kind::argmax) != (p.index_out != nullptr))
    typex::detail::raise_message<argument_error>("typex::cuda::reduce_launch: ranks past 6, or an argmax without its index output");
  if (p.rank_red > 0) {
    detail::check_extents("reduce", p.rank_kept, p.kept_extent, p.rows);
    detail::check_extents("reduce", p.rank_red, p.red_extent, p.cols);
  }
  const bool integer = p.type == reduce_type::i64 || p.type == reduce_type::i32 || p.type == reduce_type::b8;
  const bool integer_kind = p.kind == reduce_kind::sum || p.kind == reduce_kind::amax || p.kind == reduce_kind::amin || p.kind == reduce_kind::argmax;
  if (integer && (!integer_kind || (p.type == reduce_type::b8 && p.kind != reduce_kind::sum)))
    typex::detail::raise_message<argument_error>("typex::cuda::reduce_launch: an integer or bool input reduces by sum, amax, amin or argmax "
                                                 "(bool: sum)");
  // (per warp: a partial of 8 bytes, the f32 kernel's too, and argmax's int64 index)
  return {kernel_kind::reduce,
          {static_cast<unsigned>(p.rows < 1 ? 1 : p.rows), 1, 1},
          {row_threads, 1, 1},
          static_cast<std::uint32_t>(row_threads / 32 * (sizeof(double) + sizeof(std::int64_t))),
          p};
}

inline kernel_launch norm_launch(const norm_params& p) {
  const bool shape = p.kind == norm_kind::layer ||
                     (p.kind == norm_kind::group && p.groups >= 1 && p.channels_per_group >= 1 && p.inner >= 1 &&
                      p.channels_per_group * p.inner == p.cols) ||
                     (p.kind == norm_kind::batch_eval && p.channels >= 1 && p.running_mean != nullptr && p.running_var != nullptr);
  if (p.rows < 0 || p.cols < 0 || p.inner < 1 || p.rows > 2147483647 || !(p.eps >= 0) || !shape)
    typex::detail::raise_message<argument_error>(std::string("typex::cuda::norm_launch: ") + std::to_string(p.rows) + " rows of " +
                                                 std::to_string(p.cols) + " (at most 2^31 - 1 rows; eps not negative; a group norm's rows of channels_per_group x inner, a batch norm's running statistics)");
  return {kernel_kind::norm,
          {static_cast<unsigned>(p.rows < 1 ? 1 : p.rows), 1, 1},
          {row_threads, 1, 1},
          static_cast<std::uint32_t>(row_threads / 32 * sizeof(float)),
          p};
}

// conv2d's tiles: conv_tile_m output pixels by conv_tile_n channels per block of 256 threads (each
// 8 x 4 results), conv_tile_k of the reduction staged in shared memory per step.
inline constexpr unsigned conv_tile_m = 128, conv_tile_n = 64, conv_tile_k = 16;

// How many stretches of K a convolution's blocks split its reduction into (1: none): enough blocks
// for about two waves of an H100's 132 SMs where the tiles alone are fewer than 64 blocks and the
// reduction is long (at least 32 slabs), each stretch at least 8 slabs and none empty, the partial
// sums at most 64 MiB.
inline int conv_k_splits(const conv_params& p) {
  if (p.n < 1 || p.oh < 1 || p.ow < 1 || p.groups < 1 || p.oc < p.groups || p.c < p.groups) return 1;
  const std::int64_t m = p.n * p.oh * p.ow, tiles_m = (m + conv_tile_m - 1) / conv_tile_m;
  const std::int64_t tiles_n = (p.oc / p.groups + conv_tile_n - 1) / conv_tile_n;
  const std::int64_t blocks = tiles_m * tiles_n * p.groups;
  const std::int64_t slabs = (p.c / p.groups * p.kh * p.kw + conv_tile_k - 1) / conv_tile_k;
  if (blocks >= 64 || slabs < 32) return 1;
  std::int64_t splits = (264 + blocks - 1) / blocks;
  splits = std::min<std::int64_t>({splits, slabs / 8, 128, (std::int64_t{64} << 20) / (m * p.oc * 4 > 0 ? m * p.oc * 4 : 1)});
  if (splits < 2) return 1;
  // (as many stretches as ceil(slabs / per) for the stretch the kernel gives each: none is empty)
  const std::int64_t per = (slabs + splits - 1) / splits;
  return static_cast<int>((slabs + per - 1) / per);
}

inline kernel_launch conv_launch(const conv_params& p) {
  const bool bad = p.n < 0 || p.c < 1 || p.h < 1 || p.w < 1 || p.oc < 1 || p.kh < 1 || p.kw < 1 || p.oh < 1 || p.ow < 1 ||
                   p.groups < 1 || p.c % p.groups != 0 || p.oc % p.groups != 0 || p.stride[0] < 1 || p.stride[1] < 1 ||
                   p.dil[0] < 1 || p.dil[1] < 1 || p.pad[0] < 0 || p.pad[1] < 0 || p.k_splits < 1 ||
                   (p.k_splits > 1 && p.partial == nullptr);
  if (bad)
    typex::detail::raise_message<argument_error>(
        "typex::cuda::conv_launch: sizes out of range, channels that do not split into the groups, or a split K without its partial sums");
  const std::int64_t m = p.n * p.oh * p.ow, tiles_m = (m + conv_tile_m - 1) / conv_tile_m;
  const std::int64_t tiles_n = (p.oc / p.groups + conv_tile_n - 1) / conv_tile_n;
  if (tiles_m > 2147483647 || tiles_n > 65535 || p.groups * p.k_splits > 65535 || p.c / p.groups * p.kh * p.kw > 2147483647 - conv_tile_k)
    typex::detail::raise_message<argument_error>(
        "typex::cuda::conv_launch: more output pixels, channels or groups than a grid holds, or a reduction past 2^31 terms");
  if (p.finish) {
    const std::int64_t extents[4] = {p.n, p.oc, p.oh, p.ow};
    detail::check_extents("conv", 4, extents, p.n * p.oc * p.oh * p.ow);
    return {kernel_kind::conv, detail::elementwise_grid(p.n * p.oc * p.oh * p.ow), {elementwise_threads, 1, 1}, 0, p};
  }
  return {kernel_kind::conv,
          {static_cast<unsigned>(tiles_m < 1 ? 1 : tiles_m), static_cast<unsigned>(tiles_n), static_cast<unsigned>(p.groups * p.k_splits)},
          {256, 1, 1},
          // (the A and B slabs, then two slabs' k offsets (int64) and window offsets (2 int))
          static_cast<std::uint32_t>(conv_tile_k * (conv_tile_m + conv_tile_n) * (p.f64 ? sizeof(double) : sizeof(float)) +
                                     2 * conv_tile_k * (sizeof(std::int64_t) + 2 * sizeof(int))),
          p};
}

inline kernel_launch map_launch(const map_params& p) {
  detail::check_extents("map", p.rank, p.extent, p.n);
  if (p.n_operands < 0 || p.n_operands > 3)
    typex::detail::raise_message<argument_error>("typex::cuda::map_launch: 0 to 3 operands");
  for (int k = 0; k < p.n_operands; ++k)
    if (p.operands[k].dt == map_dtype::f16 || p.operands[k].dt == map_dtype::bf16)
      typex::detail::raise_message<argument_error>("typex::cuda::map_launch: f16 and bf16 operands are not read by the map kernel");
  if (p.out_dt == map_dtype::f16 || p.out_dt == map_dtype::bf16)
    typex::detail::raise_message<argument_error>("typex::cuda::map_launch: f16 and bf16 results are not written by the map kernel");
  return {kernel_kind::map, detail::elementwise_grid(p.n), {elementwise_threads, 1, 1}, 0, p};
}

inline kernel_launch index_launch(const index_params& p) {
  detail::check_extents("index", p.rank, p.extent, p.n);
  const bool sizes = p.kind == index_kind::take    ? (p.itemsize == 1 || p.itemsize == 2 || p.itemsize == 4 || p.itemsize == 8)
                     : p.kind == index_kind::count ? p.counts != nullptr
                                                   : (p.itemsize == 4 || p.itemsize == 8);
  if (!sizes || p.dim < 0 || p.dim >= (p.rank < 1 ? 1 : p.rank) || p.error == nullptr || p.code < 1)
    typex::detail::raise_message<argument_error>(
        "typex::cuda::index_launch: items of 1, 2, 4 or 8 bytes (4 or 8 to add), a dim of the iteration, and an error word");
  return {kernel_kind::index, detail::elementwise_grid(p.n), {elementwise_threads, 1, 1}, 0, p};
}

// One block of 256 threads per chunk of select_chunk elements (the write and scatter passes scan
// each round of 256 in shared memory: 256 int64); the scan pass, one block.
inline std::int64_t select_blocks(std::int64_t n) { return (n + select_chunk - 1) / select_chunk; }

// An operand's element strides along the `rank` dims of the shape it broadcasts to (right-aligned,
// as torch's expand): 0 along a dim of extent 1 or one the operand lacks. For select_params' strides.
inline void broadcast_strides(const std::vector<std::int64_t>& operand, std::size_t rank, std::int64_t* stride) {
  for (std::size_t d = 0; d < rank; ++d) stride[d] = 0;
  std::int64_t step = 1;
  for (std::size_t k = 0; k < operand.size() && k < rank; ++k) {
    const std::int64_t extent = operand[operand.size() - 1 - k];
    stride[rank - 1 - k] = extent == 1 ? 0 : step;
    step *= extent;
  }
}
inline kernel_launch select_launch(const select_params& p) {
  detail::check_extents("select", p.rank, p.extent, p.n);
  const bool cond_size = p.cond_itemsize == 2 || p.cond_itemsize == 4 || p.cond_itemsize == 8 || (!p.cond_float && p.cond_itemsize == 1);
  const bool item_size = (p.coords && p.kind != select_kind::scatter) || p.itemsize == 1 || p.itemsize == 2 || p.itemsize == 4 || p.itemsize == 8;
  const std::int64_t blocks = select_blocks(p.n);
  bool operands = false;
  switch (p.kind) {
    case select_kind::count: operands = p.cond != nullptr && p.counts != nullptr; break;
    case select_kind::write:
      operands = p.cond != nullptr && p.offsets != nullptr && (p.out != nullptr || p.n == 0) && (p.coords || p.src != nullptr);
      break;
    case select_kind::scan: operands = p.counts != nullptr; break;
    case select_kind::scatter:
      operands = p.cond != nullptr && p.offsets != nullptr && p.src != nullptr && (p.out != nullptr || p.n == 0) &&
                 (p.source != nullptr || p.source_n == 0) && p.source_n >= 0 && p.error != nullptr && p.code > 0;
      break;
  }
  if (!cond_size || !item_size || !operands || blocks > 2147483647)
    typex::detail::raise_message<argument_error>(
        "typex::cuda::select_launch: a condition of 1, 2, 4 or 8 bytes (a float of 2, 4 or 8), items of 1, 2, 4 or 8 bytes, "
        "fewer than 2^31 chunks, and the pass's operands (counts; offsets and output; a scatter's source and error word)");
  const unsigned grid = p.kind == select_kind::scan ? 1u : static_cast<unsigned>(blocks < 1 ? 1 : blocks);
  return {kernel_kind::select, {grid, 1, 1}, {256, 1, 1}, static_cast<std::uint32_t>(256 * sizeof(std::int64_t)), p};
}

// (mse: the blocks its n elements are summed in, at most 1024; finish: one)
inline std::int64_t loss_blocks(const loss_params& p) {
  if (p.kind == loss_kind::finish) return 1;
  if (p.kind != loss_kind::mse) return p.rows < 1 ? 1 : p.rows;
  const std::int64_t b = (p.rows + 4095) / 4096;
  return b < 1 ? 1 : b > 1024 ? 1024 : b;
}
inline kernel_launch loss_launch(const loss_params& p) {
  if (p.rows < 0 || p.cols < 0 || p.inner < 1 || p.rows > 2147483647 || (p.kind != loss_kind::mse && p.kind != loss_kind::finish && p.error == nullptr) ||
      (p.reduction != loss_reduction::none && p.kind != loss_kind::finish && p.partial == nullptr))
    typex::detail::raise_message<argument_error>(
        "typex::cuda::loss_launch: rows past 2^31 - 1, a class loss without its error word, or a reduction without its partial sums");
  return {kernel_kind::loss, {static_cast<unsigned>(loss_blocks(p)), 1, 1}, {row_threads, 1, 1},
          static_cast<std::uint32_t>(row_threads / 32 * sizeof(float)), p};
}

inline kernel_launch optim_launch(const optim_params& p) {
  if (p.kind == optim_kind::many) {
    if (p.table == nullptr || p.count < 1 || p.chunk < 1 || p.blocks < 1 || p.blocks > std::int64_t{0x7fffffff})
      typex::detail::raise_message<argument_error>(
          "typex::cuda::optim_launch: a fused step without its table of updates, chunks below 1 element, or blocks outside [1, 2^31 - 1]");
    return {kernel_kind::optim, {static_cast<unsigned>(p.blocks), 1, 1}, {elementwise_threads, 1, 1}, 0, p};
  }
  if (p.kind == optim_kind::many_power_sums) {
    if (p.table == nullptr || p.count < 1 || p.n < 1)
      typex::detail::raise_message<argument_error>("typex::cuda::optim_launch: power sums of several tensors without their table or chunks");
    return {kernel_kind::optim, detail::elementwise_grid(p.n), {elementwise_threads, 1, 1}, 0, p};
  }
  if (p.kind == optim_kind::power_sum) {
    if (p.n < 0 || p.param == nullptr || p.sums == nullptr || p.chunk < 1 || !(p.norm_type >= 1))
      typex::detail::raise_message<argument_error>(
          "typex::cuda::optim_launch: a power sum without its tensor or its sums, chunks below 1 element, or a norm type below 1");
    return {kernel_kind::optim, detail::elementwise_grid((p.n + p.chunk - 1) / p.chunk), {elementwise_threads, 1, 1}, 0, p};
  }
  const bool buffers = p.kind == optim_kind::adam ? p.buf1 != nullptr && p.buf2 != nullptr
                                                  : p.kind != optim_kind::sgd || !p.first || p.buf1 != nullptr;
  if (p.n < 0 || p.param == nullptr || (p.kind != optim_kind::scale && p.grad == nullptr) || !buffers)
    typex::detail::raise_message<argument_error>(
        "typex::cuda::optim_launch: a negative count, or an update without its parameter, gradient or state buffers");
  return {kernel_kind::optim, detail::elementwise_grid(p.n), {elementwise_threads, 1, 1}, 0, p};
}

// Fused attention's tiles: attention_tile rows of queries per block of 128 threads (4 warps of 8
// rows each), the keys attention_tile at a time (a warp's lane is a key of the tile); the query
// tile (rows padded to a multiple of 4), the key tile (rows padded to a power of two, at least 32,
// and swizzled in groups of 4; then the tile's weights) and the value tile (rows of 64 or 128: 2 or
// 4 columns per lane) in shared memory. Head dims up to attention_max_head (48 KiB of shared memory
// at 128: no opt-in).
inline constexpr unsigned attention_tile = 32, attention_threads = 128;
inline constexpr std::int64_t attention_max_head = 128;

// The value columns a lane owns (the kernel's template argument): 2 up to head dim 64, else 4.
constexpr int attention_value_columns(std::int64_t ev) { return ev <= 64 ? 2 : 4; }

struct attention_layout {
  int q_stride = 0, k_stride = 0, v_stride = 0;  // floats per row of each shared tile
};
constexpr attention_layout attention_tiles(std::int64_t e, std::int64_t ev) {
  int k_stride = 32;  // (at least 32: the weights of a tile, [32][32], reuse it)
  while (k_stride < e) k_stride *= 2;
  return {static_cast<int>((e + 3) / 4 * 4), k_stride, 32 * attention_value_columns(ev)};
}

// The backward's gradient kernels own 2 head columns per lane: head dims up to 64.
inline constexpr std::int64_t attention_backward_max_head = 64;
// Their shared memory: the block's rows (e and ev wide), the other side's tile (padded to odd
// strides) and the tile's weights ([32][33]; the key's and value's pass keeps p and ds, two of them).
inline std::uint32_t attention_backward_shared_bytes(std::int64_t e, std::int64_t ev, bool key_and_value = false) {
  const std::int64_t weights = (key_and_value ? 2 : 1) * (attention_tile + 1);
  return static_cast<std::uint32_t>(attention_tile * ((e + ev) + (e + 1) + (ev + 1) + weights) * sizeof(float));
}

inline std::uint32_t attention_shared_bytes(std::int64_t e, std::int64_t ev) {
  const attention_layout t = attention_tiles(e, ev);
  return static_cast<std::uint32_t>(attention_tile * (t.q_stride + t.k_stride + t.v_stride) * sizeof(float));
}

inline kernel_launch attention_launch(const attention_params& p) {
  if (p.q == nullptr || p.k == nullptr || p.v == nullptr || p.out == nullptr || (p.mask_kind != attention_mask::none) != (p.mask != nullptr) ||
      (p.causal && p.mask_kind != attention_mask::none))
    typex::detail::raise_message<argument_error>(
        "typex::cuda::attention_launch: a missing operand, a mask pointer without its kind (or the reverse), or a mask with is_causal");
  if (p.l < 1 || p.s < 0 || p.e < 0 || p.ev < 1 || p.e > attention_max_head || p.ev > attention_max_head || p.batches < 1)
    typex::detail::raise_message<argument_error>(std::string("typex::cuda::attention_launch: ") + std::to_string(p.l) + " queries, " +
                                                 std::to_string(p.s) + " keys, head dims " + std::to_string(p.e) + " and " +
                                                 std::to_string(p.ev) + " (queries and value dims at least 1, head dims at most " +
                                                 std::to_string(attention_max_head) + ")");
  detail::check_extents("attention", p.batch_rank, p.batch_extent, p.batches);
  const bool kv = p.pass == attention_pass::grad_key || p.pass == attention_pass::grad_value || p.pass == attention_pass::grad_key_value;
  const bool gradient = p.pass == attention_pass::grad_query || kv;
  if ((p.pass == attention_pass::grad_key_value) != (p.out2 != nullptr))
    typex::detail::raise_message<argument_error>(
        "typex::cuda::attention_launch: out2 (the value's gradient) is for the key's and value's pass, which needs it");
  if ((p.pass != attention_pass::forward && p.grad == nullptr) || (p.pass == attention_pass::stats && p.fwd_out == nullptr) ||
      (gradient && (p.stats == nullptr || p.e > attention_backward_max_head || p.ev > attention_backward_max_head || p.s < 1)))
    typex::detail::raise_message<argument_error>(
        "typex::cuda::attention_launch: the backward's passes read the output's gradient (the statistics pass the output too, "
        "the gradients the statistics), and the gradients take head dims up to 64 and at least one key");
  // (the key's and value's gradients: a block per 32 keys; the others per 32 queries)
  const std::int64_t rows = kv ? p.s : p.l;
  const std::int64_t tiles = (rows + attention_tile - 1) / attention_tile;
  if (tiles > 2147483647 / p.batches)
    typex::detail::raise_message<argument_error>("typex::cuda::attention_launch: more tiles than a grid holds (2^31 - 1)");
  return {kernel_kind::attention, {static_cast<unsigned>(tiles * p.batches), 1, 1}, {attention_threads, 1, 1},
          gradient ? attention_backward_shared_bytes(p.e, p.ev, p.pass == attention_pass::grad_key_value) : attention_shared_bytes(p.e, p.ev),
          p};
}

inline kernel_launch pool_launch(const pool_params& p) {
  const std::int64_t extents[3] = {p.planes, p.oh, p.ow};
  detail::check_extents("pool", 3, extents, p.planes * p.oh * p.ow);
  if (p.h < 1 || p.w < 1 || p.k[0] < 1 || p.k[1] < 1 || p.stride[0] < 1 || p.stride[1] < 1 || p.dil[0] < 1 || p.dil[1] < 1 ||
      p.pad[0] < 0 || p.pad[1] < 0)
    typex::detail::raise_message<argument_error>("typex::cuda::pool_launch: a window, stride or dilation below 1, or a negative padding");
  const bool backward = p.kind == pool_kind::max_backward || p.kind == pool_kind::avg_backward || p.kind == pool_kind::adaptive_avg_backward;
  return {kernel_kind::pool, detail::elementwise_grid(backward ? p.planes * p.h * p.w : p.planes * p.oh * p.ow), {elementwise_threads, 1, 1}, 0, p};
}

}  // namespace typex::cuda
