// typex/backend/cuda/program.hpp — an exported program compiled for a CUDA device.
//
//   auto gpu = typex::cuda::make_native_device();   // (tests and CI: make_emulated_device())
//   program_module<cuda_backend> run(program, {.device = gpu});
//   std::vector<any_tensor> out = run({typex::cuda::to_device(x, gpu)});   // outputs on the device
//
// cuda_backend is a backend in export/program_module.hpp's sense, built on the backend kit
// (backend/kit/engine.hpp): compiling asks supports() of every node first, so an op the CUDA
// backend does not run is an unsupported_error naming it before anything is allocated. The engine
// plans the program with the backend-neutral planner (plan/planner.hpp) and lowers each step to
// launch records (launch.hpp) once per set of input extents:
//  - linear (and its activation: relu, gelu(approximate='tanh')) is one cuBLASLt product with a
//    bias / RELU_BIAS / GELU_BIAS epilogue; any other activation after it (exact GELU, silu, ...)
//    runs in place as a pointwise kernel right after (cuBLASLt's GELU is the tanh form);
//  - each pointwise chain the planner forms (add / sub / mul / div with broadcasting or numbers,
//    then activations) is ONE kernel, the chain interpreter (kernels/pointwise.cuh), whose
//    per-element math is each op's own `math` (the functor the Eigen backend vectorises);
//  - views cost nothing; transposes and permutes are one strided copy;
//  - constants (parameters, buffers) are uploaded once, when the engine is made; values folded at
//    planning time are computed on the host (the Eigen backend's kernels) and uploaded once per plan.
// Memory: one device arena per plan (the planner's offsets), allocated when the plan is made and
// never moved; the inputs are staged into fixed slots; outputs are copied out into device tensors.
// Because no address changes between calls of one plan, a plan is captured as a CUDA graph on its
// first call (graphs on a GPU; the emulator runs the records directly) and replayed after. Plans
// are kept per set of input extents (a dynamic batch alternating between sizes re-plans nothing),
// at most compile_options::max_plans, the least recently used dropped with its graph.
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/memory.hpp>
#include <typex/backend/kit/engine.hpp>
#include <typex/export/program_binding.hpp>

#include <cstddef>
#include <memory>

// Where the engine (detail/engine_impl.hpp: the lowering, the plans, the records) is compiled: in
// every unit that includes this header (header-only, the default), or once, in typex::cuda (CMake
// sets TYPEX_CUDA_SEPARATE_COMPILATION for its users; src/cuda/engine.cpp defines
// TYPEX_CUDA_IMPLEMENTATION), as typex::eigen does for the Eigen kernels.
#if defined(TYPEX_CUDA_SEPARATE_COMPILATION)
#define TYPEX_CUDA_API
#else
#define TYPEX_CUDA_API inline
#endif

// (declared only: this header stays light for every unit that names the backend; the engine's
// definitions include them)
namespace typex {
class exported_program;
namespace passes {
class decomposition_table;
}  // namespace passes
}  // namespace typex

namespace typex::cuda {

struct compile_options {
  // The device the program runs on: make_native_device(n) or make_emulated_device(). Null: GPU 0
  // (make_native_device(0), which throws device_error where there is no GPU or no driver).
  std::shared_ptr<device_runtime> device;
  bool fuse = true;            // epilogues and pointwise chains (false: one kernel per node)
  bool graphs = true;          // capture each plan as a CUDA graph (false: launch the records each call)
  std::size_t max_plans = 8;   // plans (and graphs) kept, one per set of input extents
  // What f32 linear / matmul / bmm products compute in (device.hpp): f32, or operands read rounded
  // to tf32, bf16 or f16 on tensor cores, sums in f32 (torch.set_float32_matmul_precision). typex's
  // convolution kernel, the fused attention kernel and every other kernel compute in f32 whatever
  // this says; cuDNN's convolutions (conv_engine::cudnn) may read their operands as TF32 under any
  // value but f32; an op that runs as its decomposition (attention with dropout or a head dim past
  // 128) takes it in the products it decomposes into.
  cuda::matmul_precision matmul_precision = cuda::matmul_precision::f32;
  // Which code runs conv2d (device.hpp): typex's own implicit GEMM, or cuDNN's forward convolution
  // (the algorithm timed once per shape; a build with TYPEX_CUDNN, has_cudnn()) for the convolutions
  // whose kernel window fits their output, typex's kernel for the weight gradients. Under cuDNN a
  // matmul_precision other than f32 lets the convolutions read their f32 operands as TF32.
  cuda::conv_engine convolutions = cuda::conv_engine::typex;
};

// Whether this build of the engine runs cuDNN convolutions (TYPEX_CUDNN).
TYPEX_CUDA_API bool has_cudnn() noexcept;

// Whether the CUDA backend runs call node `node` of `g` (asked of every node before anything is
// planned or allocated).
TYPEX_CUDA_API bool supports(const ir::graph& g, const ir::node& node);

// The ops of g's call nodes that the CUDA backend does not run but that decompose (their own
// decomposition, passes::decomposition_of): an op without a CUDA kernel reaches the backend as the
// ops it decomposes into (training-mode batch_norm: its batch statistics as reductions and
// pointwise chains). Empty when every node runs, or when what does not run has no decomposition
// (then compiling names it).
TYPEX_CUDA_API passes::decomposition_table fallback_decompositions(const ir::graph& g);
// `ep` with fallback_decompositions applied until none is left (at most 8 rounds: a decomposition
// may give ops that decompose further); `ep` itself, copied, when there is nothing to do.
TYPEX_CUDA_API exported_program with_fallback_decompositions(const exported_program& ep);

namespace detail {
// The compile options of the program running node by node on this thread (the stepwise engine,
// engine_impl.hpp, sets them for its call): eager.hpp's run_call lowers each op's one-node program
// with them, its products in the module's matmul_precision and its convolutions by the module's
// conv_engine, as the planned engine would. Null elsewhere (an eager call: the defaults).
inline thread_local const compile_options* step_options = nullptr;

TYPEX_CUDA_API std::shared_ptr<kit::engine> make_engine(program_binding binding, const compile_options& options);
TYPEX_CUDA_API std::shared_ptr<kit::engine> make_engine_on(program_binding binding, const compile_options& options,
                                                   const std::shared_ptr<device_runtime>& rt,
                                                   const std::shared_ptr<device_runtime>& out);
}  // namespace detail

}  // namespace typex::cuda

namespace typex {

struct cuda_backend {
  using options = cuda::compile_options;
  using executor = kit::engine;
  static std::shared_ptr<executor> compile(program_binding binding, const options& o) {
    return cuda::detail::make_engine(std::move(binding), o);
  }
  // Where the program wants its inputs (program_module checks each input against it).
  static typex::device device_of(const options& o) {
    return o.device ? o.device->where() : typex::device::cuda(0);
  }
  // What program_module compiles: `ep` with the ops this backend has no kernel for decomposed into
  // ones it has (program() gives this program back).
  static exported_program prepare(const exported_program& ep);  // (cuda::with_fallback_decompositions)
  // The module's state (written buffers, trained parameters) on the program's device: a copy of
  // the host tensor there (program_module keeps it, writes it back and clones it on the device).
  static any_tensor place_state(const any_tensor& host, const options& o) {
    if (o.device) return cuda::to_device(host, o.device);
    // (no device named: GPU 0, one runtime for every module's state rather than a stream and pool per tensor)
    static const std::shared_ptr<cuda::device_runtime> gpu0 = cuda::make_native_device(0);
    return cuda::to_device(host, gpu0);
  }
};

}  // namespace typex

#if !defined(TYPEX_CUDA_SEPARATE_COMPILATION) || defined(TYPEX_CUDA_IMPLEMENTATION)
#include <typex/backend/cuda/detail/engine_impl.hpp>
#endif
