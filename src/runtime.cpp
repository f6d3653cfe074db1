// typex's run-time code, compiled once: the typex::runtime library (CMake) is this unit. Its users
// see only the declarations (TYPEX_SEPARATE_COMPILATION), so a unit that exports and runs a model
// does not compile the graph, printer, verifiers, input binding and export's bookkeeping again.
#define TYPEX_IMPLEMENTATION
#include <typex/typex.hpp>
#include <typex/export/joint.hpp>  // (training: not in typex.hpp, which inference units include)
#include <typex/passes/partition.hpp>  // (training: the partitioner)
#include <typex/export/partitioned_module.hpp>  // (and its runner)
#include <typex/export/archive.hpp>  // (files: safetensors, program archives)
#include <typex/export/decompositions.hpp>  // (transforming programs: decompositions)
#include <typex/export/unflatten.hpp>  // (unflatten: the module tree back from a program)
#include <typex/ir/dot.hpp>  // (pictures: a graph as Graphviz DOT)
#include <typex/export/dot.hpp>  // (and a program, coloured by its signature)
#include <typex/backend/kit/eager.hpp>  // (the backend kit: engines, supports, the eager runner)
#include <typex/passes/pass.hpp>  // (graph passes: the pipeline, and the passes beside dce)
#include <typex/passes/argument_hash.hpp>
#include <typex/passes/cse.hpp>
#include <typex/passes/fold.hpp>
#include <typex/passes/replace_pattern.hpp>
