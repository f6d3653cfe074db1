// typex/backend/eigen/program.hpp — running an exported program on the Eigen backend.
//
//   auto run = program.module();                 // program_module<eigen_backend>
//   std::vector<any_tensor> out = run({x});      // tensor leaves in, output leaves out
//
// Construction resolves every node's kernel (an op the backend does not run is an
// unsupported_error now, not at the first call) and takes the lifted parameters, buffers and
// constants from the program. Each call checks the inputs against the program — count, dtype,
// rank, static extents, the symbols' ranges and agreement between inputs — and throws an error
// naming the input, what was expected and what came; then runs the nodes in order, releasing each
// value after its last use, and checks each result against the node's recorded dtype and shape.
#pragma once

#include <typex/backend/eigen/kernels.hpp>
#include <typex/export/exported_program.hpp>
#include <typex/export/program_module.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace typex {

template <>
class program_module<eigen_backend> {
 public:
  explicit program_module(const exported_program& ep) : ep_(std::make_shared<const exported_program>(ep)) {
    const ir::graph& g = ep_->graph();
    const auto& specs = ep_->signature().input_specs();
    const auto placeholders = g.placeholders();
    for (std::size_t i = 0; i < placeholders.size(); ++i) {
      const input_spec& s = specs[i];
      if (s.kind == input_kind::user_input) {
        user_.push_back(placeholders[i]);
        continue;
      }
      const bool in_state = s.kind == input_kind::parameter || (s.kind == input_kind::buffer && s.persistent);
      const any_tensor* t = in_state ? ep_->state_dict().find(s.target) : ep_->constants().find(s.target);
      lifted_.emplace_back(placeholders[i], *t);  // (the program's verifier saw it exists)
    }
    last_use_.assign(g.size(), 0);
    kernels_.assign(g.size(), nullptr);
    for (ir::node_id n = 0; n < g.size(); ++n) {
      const ir::node& node = g[n];
      if (node.op == ir::node_op::call_function) {
        if (node.vals.size() != 1) {
          detail::raise<unsupported_error>([&](auto& w) {
            w.put("typex::eigen: node '"); w.put(node.name); w.put("' ("); w.put(node.target);
            w.put(") has several results; the Eigen program runner runs single-result ops");
          });
        }
        kernels_[n] = eigen::find_kernel(node.target);
        if (kernels_[n] == nullptr) {
          detail::raise<unsupported_error>([&](auto& w) {
            w.put("typex::eigen: the program uses "); w.put(node.target); w.put(" (node '"); w.put(node.name);
            w.put("'), which the Eigen backend does not run");
          });
        }
      }
      for (const auto& a : node.args) ir::graph::for_each_ref(a, [&](ir::value_ref r) { last_use_[r.node] = n; });
    }
  }

  // The number of tensor inputs a call takes (the user inputs' tensor leaves).
  std::size_t num_inputs() const noexcept { return user_.size(); }
  const exported_program& program() const noexcept { return *ep_; }

  std::vector<any_tensor> operator()(const std::vector<any_tensor>& inputs) const {
    const ir::graph& g = ep_->graph();
    symbol_table symbols;
    check_inputs(inputs, symbols);
    std::vector<std::optional<any_tensor>> values(g.size());
    for (const auto& [id, t] : lifted_) values[id] = t;
    for (std::size_t i = 0; i < user_.size(); ++i) values[user_[i]] = inputs[i];
    std::vector<const any_tensor*> tensors;
    for (ir::node_id n = 0; n < g.size(); ++n) {
      const ir::node& node = g[n];
      if (node.op != ir::node_op::call_function) continue;
      tensors.assign(node.args.size(), nullptr);
      for (std::size_t k = 0; k < node.args.size(); ++k)
        if (const auto* r = std::get_if<ir::value_ref>(&node.args[k])) tensors[k] = &*values[r->node];
      values[n] = kernels_[n](eigen::kernel_args(node.target, node.args, tensors, &symbols));
      check_result(node, *values[n], symbols);
      for (const auto& a : node.args)  // release what no later node reads
        ir::graph::for_each_ref(a, [&](ir::value_ref r) {
          if (last_use_[r.node] == n && g[r.node].op == ir::node_op::call_function) values[r.node].reset();
        });
    }
    std::vector<any_tensor> out;
    for (const auto& a : g.output().args) out.push_back(*values[std::get<ir::value_ref>(a).node]);
    return out;
  }

 private:
  void check_inputs(const std::vector<any_tensor>& inputs, symbol_table& symbols) const {
    const ir::graph& g = ep_->graph();
    if (inputs.size() != user_.size()) {
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex: the exported program takes "); w.put_int(static_cast<long long>(user_.size()));
        w.put(user_.size() == 1 ? " tensor input (" : " tensor inputs (");
        for (std::size_t i = 0; i < user_.size(); ++i) { if (i) w.put(", "); w.put(g[user_[i]].name); }
        w.put("), but "); w.put_int(static_cast<long long>(inputs.size())); w.put(" were given");
      });
    }
    // dtype, rank and static extents; symbols bound by the first input that uses them
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const ir::node& ph = g[user_[i]];
      const ir::tensor_meta& m = ph.vals.front();
      const any_tensor& t = inputs[i];
      std::string what = "input '";
      what += ph.name;
      what += '\'';
      if (t.scalar_type() != m.scalar_type) {
        detail::raise<dtype_error>([&](auto& w) {
          w.put("typex: "); w.put(what); w.put(" has dtype "); w.put(name(t.scalar_type())); w.put(", expected ");
          w.put(m.to_string());
        });
      }
      if (t.rank() != m.rank()) {
        detail::raise<shape_error>([&](auto& w) {
          w.put("typex: "); w.put(what); w.put(" is "); w.put(t.to_string()); w.put(", expected "); w.put(m.to_string());
          w.put(" (rank "); w.put_int(static_cast<long long>(m.rank())); w.put(')');
        });
      }
      for (std::size_t d = 0; d < m.rank(); ++d) {
        const ir::sym_expr& e = m.shape[d];
        if (const auto v = e.value(); v && *v != t.extents()[d]) {
          detail::raise<shape_error>([&](auto& w) {
            w.put("typex: "); w.put(what); w.put(" is "); w.put(t.to_string()); w.put(", expected "); w.put(m.to_string());
            w.put(": dim "); w.put_int(static_cast<long long>(d)); w.put(" is "); w.put_int(t.extents()[d]);
            w.put(", expected "); w.put_int(*v);
          });
        }
        if (e.is_symbol()) {
          std::string by = what;
          by += " (dim ";
          by += std::to_string(d);
          by += ')';
          symbols.bind(e.name(), t.extents()[d], by);
        }
      }
    }
    ep_->ranges().check(symbols);
    // derived dims: equal to their expression of the bound symbols
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const ir::tensor_meta& m = g[user_[i]].vals.front();
      for (std::size_t d = 0; d < m.rank(); ++d) {
        const ir::sym_expr& e = m.shape[d];
        if (e.is_constant() || e.is_symbol()) continue;
        const auto v = e.evaluate(symbols);
        if (v && *v != inputs[i].extents()[d]) {
          detail::raise<constraint_violation>([&](auto& w) {
            w.put("typex: input '"); w.put(g[user_[i]].name); w.put("' is "); w.put(inputs[i].to_string());
            w.put(", expected "); w.put(m.to_string()); w.put(": dim "); w.put_int(static_cast<long long>(d));
            w.put(" is "); w.put_int(inputs[i].extents()[d]); w.put(", but "); w.put(e.to_string()); w.put(" = ");
            w.put_int(*v);
          });
        }
      }
    }
  }

  // A kernel's result against the node's metadata (where its symbols are bound): a disagreement
  // is a bug in typex, reported rather than computed on.
  static void check_result(const ir::node& node, const any_tensor& t, const symbol_table& symbols) {
    const ir::tensor_meta& m = node.vals.front();
    bool ok = t.scalar_type() == m.scalar_type && t.rank() == m.rank();
    for (std::size_t d = 0; ok && d < m.rank(); ++d) {
      const auto v = m.shape[d].evaluate(symbols);
      ok = !v || *v == t.extents()[d];
    }
    if (!ok) {
      detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::eigen: node '"); w.put(node.name); w.put("' ("); w.put(node.target); w.put(") produced ");
        w.put(t.to_string()); w.put(" where the program records "); w.put(m.to_string());
      });
    }
  }

  std::shared_ptr<const exported_program> ep_;
  std::vector<ir::node_id> user_;
  std::vector<std::pair<ir::node_id, any_tensor>> lifted_;
  std::vector<ir::node_id> last_use_;
  std::vector<eigen::kernel_fn> kernels_;
};

}  // namespace typex
