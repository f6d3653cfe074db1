// typex/backend/cuda/device_ops.hpp — the CUDA backend's device operations (tensor/device_ops.hpp):
// what program_module and typex::optim use for tensors on a CUDA device, registered for
// device_kind::cuda when this header is included (<typex/backend/cuda.hpp> does, and so does the
// engine's unit: a program that runs a CUDA module has them).
//
//  - make / copy: through the runtime that owns the tensor's memory (memory.hpp: the deleter knows
//    it), finished when they return;
//  - power_sums: clip_grad_norm_'s chunk sums of its gradients, a thread per chunk (kernels/optim.cuh),
//    one launch per runtime and dtype over all of them, one double per chunk copied back (not the
//    gradient), one synchronization per runtime a call;
//  - step: one launch per runtime and dtype over all the updates (kernels/optim.cuh, optim_kind::many:
//    a table of the updates in device memory), or one per update where two of them touch the same
//    memory; every runtime touched synchronized once at the end, so that the next call of a
//    program (on its own stream) reads the stepped parameters.
// Declared here; defined in detail/device_ops_impl.hpp (compiled once in typex::cuda, or inline
// with the engine in header-only builds).
#pragma once

#include <typex/backend/cuda/program.hpp>  // (TYPEX_CUDA_API)
#include <typex/tensor/device_ops.hpp>

#include <span>

namespace typex::cuda::detail {

TYPEX_CUDA_API any_tensor make_on_device(const any_tensor& like, bool copy);
TYPEX_CUDA_API void copy_tensor_bytes(const any_tensor& dst, const any_tensor& src);
TYPEX_CUDA_API void optimizer_step(std::span<const optimizer_update> updates);
TYPEX_CUDA_API void power_sums(std::span<const power_sum_request> requests, double norm_type);

inline constexpr device_ops cuda_device_ops{&make_on_device, &copy_tensor_bytes, &optimizer_step, &power_sums};
inline const bool registered_device_ops = (set_device_ops(device_kind::cuda, &cuda_device_ops), true);

}  // namespace typex::cuda::detail
