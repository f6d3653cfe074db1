// typex/backend/cuda/kernels/optim.cuh — the optimizers' updates of one parameter on the device:
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

// Launch geometry: optim_launch (elementwise). T: the parameter's dtype (float or double).
template <class T>
TYPEX_GLOBAL void optim_kernel(const TYPEX_GRID_CONSTANT optim_params p) {
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  if (p.kind == optim_kind::power_sum) {  // (a thread per chunk, its elements in order: the host's sums)
    const T* x = static_cast<const T*>(p.param);
    const bool inf = p.inf_norm;
    for (std::int64_t c = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; c * p.chunk < p.n; c += step) {
      const std::int64_t end = (c + 1) * p.chunk < p.n ? (c + 1) * p.chunk : p.n;
      double acc = 0;
      for (std::int64_t k = c * p.chunk; k < end; ++k) {
        const double a = math::abs(static_cast<double>(x[k]));
        if (a != a || acc != acc) acc = a != a ? a : acc;  // (a NaN makes the chunk NaN)
        else if (inf) acc = a > acc ? a : acc;
        else acc = math::add_rn(acc, p.norm_type == 1 ? a : p.norm_type == 2 ? math::mul_rn(a, a) : math::pow(a, p.norm_type));
      }
      p.sums[c] = acc;
    }
    return;
  }
  T* w = static_cast<T*>(p.param);
  const T* d = static_cast<const T*>(p.grad);
  T* b1 = static_cast<T*>(p.buf1);
  T* b2 = static_cast<T*>(p.buf2);
  T* b3 = static_cast<T*>(p.buf3);
  const T wd = static_cast<T>(p.weight_decay);
  for (std::int64_t k = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; k < p.n; k += step) {
    using math::add_rn, math::mul_rn;
    if (p.kind == optim_kind::scale) {
      w[k] = mul_rn(w[k], static_cast<T>(p.factor));
      continue;
    }
    T grad = p.maximize ? -d[k] : d[k];
    if (p.kind == optim_kind::sgd) {
      if (p.weight_decay_on) grad = add_rn(grad, mul_rn(wd, w[k]));
      if (b1 != nullptr) {
        const T mom = static_cast<T>(p.momentum);
        b1[k] = p.first ? grad : add_rn(mul_rn(b1[k], mom), mul_rn(static_cast<T>(p.keep), grad));
        grad = p.nesterov ? add_rn(grad, mul_rn(mom, b1[k])) : b1[k];
      }
      w[k] = add_rn(w[k], mul_rn(static_cast<T>(p.lr_step), grad));
      continue;
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
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
