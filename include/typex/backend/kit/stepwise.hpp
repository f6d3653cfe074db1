// typex/backend/kit/stepwise.hpp — running a program node by node on a backend's eager kernels.
//
// The planned engines lay memory out by the extents the inputs bind. Two kinds of program cannot be
// run that way, and any backend with kernels on host tensors runs them with this engine:
//  - a program with data-dependent sizes (nonzero, masked_select: symbols bound only when the op
//    that makes them runs);
//  - the first call, per set of input extents, of a program whose recorded shapes are not trusted
//    (a loaded archive: kit::checked_engine), where every result is compared with its record.
#pragma once

#include <typex/backend/kit/engine.hpp>
#include <typex/ir/call.hpp>
#include <typex/tensor/device_ops.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace typex::kit {

// A kernel on host tensors: the arguments of one call (by the schema's names), a new result.
using host_kernel = any_tensor (*)(const ir::call_args&);

// A program with data-dependent sizes (nonzero, masked_select: symbols bound only when the op that
// makes them runs) cannot be planned from its inputs' shapes: it runs node by node on the eager
// kernels, binding each data-dependent size from the result that makes it (checked against its
// range), checking the run-time assertions that wait for it, and each result's extents against the
// program's. It allocates per call; the planned engine runs every other program.
class stepwise_engine final : public engine {
 public:
  // find(op): the backend's kernel for an op (every op of the program has one: compile_program
  // asked supports() first).
  stepwise_engine(program_binding b, std::string_view backend, host_kernel (*find)(op_id))
      : binding_(std::move(b)), backend_(backend), find_(find) {}

  bool planned_for(std::span<const any_tensor>) const noexcept override { return false; }

  void run(std::span<const any_tensor> inputs, const symbol_table& bound, std::vector<any_tensor>& outputs) override {
    const ir::graph& g = *binding_.graph;
    symbol_table symbols = bound;
    std::vector<std::optional<any_tensor>> values(g.size());
    for (const auto& [id, t] : binding_.constants) values[id] = t;
    for (std::size_t i = 0; i < binding_.inputs.size(); ++i) values[binding_.inputs[i]] = inputs[i];
    for (ir::node_id n = 0; n < g.size(); ++n) {
      const ir::node& node = g[n];
      if (node.op != ir::node_op::call_function || ir::is_assertion(node)) continue;
      std::vector<const any_tensor*> tensors(node.args.size(), nullptr), list;
      for (std::size_t k = 0; k < node.args.size(); ++k) {
        if (const auto* r = std::get_if<ir::value_ref>(&node.args[k])) tensors[k] = &*values[r->node];
        else if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&node.args[k]))
          for (const ir::value_ref& r : *refs) list.push_back(&*values[r.node]);
      }
      any_tensor out = find_(node.target)(ir::call_args(node.target, node.args, tensors, &symbols, list));
      const ir::tensor_meta& meta = node.vals.front();
      bool bound_now = false;
      for (std::size_t d = 0; d < meta.rank() && d < out.rank(); ++d) {
        const ir::sym_expr& e = meta.shape[d];
        if (!e.is_symbol() || !binding_.is_data_dependent(e.name()) || symbols.value(e.name())) continue;
        std::string by = "node '";
        by += node.name;
        by += "' (dim ";
        by += std::to_string(d);
        by += ')';
        symbols.bind(e.name(), out.extents()[d], by);
        bound_now = true;
      }
      if (bound_now) binding_.check(symbols);
      check_extents(node, out, symbols);
      values[n] = std::move(out);
    }
    const auto& outs = g.output().args;
    outputs.resize(outs.size());
    // (outputs never share memory with the inputs, the program's tensors or each other, as the
    // planned engine's copies do not: an output that is a view of one is copied)
    const auto within = [](const any_tensor& o, const storage& t) {
      const auto p = reinterpret_cast<std::uintptr_t>(o.raw_data()), b = reinterpret_cast<std::uintptr_t>(t.data());
      return p != 0 && b != 0 && p >= b && p < b + std::max<std::size_t>(t.bytes(), 1);
    };
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const any_tensor& v = *values[std::get<ir::value_ref>(outs[i]).node];
      bool shared = false;
      for (const any_tensor& x : inputs) shared = shared || within(v, x.get_storage());
      for (const auto& [ph, x] : binding_.constants) shared = shared || within(v, x.get_storage());
      for (std::size_t j = 0; j < i; ++j) shared = shared || within(v, outputs[j].get_storage());
      outputs[i] = shared ? clone_where_it_is(v, "typex::kit::stepwise_engine: an output") : v;  // (a device's tensors: there)
    }
  }

  plan::report report() const override {
    plan::report r;
    for (const ir::node& n : binding_.graph->nodes())
      if (n.op == ir::node_op::call_function && !ir::is_assertion(n)) {
        ++r.steps;
        r.allocating_ops.emplace_back(n.target.name());
      }
    return r;
  }

 private:
  // A result whose extents differ from what the program records: a bug in typex, reported.
  void check_extents(const ir::node& node, const any_tensor& out, const symbol_table& symbols) const {
    const ir::tensor_meta& m = node.vals.front();
    bool same = out.scalar_type() == m.scalar_type && out.rank() == m.rank();
    for (std::size_t d = 0; same && d < m.rank(); ++d) {
      const auto v = m.shape[d].evaluate(symbols);
      same = !v || *v == out.extents()[d];  // (anonymous dims: not followed by the graph)
    }
    if (!same) {
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::"); w.put(backend_); w.put(": node '"); w.put(node.name); w.put("' ("); w.put(node.target.name()); w.put(") produced ");
        w.put(out.to_string()); w.put(" where the program records "); w.put(m.to_string());
      });
    }
  }

  program_binding binding_;
  std::string_view backend_;
  host_kernel (*find_)(op_id);
};

}  // namespace typex::kit
