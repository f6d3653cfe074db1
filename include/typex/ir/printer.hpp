// typex/ir/printer.hpp — a graph as torch.export prints it (GraphModule.print_readable).
//
//   class GraphModule(torch.nn.Module):
//       def forward(self, p_fc1_weight: "f32[512, 784]", x: "f32[s0, 784]"):
//            # File: mlp.cpp:14 in forward
//           linear: "f32[s0, 512]" = torch.ops.aten.linear.default(x, p_fc1_weight);  x = p_fc1_weight = None
//           return (linear,)
//
// Each call line frees, as torch's does, the values whose last use it is. A higher-order call
// (ir/control_flow.hpp) reads its subgraphs as torch's does (`true_graph_0 = self.true_graph_0`),
// and each subgraph prints after the forward as a nested class of the same form.
#pragma once

#include <typex/ir/control_flow.hpp>
#include <typex/ir/graph.hpp>

#include <charconv>
#include <string>

namespace typex::ir {

namespace detail {
TYPEX_API void print_double(std::string& s, double v);

// A string as Python's repr writes it: single quotes, or double quotes when it holds a single
// quote and no double one; backslashes and the chosen quote escaped.
TYPEX_API void print_string(std::string& s, std::string_view v);

TYPEX_API void print_value(std::string& s, const graph& g, value_ref r);

TYPEX_API void print_argument(std::string& s, const graph& g, const argument& a);

TYPEX_API void print_meta_annotation(std::string& s, const node& n);

// The graph as a class named `class_name`, every line after `indent`.
TYPEX_API void print_graph(std::string& s, const graph& g, std::string_view class_name, std::string_view indent);
}  // namespace detail

TYPEX_API std::string print_readable(const graph& g, std::string_view class_name = "GraphModule");

}  // namespace typex::ir

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API void typex::ir::detail::print_double(std::string& s, double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form, as Python's repr
  const std::string_view t(buf, static_cast<std::size_t>(res.ptr - buf));
  s += t;
  if (t.find_first_of(".enia") == std::string_view::npos) s += ".0";  // 1 -> 1.0
}

TYPEX_API void typex::ir::detail::print_string(std::string& s, std::string_view v) {
  const char q = v.find('\'') != std::string_view::npos && v.find('"') == std::string_view::npos ? '"' : '\'';
  s += q;
  for (char c : v) {
    if (c == q || c == '\\') s += '\\';
    s += c;
  }
  s += q;
}

TYPEX_API void typex::ir::detail::print_value(std::string& s, const graph& g, value_ref r) {
  s += g[r.node].name;
  if (g[r.node].vals.size() > 1) {
    s += '[';
    s += std::to_string(r.index);
    s += ']';
  }
}

TYPEX_API void typex::ir::detail::print_argument(std::string& s, const graph& g, const argument& a) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, value_ref>) {
          print_value(s, g, v);
        } else if constexpr (std::is_same_v<T, none_t>) {
          s += "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          s += v ? "True" : "False";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          s += std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          print_double(s, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          print_string(s, v);
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>> || std::is_same_v<T, std::vector<value_ref>> ||
                             std::is_same_v<T, std::vector<sym_expr>>) {
          s += '[';
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) s += ", ";
            if constexpr (std::is_same_v<T, std::vector<value_ref>>) print_value(s, g, v[i]);
            else if constexpr (std::is_same_v<T, std::vector<sym_expr>>) s += v[i].to_string();
            else s += std::to_string(v[i]);
          }
          s += ']';
        } else if constexpr (std::is_same_v<T, sym_expr>) {
          s += v.to_string();
        } else {
          s += torch_name(v);
        }
      },
      a);
}

TYPEX_API void typex::ir::detail::print_meta_annotation(std::string& s, const node& n) {
  if (n.vals.size() == 1) {
    s += ": \"";
    s += n.vals[0].to_string();
    s += '"';
  }
}

TYPEX_API auto typex::ir::print_readable(const graph& g, std::string_view class_name) -> std::string {
  std::string s;
  detail::print_graph(s, g, class_name, "");
  return s;
}

TYPEX_API void typex::ir::detail::print_graph(std::string& s, const graph& g, std::string_view class_name, std::string_view indent) {
  s += indent;
  s += "class ";
  s += class_name;
  s += "(torch.nn.Module):\n";
  s += indent;
  s += "    def forward(self";
  for (const node& n : g.nodes()) {
    if (n.op != node_op::placeholder) break;
    s += ", ";
    s += n.name;
    detail::print_meta_annotation(s, n);
  }
  s += "):\n";

  // last_use[i]: the node that reads value i last (torch frees it there)
  std::vector<node_id> last_use(g.size(), static_cast<node_id>(-1));
  for (node_id i = 0; i < g.size(); ++i) {
    if (g[i].op == node_op::output) continue;
    graph::for_each_ref(g[i], [&](value_ref r) { last_use[r.node] = i; });
  }

  for (node_id i = 0; i < g.size(); ++i) {
    const node& n = g[i];
    if (n.op == node_op::placeholder) continue;
    if (n.op == node_op::output) {
      s += indent;
      s += "        return (";
      for (std::size_t k = 0; k < n.args.size(); ++k) {
        if (k) s += ", ";
        detail::print_argument(s, g, n.args[k]);
      }
      s += n.args.size() == 1 ? ",)\n" : ")\n";
      continue;
    }
    if (!n.stack_trace.empty()) {
      s += indent;
      s += "         # File: ";
      s += n.stack_trace;
      s += '\n';
    }
    const bool higher_order = is_control_flow(n);
    if (higher_order) {  // (torch reads each subgraph off the module first)
      for (const argument& a : n.args)
        if (const auto* sub = std::get_if<std::string>(&a)) {
          s += indent;
          s += "        ";
          s += *sub;
          s += " = self.";
          s += *sub;
          s += '\n';
        }
    }
    s += indent;
    s += "        ";
    s += n.name;
    detail::print_meta_annotation(s, n);
    s += " = torch.ops.";
    s += n.target.name();
    s += '(';
    bool first = true;
    for (const argument& a : n.args) {
      if (!first) s += ", ";
      first = false;
      if (const auto* sub = std::get_if<std::string>(&a); sub != nullptr && higher_order) s += *sub;
      else detail::print_argument(s, g, a);
    }
    for (const auto& [key, a] : n.kwargs) {
      if (!first) s += ", ";
      first = false;
      s += key;
      s += " = ";
      detail::print_argument(s, g, a);
    }
    s += ')';
    // free what this node used last, each name once
    std::vector<node_id> freed;
    graph::for_each_ref(n, [&](value_ref r) {
      if (last_use[r.node] != i) return;
      for (node_id f : freed)
        if (f == r.node) return;
      freed.push_back(r.node);
    });
    if (!freed.empty()) {
      s += ";  ";
      for (node_id f : freed) {
        s += g[f].name;
        s += " = ";
      }
      s += "None";
    }
    s += '\n';
  }
  const std::string inner = std::string(indent) + "    ";
  for (const graph::subgraph& sub : g.subgraphs()) {
    s += '\n';
    print_graph(s, *sub.body, sub.name, inner);
  }
}
#endif  // TYPEX_HEADER_DEFINITIONS
