// typex/backend/kit/engine.hpp — the executor every backend's programs run on, and how a backend
// turns a program_binding into one.
//
// program_module<Backend> (export/program_module.hpp) does the calling convention once for every
// backend; what it asks of a backend is an executor (engine) made from the binding. A backend
// gives the kit three things, and the kit does the rest (compile_program below):
//   - a name (for messages) and supports(node): whether it runs a node. Asked for every node
//     BEFORE anything is planned or allocated, so an op the backend does not run is an
//     unsupported_error at compile time naming the op, the node and the backend;
//   - a planned engine (plan::planner + the backend's plan::target: steps, one arena);
//   - optionally a stepwise engine for programs whose sizes only the data decide (nonzero), which
//     cannot be planned from their inputs' extents.
// A program whose recorded shapes are not trusted (a loaded archive) runs each new set of input
// extents stepwise first, every result checked against its record (checked_engine), then planned.
#pragma once

#include <typex/core/error.hpp>
#include <typex/core/symbol_table.hpp>
#include <typex/export/program_binding.hpp>
#include <typex/ir/control_flow.hpp>
#include <typex/ir/graph.hpp>
#include <typex/plan/plan.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace typex::kit {

// The executor behind program_module<Backend> (export/program_module.hpp's program_executor).
class engine {
 public:
  virtual ~engine() = default;
  // inputs: the user inputs' tensors (already checked); symbols bound from them. outputs is
  // resized to the program's outputs; tensors already of the right dtype and extents are reused.
  virtual void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) = 0;
  // Whether the last plan was made for these inputs' extents (then run needs no symbols).
  virtual bool planned_for(std::span<const any_tensor> inputs) const noexcept = 0;
  virtual plan::report report() const = 0;
};

// A program whose recorded shapes are not trusted: the first call for each set of input extents
// runs on `check` (a stepwise engine comparing every result with its record: a graph_error naming
// the node on a difference), and only extents whose records held run on `fast` (the planned
// engine, which lays out memory by the records).
class checked_engine final : public engine {
 public:
  checked_engine(std::unique_ptr<engine> check, std::unique_ptr<engine> fast) : check_(std::move(check)), fast_(std::move(fast)) {}

  bool planned_for(std::span<const any_tensor> inputs) const noexcept override { return checked(inputs) && fast_->planned_for(inputs); }

  void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) override {
    if (checked(inputs)) return fast_->run(inputs, symbols, outputs);
    check_->run(inputs, symbols, outputs);  // (throws before recording these extents as checked)
    std::vector<std::vector<index_t>> e;
    for (const any_tensor& t : inputs) e.push_back(t.extents());
    checked_.push_back(std::move(e));
  }

  plan::report report() const override { return fast_->report(); }

 private:
  bool checked(std::span<const any_tensor> inputs) const noexcept {
    for (const auto& e : checked_) {
      bool same = e.size() == inputs.size();
      for (std::size_t i = 0; same && i < inputs.size(); ++i) same = e[i] == inputs[i].extents();
      if (same) return true;
    }
    return false;
  }

  std::unique_ptr<engine> check_, fast_;
  std::vector<std::vector<std::vector<index_t>>> checked_;  // the input extents whose records held
};

// What a backend tells the kit (compile_program).
template <class Supports, class MakePlanned, class MakeStepwise>
struct backend_parts {
  std::string_view name;      // "eigen", "cuda": the messages' prefix (typex::cuda: ...)
  std::string_view title;     // "Eigen", "CUDA": in messages ("which the CUDA backend does not run")
  Supports supports;          // bool(const ir::graph&, const ir::node&): runs this call node (its
                              // arguments' values are the graph's: their dtypes and ranks)
  MakePlanned make_planned;   // std::unique_ptr<engine>(program_binding)
  MakeStepwise make_stepwise; // std::unique_ptr<engine>(program_binding), or nullptr_t: none
};
template <class S, class P, class W>
backend_parts(std::string_view, std::string_view, S, P, W) -> backend_parts<S, P, W>;

namespace detail {
[[noreturn]] TYPEX_API void unsupported_node(std::string_view backend, std::string_view title, const ir::node& node);
[[noreturn]] TYPEX_API void several_results(std::string_view backend, std::string_view title, const ir::node& node);
[[noreturn]] TYPEX_API void no_stepwise_engine(std::string_view backend, std::string_view title, bool data_dependent);
}  // namespace detail

// Every call node the backend runs, or an unsupported_error naming the first it does not: asked
// before anything is planned or allocated.
template <class Supports>
void check_supported(const ir::graph& g, std::string_view backend, std::string_view title, Supports&& supports) {
  for (const ir::node& node : g.nodes()) {
    if (node.op != ir::node_op::call_function || ir::is_assertion(node)) continue;  // (assertions: checked on binding)
    if (ir::is_control_flow(node)) {  // (run by the control-flow engine; its subgraphs' nodes by the backend)
      for (const std::string& name : ir::read_control_call(node).graphs) check_supported(g.subgraph_at(name), backend, title, supports);
      continue;
    }
    if (node.vals.size() != 1) detail::several_results(backend, title, node);
    if (!supports(g, node)) detail::unsupported_node(backend, title, node);
  }
}

// A program with higher-order calls (ir/control_flow.hpp), cut at them into parts that `compile`
// compiles (backend/kit/control_flow.hpp).
TYPEX_API std::shared_ptr<engine> make_control_flow_engine(program_binding binding,
                                                           std::function<std::shared_ptr<engine>(program_binding)> compile);

// A backend's engine for `binding`: supports() checked for every node first (and in every
// subgraph); a program with control flow is cut into parts, each compiled as below; then a stepwise
// engine for a program with data-dependent sizes, a checked one for a program whose shapes are
// not trusted, a planned one otherwise.
template <class S, class P, class W>
std::shared_ptr<engine> compile_program(program_binding binding, backend_parts<S, P, W> parts) {
  check_supported(*binding.graph, parts.name, parts.title, parts.supports);
  if (ir::has_control_flow(*binding.graph))
    return make_control_flow_engine(std::move(binding), [parts](program_binding b) { return compile_program(std::move(b), parts); });
  constexpr bool stepwise = !std::is_null_pointer_v<W>;
  if (!binding.data_dependent.empty() || binding.check_shapes) {
    if constexpr (stepwise) {
      if (!binding.data_dependent.empty()) return parts.make_stepwise(std::move(binding));  // (checks every result)
      std::unique_ptr<engine> check = parts.make_stepwise(binding);
      return std::make_shared<checked_engine>(std::move(check), parts.make_planned(std::move(binding)));
    } else {
      detail::no_stepwise_engine(parts.name, parts.title, !binding.data_dependent.empty());
    }
  }
  return std::shared_ptr<engine>(parts.make_planned(std::move(binding)));
}

}  // namespace typex::kit

#if TYPEX_HEADER_DEFINITIONS
namespace typex::kit::detail {
TYPEX_API void unsupported_node(std::string_view backend, std::string_view title, const ir::node& node) {
  typex::detail::raise<unsupported_error>([&](auto& w) {
    w.put("typex::"); w.put(backend); w.put(": the program uses "); w.put(node.target.name()); w.put(" (node '");
    w.put(node.name); w.put("'), which the "); w.put(title); w.put(" backend does not run");
  });
}
TYPEX_API void several_results(std::string_view backend, std::string_view title, const ir::node& node) {
  typex::detail::raise<unsupported_error>([&](auto& w) {
    w.put("typex::"); w.put(backend); w.put(": node '"); w.put(node.name); w.put("' ("); w.put(node.target.name());
    w.put(") has several results; the "); w.put(title); w.put(" program runner runs single-result ops");
  });
}
TYPEX_API void no_stepwise_engine(std::string_view backend, std::string_view title, bool data_dependent) {
  typex::detail::raise<unsupported_error>([&](auto& w) {
    w.put("typex::"); w.put(backend); w.put(": the "); w.put(title);
    w.put(data_dependent ? " backend does not run programs with data-dependent sizes (nonzero, masked_select): run it on the Eigen backend"
                         : " backend does not run programs whose recorded shapes are not trusted (a loaded archive without "
                           "trusted shapes): run it on the Eigen backend, or load it trusted");
  });
}
}  // namespace typex::kit::detail
#endif  // TYPEX_HEADER_DEFINITIONS

#include <typex/backend/kit/control_flow.hpp>  // (make_control_flow_engine)
