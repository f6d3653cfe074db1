// The per-backend test axis (ggml's test-backend-ops): one list of cases, run on every backend
// present against the same reference.
//
// A case is a PyTorch parity case of tests/data/parity/ops.txt made into a one-node program (its
// tensors as placeholders, the op, its result). A backend under test compiles programs through its
// program_module backend type (the path users take: supports() asked first, then the planner and
// the backend's lowering) with its inputs on its own device, and hands the outputs back on the
// host. typex_unit_tests runs the Eigen backend; typex_cuda_emulator_tests adds the CUDA backend on
// the emulated device (tests/unit/cuda/backend_axis.cpp); on a GPU machine the native device joins.
#pragma once

#include "parity_cases.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/ir/describe.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace typex_test {

inline typex::any_tensor to_f64(const typex::any_tensor& t) {
  using namespace typex;
  if (t.scalar_type() != dtype::f32) return t;
  any_tensor out(dtype::f64, t.extents());
  for (index_t i = 0; i < t.numel(); ++i) out.data<double>()[i] = t.data<float>()[i];
  return out;
}

// A parity case as a program: its tensors as placeholders (in f64 when `f64`), the op, its result.
struct case_program {
  typex::ir::graph g;
  std::vector<typex::any_tensor> inputs;
};
inline case_program make_program(const parity::parity_case& c, bool f64) {
  using namespace typex;
  case_program p;
  std::vector<ir::argument> args;
  std::size_t list_k = 0;
  const auto place = [&](const any_tensor& t0) {
    any_tensor t = f64 ? to_f64(t0) : t0;
    std::vector<ir::sym_expr> shape(t.extents().begin(), t.extents().end());
    const ir::node_id id = p.g.add_placeholder("arg", {t.scalar_type(), shape});
    p.inputs.push_back(std::move(t));
    return ir::value_ref{id};
  };
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    ir::argument a = c.args[i];
    if (c.tensors[i]) a = place(*c.tensors[i]);
    else if (auto* refs = std::get_if<std::vector<ir::value_ref>>(&a))
      for (auto& r : *refs) r = place(c.list[list_k++]);
    else if (auto* d = std::get_if<dtype>(&a); d != nullptr && f64 && *d == dtype::f32)
      a = dtype::f64;
    args.push_back(std::move(a));
  }
  const op_id op = find_op(c.target);
  std::vector<ir::tensor_meta> vals = ir::infer_meta(p.g, op, args);
  const ir::node_id n = p.g.add_call({.target = op, .args = std::move(args), .vals = std::move(vals),
                                      .nn_module_stack = {{"block", "Block"}}, .stack_trace = "case.cpp:1 in forward"});
  p.g.set_output({ir::value_ref{n}});
  return p;
}

// A case program's binding: every placeholder fed per call; the symbols its node's result names
// are data-dependent (nonzero's count: only running the op binds them), which a backend runs with
// a stepwise engine or refuses.
inline typex::program_binding binding_of(const typex::ir::graph& g) {
  using namespace typex;
  program_binding b;
  b.graph = std::make_shared<const ir::graph>(g);
  b.inputs = g.placeholders();
  b.user_inputs = b.inputs.size();
  for (const ir::node& n : g.nodes())
    if (n.op == ir::node_op::call_function)
      for (const ir::tensor_meta& m : n.vals)
        for (const ir::sym_expr& e : m.shape)
          if (e.is_symbol() && std::find(b.data_dependent.begin(), b.data_dependent.end(), e.name()) == b.data_dependent.end())
            b.data_dependent.emplace_back(e.name());
  b.check = [](const symbol_table&) {};
  return b;
}

// A backend as the axis runs it.
struct backend_under_test {
  std::string name;
  // Whether the backend runs every call node of g (its supports(), asked as compiling would).
  std::function<bool(const typex::ir::graph&)> runs;
  // g's outputs for `inputs` (host tensors, fed to g's placeholders in order), on the host.
  std::function<std::vector<typex::any_tensor>(const typex::ir::graph&, const std::vector<typex::any_tensor>&)> run;
};

// The Eigen backend through its planned (or stepwise) engine: program_module's path.
inline backend_under_test eigen_backend_under_test() {
  using namespace typex;
  return {"eigen",
          [](const ir::graph& g) {
            for (const ir::node& n : g.nodes())
              if (n.op == ir::node_op::call_function && !eigen::supports(n)) return false;
            return true;
          },
          [](const ir::graph& g, const std::vector<any_tensor>& inputs) {
            auto e = eigen_backend::compile(binding_of(g), {});
            std::vector<any_tensor> out;
            e->run(inputs, symbol_table{}, out);
            return out;
          }};
}

// "" when got matches want within the case's tolerance (PyTorch's values), else what differs.
inline std::string parity_difference(const parity::parity_case& c, const typex::any_tensor& got) {
  using namespace typex;
  const any_tensor& want = c.expected;
  if (got.scalar_type() != want.scalar_type() || got.extents() != want.extents())
    return "got " + got.to_string() + ", PyTorch gives " + want.to_string();
  for (index_t i = 0; i < want.numel(); ++i) {
    const double g = parity::element(got, i), w = parity::element(want, i);
    const bool same = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= c.atol + c.rtol * std::abs(w);
    if (!same) {
      std::ostringstream s;
      s.precision(17);
      s << "element " << i << ": got " << g << ", PyTorch gives " << w << " (atol " << c.atol << ", rtol " << c.rtol << ")";
      return s.str();
    }
  }
  return "";
}

struct axis_result {
  std::size_t run = 0;
  std::vector<std::string> failures, not_run;  // (not_run: the backend's supports() said no)
};

// Every parity case on `b`: the ones it runs must match PyTorch; the others are listed by name.
// Left to the backends' own tests: cases of random ops (their values depend on the generator's
// stream), and training-mode batch_norm with running statistics, which updates them in place: not
// a program (the planner refuses it; nn::BatchNorm2d traces the update as buffer mutations).
inline axis_result run_parity_axis(const backend_under_test& b) {
  using namespace typex;
  axis_result r;
  for (const parity::parity_case& c : parity::read_cases()) {
    if (ir::describe(find_op(c.target)).traits.random) continue;
    const case_program p = make_program(c, false);
    const ir::node& call = p.g[std::get<ir::value_ref>(p.g.output().args.front()).node];
    if (call.target == op_id_of<batch_norm_op>) {
      std::vector<const any_tensor*> none(call.args.size(), nullptr);
      const ir::call_args a(call.target, call.args, none);
      if (a.has("training") && a.flag("training") && (a.has("running_mean") || a.has("running_var"))) continue;
    }
    if (!b.runs(p.g)) {
      r.not_run.push_back(c.name + " (" + c.target + ")");
      continue;
    }
    std::string problem;
    try {
      const auto out = b.run(p.g, p.inputs);
      problem = out.size() == 1 ? parity_difference(c, out[0]) : "not one output";
    } catch (const std::exception& e) {
      problem = std::string("threw: ") + e.what();
    }
    ++r.run;
    if (!problem.empty()) r.failures.push_back(c.name + " (" + c.target + "): " + problem);
  }
  return r;
}

}  // namespace typex_test
