// typex/typex.hpp — the umbrella header: every public header of typex, and nothing from detail/.
// Code that only declares and checks shapes, pytrees and tensors can include <typex/core.hpp>
// (half the compile time; benchmarks/compile_time has the figures).
//
// Heavy backends are not included here: <typex/backend/eigen.hpp> and <typex/backend/cuda.hpp>
// (later issues) bring Eigen and CUDA in, so code that only builds and checks shapes stays light.
// Nor are files: <typex/tensor/safetensors.hpp> (weights) and <typex/export/archive.hpp> (programs,
// and weights) bring a JSON parser in, 3 s of every header-only unit that includes them.
#pragma once

#include <typex/config.hpp>

// core, tree, tensor: the compile-time core
#include <typex/core.hpp>

// ops
#include <typex/ops/apply.hpp>
#include <typex/ops/attention.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/concat.hpp>
#include <typex/ops/conv.hpp>
#include <typex/ops/embedding.hpp>
#include <typex/ops/factory.hpp>
#include <typex/ops/indexing.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/loss.hpp>
#include <typex/ops/mutation.hpp>
#include <typex/ops/normalization.hpp>
#include <typex/ops/reduce.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>
#include <typex/ops/unary.hpp>

// ir
#include <typex/ir/control_flow.hpp>
#include <typex/ir/graph.hpp>
#include <typex/ir/op_arguments.hpp>
#include <typex/ir/printer.hpp>
#include <typex/ir/sym_expr.hpp>
#include <typex/ir/verifier.hpp>

// trace
#include <typex/trace/context.hpp>
#include <typex/trace/control_flow.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module.hpp>
#include <typex/trace/module_tensor.hpp>
#include <typex/trace/record.hpp>
#include <typex/trace/traced.hpp>

// passes
#include <typex/nn.hpp>
#include <typex/passes/dce.hpp>

// export
#include <typex/export/export_program.hpp>
#include <typex/export/exported_program.hpp>
#include <typex/export/graph_signature.hpp>
#include <typex/export/module_call_graph.hpp>
#include <typex/export/program_binding.hpp>
#include <typex/export/program_module.hpp>
#include <typex/export/range_constraints.hpp>
