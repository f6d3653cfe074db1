// typex/core.hpp — the compile-time core alone: dims, shapes and their rules, dtypes, errors,
// pytrees, tensor specs and host tensors (the core, tree and tensor layers). No graph, tracing or
// backend: what shape-checking code needs, at about half the umbrella's compile time.
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
#include <typex/core/sentence.hpp>
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
#include <typex/tree/map.hpp>
#include <typex/tree/node.hpp>
#include <typex/tree/spec.hpp>
#include <typex/tree/unflatten.hpp>

// tensor
#include <typex/tensor/host_tensor.hpp>
#include <typex/tensor/named_tensors.hpp>
#include <typex/tensor/storage.hpp>
#include <typex/tensor/tensor_spec.hpp>
