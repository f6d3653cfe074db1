// typex/backend/cuda/kernels/optim.cuh — the optimizers' updates of parameters on the device (one
// parameter a launch, or a whole step's parameters in one launch: optim_kind::many):
// torch.optim's single-tensor SGD (momentum, dampening, weight decay, Nesterov, maximize) and Adam /
// AdamW (AMSGrad, maximize), and the scaling clip_grad_norm_ applies, element by element in the
// parameter's dtype with the host loop's order of operations and roundings (nn/optim.hpp): every
// product and sum through math::mul_rn / add_rn, which a GPU never contracts into an FMA, so that
// a device step equals the host's bit for bit. And clip_grad_norm_'s power sums of a gradient, a
// thread per chunk summing in the host loop's order (tensor/device_ops.hpp).
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// One element of one parameter's update (sgd, adam or scale): the host loop's operations and
// roundings, in its order.
template <class T>
TYPEX_DEVICE void optim_element(const optim_params& p, std::int64_t k) {
  using math::add_rn, math::mul_rn;
  T* w = static_cast<T*>(p.param);
  if (p.kind == optim_kind::scale) {
    w[k] = mul_rn(w[k], static_cast<T>(p.factor));
    return;
  }
  const T* d = static_cast<const T*>(p.grad);
  T* b1 = static_cast<T*>(p.buf1);
  T* b2 = static_cast<T*>(p.buf2);
  T* b3 = static_cast<T*>(p.buf3);
  const T wd = static_cast<T>(p.weight_decay);
  T grad = p.maximize ? -d[k] : d[k];
  if (p.kind == optim_kind::sgd) {
    if (p.weight_decay_on) grad = add_rn(grad, mul_rn(wd, w[k]));
    if (b1 != nullptr) {
      const T mom = static_cast<T>(p.momentum);
      b1[k] = p.first ? grad : add_rn(mul_rn(b1[k], mom), mul_rn(static_cast<T>(p.keep), grad));
      grad = p.nesterov ? add_rn(grad, mul_rn(mom, b1[k])) : b1[k];
    }
    w[k] = add_rn(w[k], mul_rn(static_cast<T>(p.lr_step), grad));
    return;
  }
  // adam
  if (p.weight_decay_on) {
    if (p.decoupled) w[k] = mul_rn(w[k], static_cast<T>(p.decay));
    else grad = add_rn(grad, mul_rn(wd, w[k]));
  }
  const T omb1 = static_cast<T>(p.one_minus_beta1);
  // exp_avg.lerp_(grad, 1 - beta1), as torch's lerp: from the nearer end
  b1[k] = omb1 < T(0.5) ? add_rn(b1[k], mul_rn(omb1, grad - b1[k])) : grad - mul_rn(grad - b1[k], T(1) - omb1);
  b2[k] = add_rn(mul_rn(b2[k], static_cast<T>(p.beta2)), mul_rn(mul_rn(static_cast<T>(p.one_minus_beta2), grad), grad));
  T second = b2[k];
  if (b3 != nullptr) second = b3[k] = b3[k] < b2[k] ? b2[k] : b3[k];  // (std::max's rule: the first unless less)
  const T denom = add_rn(math::sqrt(second) / static_cast<T>(p.bias2_sqrt), static_cast<T>(p.eps));
  w[k] = add_rn(w[k], mul_rn(static_cast<T>(p.step_size), b1[k] / denom));
}

// The entry of a launch over several tensors (many, many_power_sums) that position `at` (a block,
// or a chunk) falls in: the last of p.table's p.count entries whose first_block is at most `at`.
TYPEX_DEVICE optim_params table_entry(const optim_params& p, std::int64_t at) {
  std::int32_t lo = 0, hi = p.count - 1;
  while (lo < hi) {
    const std::int32_t mid = lo + (hi - lo + 1) / 2;
    if (p.table[mid].first_block <= at) lo = mid;
    else hi = mid - 1;
  }
  return p.table[lo];
}

// Chunk c's sum of |x|^norm_type over p's tensor (tensor/device_ops.hpp's power_sum_chunk
// elements, in order: the host's sums), into p.sums[c].
template <class T>
TYPEX_DEVICE void power_sum_at(const optim_params& p, std::int64_t c) {
  const T* x = static_cast<const T*>(p.param);
  const std::int64_t end = (c + 1) * p.chunk < p.n ? (c + 1) * p.chunk : p.n;
  double acc = 0;
  for (std::int64_t k = c * p.chunk; k < end; ++k) {
    const double a = math::abs(static_cast<double>(x[k]));
    if (a != a || acc != acc) acc = a != a ? a : acc;  // (a NaN makes the chunk NaN)
    else if (p.inf_norm) acc = a > acc ? a : acc;
    else acc = math::add_rn(acc, p.norm_type == 1 ? a : p.norm_type == 2 ? math::mul_rn(a, a) : math::pow(a, p.norm_type));
  }
  p.sums[c] = acc;
}

// Launch geometry: optim_launch (elementwise; a fused step: one block per chunk of an entry).
// T: the parameter's dtype (float or double).
template <class T>
TYPEX_GLOBAL void optim_kernel(const TYPEX_GRID_CONSTANT optim_params p) {
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  if (p.kind == optim_kind::power_sum) {  // (a thread per chunk)
    for (std::int64_t c = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; c * p.chunk < p.n; c += step)
      power_sum_at<T>(p, c);
    return;
  }
  if (p.kind == optim_kind::many_power_sums) {  // (a thread per chunk of them all; its entry: the last starting at or before it)
    for (std::int64_t c = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; c < p.n; c += step) {
      const optim_params e = table_entry(p, c);
      power_sum_at<T>(e, c - e.first_block);
    }
    return;
  }
  if (p.kind == optim_kind::many) {  // (this block's entry: the last whose first block is at most this one)
    const std::int64_t b = block_idx().x;
    const optim_params e = table_entry(p, b);  // (a copy: the updates' stores cannot alias its fields)
    const std::int64_t begin = (b - e.first_block) * p.chunk;
    const std::int64_t end = begin + p.chunk < e.n ? begin + p.chunk : e.n;
    for (std::int64_t k = begin + thread_idx().x; k < end; k += block_dim().x) optim_element<T>(e, k);
    return;
  }
  for (std::int64_t k = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; k < p.n; k += step)
    optim_element<T>(p, k);
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
