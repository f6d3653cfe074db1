// typex/backend/cuda/kernel_api.cuh — the only CUDA-isms the CUDA backend's kernels may use.
//
// Kernels (kernels/*.cuh) are written once against this header and compiled twice: by nvcc for
// the GPU, where every name here is native CUDA, and by g++ / clang++ for the CPU emulator of the
// execution model (emulator.hpp), which runs the same source with the same launch geometry and
// fails on the bugs a GPU punishes (races, divergent barriers, bad warp masks, shared-memory
// overruns). A kernel that needed something outside this header would run only on one side.
//
// What a kernel has:
//   TYPEX_GLOBAL void k(...)            a kernel (__global__); TYPEX_DEVICE a device function
//                                       (__device__ __forceinline__); TYPEX_HOST_DEVICE (config.hpp);
//                                       TYPEX_GRID_CONSTANT a parameter read in place (__grid_constant__);
//                                       TYPEX_DEVICE_UNROLL before a loop to unroll (#pragma unroll)
//   thread_idx(), block_idx(),          threadIdx, blockIdx, blockDim, gridDim (.x, .y, .z)
//   block_dim(), grid_dim()
//   lane_id(), warp_id(), warp_size     the lane and warp of the thread (linear in the block), 32
//   TYPEX_SHARED(T)                     a T* to the block's dynamic shared memory (static __shared__
//                                       arrays are not supported: the emulator cannot size them)
//   sync_threads()                      __syncthreads()
//   sync_warp, shfl_sync, shfl_up_sync, shfl_down_sync, shfl_xor_sync, ballot_sync (with a mask,
//   full_mask for the whole warp), warp_sum, warp_max (butterfly reductions, every lane gets it)
//   atomic_add, atomic_max (float, int, unsigned; global or shared), thread_fence()
//   math::exp, log, log1p, expm1, sqrt, rsqrt, sin, cos, tanh, erf, abs, fmax, fmin, pow (float and
//   double overloads; the GPU's versions differ from libm by a few ulp: tests state tolerances)
//   math::mul_rn, add_rn   a product / a sum rounded on its own, never contracted into an FMA (what
//                          the host computes: code that must equal a host loop bit for bit)
//   vec4, vec2, load_vec4(p), load_vec2(p)   4 / 2 consecutive floats (.x .y .z .w) read in one
//                          access (float4 / float2: LDS.128 / LDS.64 from shared memory); p must be
//                          16- / 8-byte aligned, as a GPU requires (the emulator checks it)
// And the host side:
//   TYPEX_LAUNCH(kernel, grid, block, shared_bytes, stream)(args...)   grid / block: anything with
//                      unsigned x, y, z (launch_dims); natively kernel<<<...>>>(args...) on `stream`,
//                      emulated a synchronous run (the stream is ignored); errors: device_error.
//   set_max_dynamic_shared(kernel, bytes)  the opt-in above 48 KiB of dynamic shared memory.
#pragma once

#include <typex/config.hpp>

#include <cstdint>

#if defined(TYPEX_CUDA_COMPILER)

#include <cuda_runtime.h>

#include <string>

#include <typex/core/error.hpp>

#define TYPEX_GLOBAL __global__
// The kernel API and the kernels live in an inline namespace per world (native / emulated): a
// kernel's host-side symbol is nvcc's launch stub in one and the emulator's function in the other,
// and a program that links both typex::cuda and the emulated device must not get one for the other.
#define TYPEX_CUDA_ABI native
#define TYPEX_DEVICE __device__ __forceinline__
// A kernel parameter read in place (`const TYPEX_GRID_CONSTANT params p`): indexing its arrays or
// taking its address does not copy it to local memory (sm_70 and later).
#define TYPEX_GRID_CONSTANT __grid_constant__
// Unroll the next loop completely (a constant trip count). (config.hpp's TYPEX_UNROLL would give
// nvcc GCC's spelling, which it does not know: nvcc defines __GNUC__ for its host compiler.)
#define TYPEX_DEVICE_UNROLL _Pragma("unroll")

// The block's dynamic shared memory: one declaration for every kernel (16-byte aligned, enough for
// float4 / double2 accesses); kernels carve it with TYPEX_SHARED.
extern __shared__ __align__(16) unsigned char typex_dynamic_shared[];
#define TYPEX_SHARED(T) (reinterpret_cast<T*>(typex_dynamic_shared))

namespace typex::cuda {
inline namespace TYPEX_CUDA_ABI {  // (native or emulated: see TYPEX_GLOBAL)

inline constexpr unsigned warp_size = 32;
inline constexpr std::uint32_t full_mask = 0xffffffffu;

TYPEX_DEVICE uint3 thread_idx() { return threadIdx; }
TYPEX_DEVICE uint3 block_idx() { return blockIdx; }
TYPEX_DEVICE dim3 block_dim() { return blockDim; }
TYPEX_DEVICE dim3 grid_dim() { return gridDim; }
TYPEX_DEVICE unsigned linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

using vec4 = float4;
using vec2 = float2;
TYPEX_DEVICE vec4 load_vec4(const float* p) { return *reinterpret_cast<const float4*>(p); }
TYPEX_DEVICE vec2 load_vec2(const float* p) { return *reinterpret_cast<const float2*>(p); }

TYPEX_DEVICE void sync_threads() { __syncthreads(); }
TYPEX_DEVICE void sync_warp(std::uint32_t mask) { __syncwarp(mask); }
template <class T>
TYPEX_DEVICE T shfl_sync(std::uint32_t mask, T v, int src, int width = warp_size) { return __shfl_sync(mask, v, src, width); }
template <class T>
TYPEX_DEVICE T shfl_up_sync(std::uint32_t mask, T v, unsigned delta, int width = warp_size) { return __shfl_up_sync(mask, v, delta, width); }
template <class T>
TYPEX_DEVICE T shfl_down_sync(std::uint32_t mask, T v, unsigned delta, int width = warp_size) { return __shfl_down_sync(mask, v, delta, width); }
template <class T>
TYPEX_DEVICE T shfl_xor_sync(std::uint32_t mask, T v, int lane_mask, int width = warp_size) { return __shfl_xor_sync(mask, v, lane_mask, width); }
TYPEX_DEVICE std::uint32_t ballot_sync(std::uint32_t mask, bool pred) { return __ballot_sync(mask, pred); }

TYPEX_DEVICE float atomic_add(float* p, float v) { return atomicAdd(p, v); }
TYPEX_DEVICE double atomic_add(double* p, double v) { return atomicAdd(p, v); }
TYPEX_DEVICE int atomic_add(int* p, int v) { return atomicAdd(p, v); }
TYPEX_DEVICE unsigned atomic_add(unsigned* p, unsigned v) { return atomicAdd(p, v); }
TYPEX_DEVICE int atomic_max(int* p, int v) { return atomicMax(p, v); }
TYPEX_DEVICE unsigned atomic_max(unsigned* p, unsigned v) { return atomicMax(p, v); }
// (no native float atomicMax: a compare-and-swap loop on the bits, as the emulator's)
TYPEX_DEVICE float atomic_max(float* p, float v) {
  int* bits = reinterpret_cast<int*>(p);
  int old = *bits;
  while (__int_as_float(old) < v) {
    const int seen = atomicCAS(bits, old, __float_as_int(v));
    if (seen == old) break;
    old = seen;
  }
  return __int_as_float(old);
}
TYPEX_DEVICE void thread_fence() { __threadfence(); }

namespace math {
TYPEX_DEVICE float exp(float x) { return ::expf(x); }
TYPEX_DEVICE double exp(double x) { return ::exp(x); }
TYPEX_DEVICE float log(float x) { return ::logf(x); }
TYPEX_DEVICE double log(double x) { return ::log(x); }
TYPEX_DEVICE float log1p(float x) { return ::log1pf(x); }
TYPEX_DEVICE double log1p(double x) { return ::log1p(x); }
TYPEX_DEVICE float expm1(float x) { return ::expm1f(x); }
TYPEX_DEVICE double expm1(double x) { return ::expm1(x); }
TYPEX_DEVICE float sqrt(float x) { return ::sqrtf(x); }
TYPEX_DEVICE double sqrt(double x) { return ::sqrt(x); }
TYPEX_DEVICE float rsqrt(float x) { return ::rsqrtf(x); }
TYPEX_DEVICE double rsqrt(double x) { return ::rsqrt(x); }
// sin / cos: CUDA's sinf / sin keep a Payne-Hanek reduction for huge arguments that uses local
// memory (28 to 40 bytes of stack in every kernel that calls them, which -warn-lmem-usage refuses).
// Here the argument is reduced in registers instead: f32 through sinpi / cospi of x / pi in double
// (x / pi's rounding error is |x| 2^-54, below f32's resolution for |x| < 2^29); f64 by a
// three-part Cody-Waite reduction by pi / 2 (exact to a few ulp for |x| < 2^30; beyond, the phase
// error grows as |x| 2^-86), then sinpi / cospi of the remainder, which need no reduction.
TYPEX_DEVICE double sin_cos_reduced(double x, bool cosine) {
  const double k = ::rint(x * 0.63661977236758134308);  // 2 / pi
  const double r = ((x - k * 1.5707963267948966e+00) - k * 6.123233995736766e-17) - k * -1.4973849048591698e-33;
  const double t = r * 0.31830988618379067154;  // r / pi, in [-1/4, 1/4]
  const int q = (static_cast<int>(::fmod(k, 4.0)) + 4 + (cosine ? 1 : 0)) & 3;
  switch (q) {
    case 0: return ::sinpi(t);
    case 1: return ::cospi(t);
    case 2: return -::sinpi(t);
    default: return -::cospi(t);
  }
}
TYPEX_DEVICE float sin(float x) { return static_cast<float>(::sinpi(static_cast<double>(x) * 0.31830988618379067154)); }
TYPEX_DEVICE double sin(double x) { return sin_cos_reduced(x, false); }
TYPEX_DEVICE float cos(float x) { return static_cast<float>(::cospi(static_cast<double>(x) * 0.31830988618379067154)); }
TYPEX_DEVICE double cos(double x) { return sin_cos_reduced(x, true); }
TYPEX_DEVICE float tanh(float x) { return ::tanhf(x); }
TYPEX_DEVICE double tanh(double x) { return ::tanh(x); }
TYPEX_DEVICE float erf(float x) { return ::erff(x); }
TYPEX_DEVICE double erf(double x) { return ::erf(x); }
TYPEX_DEVICE float abs(float x) { return ::fabsf(x); }
TYPEX_DEVICE double abs(double x) { return ::fabs(x); }
TYPEX_DEVICE float fmax(float a, float b) { return ::fmaxf(a, b); }
TYPEX_DEVICE double fmax(double a, double b) { return ::fmax(a, b); }
TYPEX_DEVICE float fmin(float a, float b) { return ::fminf(a, b); }
TYPEX_DEVICE double fmin(double a, double b) { return ::fmin(a, b); }
TYPEX_DEVICE float pow(float a, float b) { return ::powf(a, b); }
TYPEX_DEVICE double pow(double a, double b) { return ::pow(a, b); }
TYPEX_DEVICE float mul_rn(float a, float b) { return ::__fmul_rn(a, b); }
TYPEX_DEVICE double mul_rn(double a, double b) { return ::__dmul_rn(a, b); }
TYPEX_DEVICE float add_rn(float a, float b) { return ::__fadd_rn(a, b); }
TYPEX_DEVICE double add_rn(double a, double b) { return ::__dadd_rn(a, b); }
}  // namespace math

namespace launch_detail {  // (not detail: typex::cuda::detail is outside the inline namespace)
template <class D>
inline ::dim3 to_dim3(const D& d) {
  return ::dim3(d.x, d.y, d.z);
}
}  // namespace launch_detail

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), as a device_error.
template <class... P>
void set_max_dynamic_shared(void (*kernel)(P...), std::size_t bytes, const char* name = "kernel") {
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess)
    throw device_error(std::string("typex::cuda: cannot let kernel '") + name + "' use " + std::to_string(bytes) +
                       " bytes of dynamic shared memory: " + cudaGetErrorString(e));
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda

// (a launch's errors are asynchronous on a GPU: the device's synchronize() reports them)
#define TYPEX_LAUNCH(kernel, grid, block, shared_bytes, stream)                                                   \
  kernel<<<::typex::cuda::launch_detail::to_dim3(grid), ::typex::cuda::launch_detail::to_dim3(block), (shared_bytes), (stream)>>>

#else  // the CPU emulator

#include <typex/backend/cuda/emulator.hpp>

#include <cmath>
#include <cstring>

#define TYPEX_GLOBAL
#define TYPEX_CUDA_ABI emulated  // (see the native branch)
#define TYPEX_DEVICE inline
#define TYPEX_GRID_CONSTANT
#define TYPEX_DEVICE_UNROLL TYPEX_UNROLL
#define TYPEX_SHARED(T) (reinterpret_cast<T*>(::typex::cuda::emu::shared_memory()))

namespace typex::cuda {
inline namespace TYPEX_CUDA_ABI {  // (native or emulated: see TYPEX_GLOBAL)

using emu::warp_size;
inline constexpr std::uint32_t full_mask = 0xffffffffu;

using emu::thread_idx;
using emu::block_idx;
using emu::block_dim;
using emu::grid_dim;
using emu::linear_thread;
using emu::sync_threads;
using emu::sync_warp;
using emu::shfl_sync;
using emu::shfl_up_sync;
using emu::shfl_down_sync;
using emu::shfl_xor_sync;
using emu::ballot_sync;
using emu::atomic_add;
using emu::atomic_max;
using emu::thread_fence;
using emu::set_max_dynamic_shared;

struct alignas(16) vec4 {  // (aligned as float4 / float2 are)
  float x, y, z, w;
};
struct alignas(8) vec2 {
  float x, y;
};
inline vec4 load_vec4(const float* p) {
  emu::check_aligned(p, sizeof(vec4), "load_vec4");
  vec4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline vec2 load_vec2(const float* p) {
  emu::check_aligned(p, sizeof(vec2), "load_vec2");
  vec2 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

namespace math {
inline float exp(float x) { return std::exp(x); }
inline double exp(double x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }
inline double log(double x) { return std::log(x); }
inline float log1p(float x) { return std::log1p(x); }
inline double log1p(double x) { return std::log1p(x); }
inline float expm1(float x) { return std::expm1(x); }
inline double expm1(double x) { return std::expm1(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline double sqrt(double x) { return std::sqrt(x); }
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float sin(float x) { return std::sin(x); }
inline double sin(double x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline double cos(double x) { return std::cos(x); }
inline float tanh(float x) { return std::tanh(x); }
inline double tanh(double x) { return std::tanh(x); }
inline float erf(float x) { return std::erf(x); }
inline double erf(double x) { return std::erf(x); }
inline float abs(float x) { return std::fabs(x); }
inline double abs(double x) { return std::fabs(x); }
inline float fmax(float a, float b) { return std::fmax(a, b); }
inline double fmax(double a, double b) { return std::fmax(a, b); }
inline float fmin(float a, float b) { return std::fmin(a, b); }
inline double fmin(double a, double b) { return std::fmin(a, b); }
inline float pow(float a, float b) { return std::pow(a, b); }
inline double pow(double a, double b) { return std::pow(a, b); }
inline float mul_rn(float a, float b) { return a * b; }
inline double mul_rn(double a, double b) { return a * b; }
inline float add_rn(float a, float b) { return a + b; }
inline double add_rn(double a, double b) { return a + b; }
}  // namespace math

namespace launch_detail {
template <class D>
emu::dim3 to_dim3(const D& d) {
  return emu::dim3{d.x, d.y, d.z};
}
}  // namespace launch_detail

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda

#define TYPEX_LAUNCH(kernel, grid, block, shared_bytes, stream)                                                          \
  ((void)(stream), ::typex::cuda::emu::make_launcher(kernel, #kernel, ::typex::cuda::launch_detail::to_dim3(grid),              \
                                                     ::typex::cuda::launch_detail::to_dim3(block), (shared_bytes)))

#endif

namespace typex::cuda {
inline namespace TYPEX_CUDA_ABI {  // (native or emulated: see TYPEX_GLOBAL)

// The thread's lane and warp (threads are numbered x fastest, then y, then z, as a GPU forms warps).
TYPEX_DEVICE unsigned lane_id() { return linear_thread() % warp_size; }
TYPEX_DEVICE unsigned warp_id() { return linear_thread() / warp_size; }

// Butterfly reductions over the lanes of a full warp: every lane gets the result.
template <class T>
TYPEX_DEVICE T warp_sum(T v) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2) v += shfl_xor_sync(full_mask, v, offset);
  return v;
}
template <class T>
TYPEX_DEVICE T warp_max(T v) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    const T o = shfl_xor_sync(full_mask, v, offset);
    v = o > v ? o : v;
  }
  return v;
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda
