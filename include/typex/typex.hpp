// typex/typex.hpp — the umbrella header: every public header of typex, and nothing from detail/.
//
// Heavy backends are not included here: <typex/backend/eigen.hpp> and <typex/backend/cuda.hpp>
// (later issues) bring Eigen and CUDA in, so code that only builds and checks shapes stays light.
#pragma once

#include <typex/config.hpp>

// core
#include <typex/core/dim.hpp>
#include <typex/core/dim_rules.hpp>
#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>
#include <typex/core/fixed_string.hpp>
#include <typex/core/half.hpp>
#include <typex/core/requirement.hpp>
#include <typex/core/shape.hpp>
#include <typex/core/static_error.hpp>
#include <typex/core/symbol_table.hpp>
#include <typex/core/text.hpp>
#include <typex/core/type_name.hpp>
#include <typex/core/rules/broadcast.hpp>
#include <typex/core/rules/concat.hpp>
#include <typex/core/rules/conv.hpp>
#include <typex/core/rules/matmul.hpp>
#include <typex/core/rules/permute.hpp>
#include <typex/core/rules/reduce.hpp>
#include <typex/core/rules/reshape.hpp>
#include <typex/core/rules/slice.hpp>
#include <typex/core/rules/squeeze.hpp>

// tree
#include <typex/tree/flatten.hpp>
#include <typex/tree/node.hpp>
#include <typex/tree/spec.hpp>
#include <typex/tree/unflatten.hpp>

// tensor
#include <typex/tensor/host_tensor.hpp>
#include <typex/tensor/named_tensors.hpp>
#include <typex/tensor/storage.hpp>
#include <typex/tensor/tensor_spec.hpp>

// ir
#include <typex/ir/graph.hpp>
#include <typex/ir/printer.hpp>
#include <typex/ir/sym_expr.hpp>
#include <typex/ir/verifier.hpp>

// trace
#include <typex/trace/context.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module.hpp>
#include <typex/trace/module_tensor.hpp>
#include <typex/trace/traced.hpp>

// passes
#include <typex/passes/dce.hpp>

// export
#include <typex/export/exported_program.hpp>
#include <typex/export/graph_signature.hpp>
#include <typex/export/module_call_graph.hpp>
#include <typex/export/range_constraints.hpp>
