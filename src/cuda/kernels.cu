// src/cuda/kernels.cu — the kernels of typex's CUDA backend compiled natively: dispatch's instance
// for a CUDA stream (backend/cuda/dispatch.cuh, the kernel families of backend/cuda/kernels/*.cuh
// under kernel_api.cuh's native definitions). The same source runs on the CPU emulator in the tests;
// here nvcc compiles it for the GPU (sm_80, sm_90a: cmake/typexCuda.cmake), where ptxas refuses a
// kernel that spills or uses local memory. native_device.cpp (host code, the host compiler) calls
// launch_native, the only function of this unit.
#include <typex/backend/cuda/dispatch.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cuda_runtime_api.h>

namespace typex::cuda::detail {

void launch_native(const kernel_launch& k, cudaStream_t stream) { typex::cuda::dispatch(k, stream); }

}  // namespace typex::cuda::detail
