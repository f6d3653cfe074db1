// typex/ir/control_flow.hpp — control flow in the graph: higher-order calls whose branches and
// bodies are subgraphs (torch.export's torch.ops.higher_order.cond / while_loop / map_impl / scan).
//
// A higher-order call names its subgraphs by string arguments (ir::graph::add_subgraph) and takes
// its tensors as lists; it produces several values. Every subgraph is a complete graph (its own
// placeholders, calls and output) whose symbols are the enclosing program's. The arguments, by
// position:
//   cond        (pred, true_graph, false_graph, operands)            -> the branch's outputs
//               pred: a bool tensor with one element; each branch takes the operands
//   while_loop  (cond_graph, body_graph, carried, additional, max_iterations)  -> the final carried
//               cond: (carried..., additional...) -> a one-element bool tensor; body: the same
//               inputs -> new carried values (each of its carried value's dtype and shape);
//               max_iterations: the declared bound (-1: none), past which running is an error
//   map_impl    (body_graph, xs, additional)                         -> ys stacked along dim 0
//               body: (x slices..., additional...) -> y slices; every xs has the same dim 0
//   scan        (combine_graph, init, xs, additional, reverse)      -> (final carry..., ys stacked)
//               combine: (carry..., x slices..., additional...) -> (new carry..., y slices...);
//               reverse: the slices are taken from the last to the first (ys keep xs's order)
// `additional` are the values the subgraph reads from outside (parameters, captured tensors):
// tracing lifts them into the call, so that the subgraph is closed.
#pragma once

#include <typex/core/error.hpp>
#include <typex/ir/graph.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace typex::ir {

// The higher-order ops (identity only: their arguments are checked by verify_control_flow, their
// derivatives written by passes::differentiate, their execution by kit::control_flow_engine).
struct cond_op {
  static constexpr std::string_view target = "higher_order.cond";
  static constexpr bool differentiable = true;
};
struct while_loop_op {
  static constexpr std::string_view target = "higher_order.while_loop";
  static constexpr bool differentiable = true;
};
struct map_op {
  static constexpr std::string_view target = "higher_order.map_impl";
  static constexpr bool differentiable = true;
};
struct scan_op {
  static constexpr std::string_view target = "higher_order.scan";
  static constexpr bool differentiable = true;
};

enum class control_kind : unsigned char { none, cond, while_loop, map, scan };

inline control_kind control_kind_of(op_id id) noexcept {
  if (id == op_id_of<cond_op>) return control_kind::cond;
  if (id == op_id_of<while_loop_op>) return control_kind::while_loop;
  if (id == op_id_of<map_op>) return control_kind::map;
  if (id == op_id_of<scan_op>) return control_kind::scan;
  return control_kind::none;
}
inline bool is_control_flow(const node& n) noexcept {
  return n.op == node_op::call_function && control_kind_of(n.target) != control_kind::none;
}
// Whether the graph has a higher-order call (at its top level).
inline bool has_control_flow(const graph& g) noexcept {
  for (const node& n : g.nodes())
    if (is_control_flow(n)) return true;
  return false;
}
// The op of a kind of higher-order call (the null id for none).
inline op_id control_op(control_kind k) noexcept {
  switch (k) {
    case control_kind::cond: return op_id_of<cond_op>;
    case control_kind::while_loop: return op_id_of<while_loop_op>;
    case control_kind::map: return op_id_of<map_op>;
    case control_kind::scan: return op_id_of<scan_op>;
    case control_kind::none: break;
  }
  return op_id{};
}
// The op that looks a higher-order target up by name ("higher_order.cond"), or the null id.
inline op_id find_control_flow_op(std::string_view name) noexcept {
  for (op_id id : {op_id_of<cond_op>, op_id_of<while_loop_op>, op_id_of<map_op>, op_id_of<scan_op>})
    if (id.name() == name) return id;
  return op_id{};
}

// A higher-order call's parts, read off its arguments (a malformed call: a graph_error naming it).
struct control_call {
  control_kind kind = control_kind::none;
  std::optional<value_ref> pred;           // cond
  std::vector<std::string> graphs;         // cond: true, false; while_loop: cond, body; map: body; scan: combine
  std::vector<value_ref> carried;          // cond: operands; while_loop: carried; scan: init
  std::vector<value_ref> xs;               // map, scan
  std::vector<value_ref> additional;       // while_loop, map, scan
  std::int64_t max_iterations = -1;        // while_loop
  bool reverse = false;                    // scan
};
TYPEX_API control_call read_control_call(const node& n);
// The arguments of a higher-order call with these parts (the inverse of read_control_call).
TYPEX_API std::vector<argument> control_call_arguments(const control_call& c);

// The node's (and each subgraph's, recursively) structure: the subgraphs exist, take what the call
// passes and return what it records. `verify_subgraph` checks one subgraph by the caller's rules.
template <class VerifySubgraph>
void verify_control_flow(const graph& g, const node& n, VerifySubgraph&& verify_subgraph);
TYPEX_API void check_control_flow(const graph& g, const node& n);  // (the structure, without the subgraphs' own checks)

// A subgraph's placeholders' metadata and its outputs' metadata; the metadata of values of g.
TYPEX_API std::vector<tensor_meta> input_metas(const graph& g);
TYPEX_API std::vector<tensor_meta> value_metas(const graph& g, const std::vector<value_ref>& vs);
TYPEX_API std::vector<tensor_meta> output_metas(const graph& g);

}  // namespace typex::ir

template <class VerifySubgraph>
void typex::ir::verify_control_flow(const graph& g, const node& n, VerifySubgraph&& verify_subgraph) {
  check_control_flow(g, n);
  for (const std::string& name : read_control_call(n).graphs) verify_subgraph(g.subgraph_at(name));
}

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
namespace typex::ir::detail {
[[noreturn]] inline void bad_control_call(const node& n, std::string_view what) {
  typex::detail::raise<graph_error>([&](auto& w) {
    w.put("typex::ir::verify: node '"); w.put(n.name); w.put("' ("); w.put(n.target.name()); w.put("): "); w.put(what);
  });
}
inline const std::vector<value_ref>& list_at(const node& n, std::size_t k) {
  const auto* v = k < n.args.size() ? std::get_if<std::vector<value_ref>>(&n.args[k]) : nullptr;
  if (v == nullptr) bad_control_call(n, "argument " + std::to_string(k) + " must be a list of tensors");
  return *v;
}
inline const std::string& name_at(const node& n, std::size_t k) {
  const auto* v = k < n.args.size() ? std::get_if<std::string>(&n.args[k]) : nullptr;
  if (v == nullptr) bad_control_call(n, "argument " + std::to_string(k) + " must name a subgraph");
  return *v;
}
inline std::string metas_text(std::span<const tensor_meta> ms) {
  std::string s = "(";
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (i) s += ", ";
    s += ms[i].to_string();
  }
  return s + ")";
}
inline bool one_element_bool(const tensor_meta& m) {
  if (m.scalar_type != dtype::b8) return false;
  for (const sym_expr& e : m.shape)
    if (!(e.is_constant() && *e.value() == 1)) return false;
  return true;
}
}  // namespace typex::ir::detail

TYPEX_API auto typex::ir::read_control_call(const node& n) -> control_call {
  control_call c;
  c.kind = control_kind_of(n.target);
  const auto arity = [&](std::size_t k) {
    if (n.args.size() != k) detail::bad_control_call(n, "takes " + std::to_string(k) + " arguments, the node has " + std::to_string(n.args.size()));
  };
  switch (c.kind) {
    case control_kind::cond: {
      arity(4);
      const auto* p = std::get_if<value_ref>(&n.args[0]);
      if (p == nullptr) detail::bad_control_call(n, "argument 0 (the predicate) must be a tensor");
      c.pred = *p;
      c.graphs = {detail::name_at(n, 1), detail::name_at(n, 2)};
      c.carried = detail::list_at(n, 3);
      break;
    }
    case control_kind::while_loop: {
      arity(5);
      c.graphs = {detail::name_at(n, 0), detail::name_at(n, 1)};
      c.carried = detail::list_at(n, 2);
      c.additional = detail::list_at(n, 3);
      const auto* m = std::get_if<std::int64_t>(&n.args[4]);
      if (m == nullptr || *m < -1) detail::bad_control_call(n, "argument 4 (max_iterations) must be an int, -1 for none");
      c.max_iterations = *m;
      break;
    }
    case control_kind::map:
      arity(3);
      c.graphs = {detail::name_at(n, 0)};
      c.xs = detail::list_at(n, 1);
      c.additional = detail::list_at(n, 2);
      break;
    case control_kind::scan: {
      arity(5);
      c.graphs = {detail::name_at(n, 0)};
      c.carried = detail::list_at(n, 1);
      c.xs = detail::list_at(n, 2);
      c.additional = detail::list_at(n, 3);
      const auto* r = std::get_if<bool>(&n.args[4]);
      if (r == nullptr) detail::bad_control_call(n, "argument 4 (reverse) must be a bool");
      c.reverse = *r;
      break;
    }
    case control_kind::none: detail::bad_control_call(n, "not a higher-order call");
  }
  return c;
}

TYPEX_API auto typex::ir::control_call_arguments(const control_call& c) -> std::vector<argument> {
  switch (c.kind) {
    case control_kind::cond: return {*c.pred, c.graphs.at(0), c.graphs.at(1), c.carried};
    case control_kind::while_loop: return {c.graphs.at(0), c.graphs.at(1), c.carried, c.additional, c.max_iterations};
    case control_kind::map: return {c.graphs.at(0), c.xs, c.additional};
    case control_kind::scan: return {c.graphs.at(0), c.carried, c.xs, c.additional, c.reverse};
    case control_kind::none: break;
  }
  typex::detail::raise_message<graph_error>("typex::ir::control_call_arguments: not a higher-order call");
}

TYPEX_API auto typex::ir::input_metas(const graph& g) -> std::vector<tensor_meta> {
  std::vector<tensor_meta> out;
  for (const node& n : g.nodes())
    if (n.op == node_op::placeholder) out.push_back(n.vals.front());
  return out;
}

TYPEX_API auto typex::ir::value_metas(const graph& g, const std::vector<value_ref>& vs) -> std::vector<tensor_meta> {
  std::vector<tensor_meta> out;
  for (value_ref v : vs) out.push_back(g.meta(v));
  return out;
}

TYPEX_API auto typex::ir::output_metas(const graph& g) -> std::vector<tensor_meta> {
  std::vector<tensor_meta> out;
  for (const argument& a : g.output().args) out.push_back(g.meta(std::get<value_ref>(a)));
  return out;
}

TYPEX_API void typex::ir::check_control_flow(const graph& g, const node& n) {
  const control_call c = read_control_call(n);
  const auto metas = [&](const std::vector<value_ref>& vs) {
    std::vector<tensor_meta> out;
    for (value_ref v : vs) {
      if (v.node >= g.size() || v.index >= g[v.node].vals.size()) detail::bad_control_call(n, "reads a value that does not exist");
      out.push_back(g.meta(v));
    }
    return out;
  };
  const auto sub = [&](const std::string& name) -> const graph& {
    const graph* s = g.find_subgraph(name);
    if (s == nullptr) detail::bad_control_call(n, "names the subgraph '" + name + "', which the graph does not have");
    if (!s->has_output()) detail::bad_control_call(n, "the subgraph '" + name + "' has no output node");
    return *s;
  };
  const auto same = [&](const std::string& what, const std::string& name, const std::vector<tensor_meta>& expected,
                        const std::vector<tensor_meta>& got) {
    if (expected == got) return;
    detail::bad_control_call(n, "the subgraph '" + name + "' " + what + " " + detail::metas_text(got) + " where the call gives " +
                                    detail::metas_text(expected));
  };
  const auto sliced = [&](const std::vector<tensor_meta>& ms) {
    std::vector<tensor_meta> out;
    for (const tensor_meta& m : ms) {
      if (m.rank() == 0) detail::bad_control_call(n, "scans a rank-0 tensor (xs must have a leading dim)");
      out.push_back({m.scalar_type, std::vector<sym_expr>(m.shape.begin() + 1, m.shape.end())});
    }
    return out;
  };
  const std::vector<tensor_meta> carried = metas(c.carried), xs = metas(c.xs), additional = metas(c.additional);
  std::vector<tensor_meta> inputs = carried;
  switch (c.kind) {
    case control_kind::cond: {
      const std::vector<tensor_meta> p = metas({*c.pred});
      if (!detail::one_element_bool(p.front()))
        detail::bad_control_call(n, "the predicate is " + p.front().to_string() + "; a cond takes a bool tensor with one element");
      for (const std::string& b : c.graphs) {
        const graph& s = sub(b);
        same("takes", b, carried, input_metas(s));
        same("returns", b, n.vals, output_metas(s));
      }
      return;
    }
    case control_kind::while_loop: {
      inputs.insert(inputs.end(), additional.begin(), additional.end());
      const graph& cg = sub(c.graphs[0]);
      const graph& bg = sub(c.graphs[1]);
      same("takes", c.graphs[0], inputs, input_metas(cg));
      same("takes", c.graphs[1], inputs, input_metas(bg));
      const std::vector<tensor_meta> co = output_metas(cg);
      if (co.size() != 1 || !detail::one_element_bool(co.front()))
        detail::bad_control_call(n, "the condition '" + c.graphs[0] + "' returns " + detail::metas_text(co) + "; it must return one bool with one element");
      same("returns", c.graphs[1], carried, output_metas(bg));
      if (n.vals != carried) detail::bad_control_call(n, "records " + detail::metas_text(n.vals) + " where the loop carries " + detail::metas_text(carried));
      return;
    }
    case control_kind::map:
    case control_kind::scan: {
      if (c.xs.empty()) detail::bad_control_call(n, "has no xs to iterate over");
      for (const tensor_meta& m : xs)
        if (m.rank() == 0 || !(m.shape.front() == xs.front().shape.front()))
          detail::bad_control_call(n, "its xs " + detail::metas_text(xs) + " do not share a leading dim");
      const std::vector<tensor_meta> slices = sliced(xs);
      inputs.insert(inputs.end(), slices.begin(), slices.end());
      inputs.insert(inputs.end(), additional.begin(), additional.end());
      const graph& s = sub(c.graphs[0]);
      same("takes", c.graphs[0], inputs, input_metas(s));
      const std::vector<tensor_meta> outs = output_metas(s);
      if (outs.size() < carried.size()) detail::bad_control_call(n, "the subgraph '" + c.graphs[0] + "' returns fewer values than the carry");
      std::vector<tensor_meta> expected;
      for (std::size_t k = 0; k < outs.size(); ++k) {
        if (k < carried.size()) {
          if (!(outs[k] == carried[k]))
            detail::bad_control_call(n, "the subgraph '" + c.graphs[0] + "' returns the carry as " + outs[k].to_string() + " where it is " + carried[k].to_string());
          expected.push_back(outs[k]);
        } else {
          tensor_meta m = outs[k];
          m.shape.insert(m.shape.begin(), xs.front().shape.front());
          expected.push_back(std::move(m));
        }
      }
      if (n.vals != expected) detail::bad_control_call(n, "records " + detail::metas_text(n.vals) + " where its subgraph gives " + detail::metas_text(expected));
      return;
    }
    case control_kind::none: break;
  }
}
#endif  // TYPEX_HEADER_DEFINITIONS
