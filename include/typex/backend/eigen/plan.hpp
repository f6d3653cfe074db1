// typex/backend/eigen/plan.hpp — an exported program compiled for the Eigen backend.
//
// program_module<eigen_backend> (export/program_module.hpp: the calling convention) checks inputs
// and owns an engine; the engine holds the plan for the input shapes it last saw, made once per
// shape by the backend-neutral planner (plan/planner.hpp) and lowered to this backend's steps:
//  - nodes that read only parameters, buffers and constants are computed at planning time
//    (constant folding: the attention block's slices of in_proj_weight cost nothing per call);
//  - each remaining node becomes a step with its kernel resolved and its arguments decoded;
//    linear / conv2d followed by relu / gelu / silu / sigmoid / tanh (their only reader) become one
//    GEMM with the bias and the activation applied to each tile in cache (an epilogue), weights
//    packed for the GEMM once; views (reshape, view, flatten, unsqueeze) share their input's
//    buffer; transposes and permutes read only by matmuls are not copied: the matmul reads through
//    the strides; chains of pointwise ops (add / sub / mul / div with numbers or earlier tensors,
//    activations) after an add / sub / mul / div run in its pass, row by row in cache;
//  - every intermediate gets an offset in one arena by a liveness-based plan (buffers whose
//    lifetimes do not overlap share memory); report() gives the planned peak.
// A call with the shapes of the last plan allocates nothing (for the ops listed as allocation-free
// in docs/ops_and_eigen_backend.md; other ops run their eager kernel and copy the result into the
// arena, and report() names them). A call with new shapes (a new batch size) re-plans, which
// re-packs constant weights and allocates; measuring that cost is the dynamic-shapes issue's.
//
// Declarations only: the definitions (plan_impl.hpp) need Eigen and are compiled with the kernels.
#pragma once

#include <typex/backend/kit/engine.hpp>
#include <typex/core/symbol_table.hpp>
#include <typex/export/program_binding.hpp>
#include <typex/ir/graph.hpp>
#include <typex/plan/plan.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace typex::eigen {

struct compile_options {
  int threads = 0;    // threads for GEMM, convolution and large pointwise ops; 0: num_threads()
  bool fuse = true;   // GEMM epilogues, strided matmul operands (false: one kernel per node)
  // 3x3 stride-1 convolutions by Winograd's F(2x2, 3x3) where they fit (false: im2col + GEMM, whose
  // NaN / inf outputs are exactly direct convolution's; docs/ops_and_eigen_backend.md)
  bool winograd = true;
};

// What a plan does, for users and tests (plan/plan.hpp).
using plan_report = plan::report;

// Sets the number of threads of the backend's pool (1 = the calling thread only) and returns the
// previous count. The default is 1; programs may ask for fewer than the pool has.
TYPEX_EIGEN_API int set_num_threads(int threads);
TYPEX_EIGEN_API int num_threads();

namespace detail {
// The executor behind program_module<eigen_backend>: the backend kit's (backend/kit/engine.hpp).
using engine = kit::engine;

// A planned engine, or the kit's stepwise one for a program with data-dependent sizes. Checks that
// the backend runs every node (supports(): an unsupported_error names the first it does not)
// before anything is planned.
TYPEX_EIGEN_API std::shared_ptr<engine> make_engine(program_binding binding, compile_options options);
}  // namespace detail

}  // namespace typex::eigen
