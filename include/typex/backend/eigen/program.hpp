// typex/backend/eigen/program.hpp — running an exported program on the Eigen backend.
//
//   auto run = program.module();                 // program_module<eigen_backend>
//   auto run = program_module<eigen_backend>(program, {.threads = 2, .fuse = true});
//   std::vector<any_tensor> out = run({x});
//
// eigen_backend is a backend in export/program_module.hpp's sense: the module does the calling
// convention (input checks, lifted tensors, buffer mutation) and compiles the program's binding
// here. Compiling checks that the backend runs every node (an op it does not run is an
// unsupported_error now, not at the first call); each call then runs the plan made for its
// shapes (plan.hpp: folded constants, fused GEMM epilogues, views without copies, one arena). A
// call with new shapes re-plans; the constant weights packed for the GEMMs are kept across plans
// (packed when the module first plans: a module made before the program's weights change keeps
// reading the old ones; make a new module after loading weights).
#pragma once

#include <typex/backend/eigen/kernels.hpp>
#include <typex/backend/eigen/plan.hpp>
#include <typex/export/decompositions.hpp>
#include <typex/export/program_module.hpp>

#include <memory>

namespace typex {

struct eigen_backend {
  using options = eigen::compile_options;
  using executor = eigen::detail::engine;
  static std::shared_ptr<executor> compile(program_binding binding, const options& o) {
    return eigen::detail::make_engine(std::move(binding), o);
  }
  // attention's backward ops (typex.attention_stats, typex.scaled_dot_product_attention_backward,
  // which a derivative writes for backends that fuse them) as their decompositions, the copies of
  // the scores they share merged: on the CPU the GEMMs of the math path run once, not once per
  // input gradient. Every other program as it is.
  static exported_program prepare(const exported_program& ep) {
    passes::decomposition_table t;
    t.add(op_id_of<attention_stats_op>);
    t.add(op_id_of<attention_backward_op>);
    return run_decompositions_merged(ep, t);
  }
};

}  // namespace typex
