// typex/passes/detail/replace_pattern_impl.hpp — the definitions of passes/replace_pattern.hpp
// (compiled once in typex::runtime, or inline in header-only builds). Included by
// replace_pattern.hpp only.
#pragma once

#include <typex/core/error.hpp>
#include <typex/passes/argument_hash.hpp>
#include <typex/passes/detail/rewrite.hpp>
#include <typex/passes/replace_pattern.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace typex::passes::detail {

// The pattern, checked and indexed once.
struct compiled_pattern {
  const ir::graph* p = nullptr;
  ir::node_id anchor = 0;                       // the last call
  std::vector<ir::node_id> placeholders;        // in order
  std::vector<std::size_t> placeholder_index;   // per pattern node: its position among the placeholders
  std::vector<ir::value_ref> outputs;           // the values the output names
  std::vector<bool> is_output;                  // per pattern node: every value of it is an output (readers may follow the anchor)
  std::vector<std::vector<bool>> any;           // per pattern node, per argument position: matches any non-tensor
  std::size_t calls = 0;
};

[[noreturn]] inline void bad_pattern(std::string_view why, std::string_view node = {}) {
  typex::detail::raise<argument_error>([&](auto& w) {
    w.put("typex::passes::replace_pattern: ");
    if (!node.empty()) { w.put("pattern node '"); w.put(node); w.put("': "); }
    w.put(why);
  });
}

inline compiled_pattern compile_pattern(const ir::graph& p, const replace_options& options) {
  compiled_pattern c;
  c.p = &p;
  if (!p.has_output()) bad_pattern("the pattern has no output node (set_output names the values a match produces)");
  const std::size_t n = p.size();
  c.placeholder_index.assign(n, static_cast<std::size_t>(-1));
  c.is_output.assign(n, false);
  c.any.resize(n);
  bool have_call = false;
  for (ir::node_id i = 0; i < n; ++i) {
    const ir::node& nd = p[i];
    if (nd.op == ir::node_op::placeholder) {
      c.placeholder_index[i] = c.placeholders.size();
      c.placeholders.push_back(i);
    } else if (nd.op == ir::node_op::call_function) {
      c.anchor = i;
      have_call = true;
      ++c.calls;
      c.any[i].assign(nd.args.size(), false);
    }
  }
  if (!have_call) bad_pattern("the pattern has no call to match");
  // every call leads to the anchor, every placeholder is read
  std::vector<bool> reach(n, false);
  reach[c.anchor] = true;
  for (ir::node_id k = c.anchor + 1; k-- > 0;) {
    if (!reach[k]) continue;
    ir::graph::for_each_ref(p[k], [&](ir::value_ref r) { reach[r.node] = true; });
  }
  for (ir::node_id i = 0; i < n; ++i) {
    const ir::node& nd = p[i];
    if (nd.op == ir::node_op::output || reach[i]) continue;
    bad_pattern(nd.op == ir::node_op::placeholder ? "a wildcard that no call of the pattern reads"
                                                  : "a call that does not lead to the pattern's last call (the anchor, where matching starts)",
                nd.name);
  }
  std::vector<std::size_t> covered(n, 0);
  for (const ir::argument& a : p.output().args) {
    const auto* r = std::get_if<ir::value_ref>(&a);
    if (r == nullptr || p[r->node].op != ir::node_op::call_function)
      bad_pattern("the pattern's output must name values of its calls (a wildcard cannot be an output)");
    if (std::find(c.outputs.begin(), c.outputs.end(), *r) == c.outputs.end()) ++covered[r->node];
    c.outputs.push_back(*r);
  }
  for (ir::node_id i = 0; i < n; ++i) c.is_output[i] = covered[i] > 0 && covered[i] == p[i].vals.size();
  for (const pattern_argument& pa : options.any_arguments) {
    ir::node_id found = static_cast<ir::node_id>(-1);
    for (ir::node_id i = 0; i < n; ++i)
      if (p[i].op == ir::node_op::call_function && p[i].name == pa.node) found = i;
    if (found == static_cast<ir::node_id>(-1)) bad_pattern("replace_options::any_arguments names no call of the pattern", pa.node);
    if (pa.position >= p[found].args.size()) bad_pattern("replace_options::any_arguments names an argument position the call does not have", pa.node);
    c.any[found][pa.position] = true;
  }
  return c;
}

// The search: one attempt per graph node of the anchor's op, each O(pattern size).
class pattern_matcher {
 public:
  pattern_matcher(const ir::graph& g, const compiled_pattern& c, const replace_options& options)
      : g_(g), c_(c), p_(*c.p), options_(options), users_(g.users()), stamp_(g.size(), 0), pnode_(g.size(), 0),
        claimed_(g.size(), false), bound_(p_.size(), pattern_match::npos), input_(p_.size(), ir::value_ref{0, 0}),
        input_bound_(p_.size(), false), internal_(p_.size(), 0) {}

  std::vector<pattern_match> run() {
    std::vector<pattern_match> found;
    const op_id anchor_op = p_[c_.anchor].target;
    for (ir::node_id gi = 0; gi < g_.size(); ++gi) {
      if (g_[gi].op != ir::node_op::call_function || g_[gi].target != anchor_op || claimed_[gi]) continue;
      if (!attempt(gi)) continue;
      pattern_match m;
      m.graph = &g_;
      m.pattern_names.reserve(p_.size());
      for (const ir::node& pn : p_.nodes()) m.pattern_names.push_back(pn.name);
      m.nodes = bound_;
      m.anchor = gi;
      for (ir::node_id ph : c_.placeholders) m.inputs.push_back(input_[ph]);
      if (options_.filter && !options_.filter(m)) continue;
      for (ir::node_id pn = 0; pn < p_.size(); ++pn)
        if (bound_[pn] != pattern_match::npos) claimed_[bound_[pn]] = true;
      found.push_back(std::move(m));
    }
    return found;
  }

 private:
  bool matched(ir::node_id gi) const noexcept { return stamp_[gi] == attempt_; }

  bool attempt(ir::node_id gi) {
    ++attempt_;
    std::fill(bound_.begin(), bound_.end(), pattern_match::npos);
    std::fill(input_bound_.begin(), input_bound_.end(), false);
    std::fill(internal_.begin(), internal_.end(), 0);
    if (!match_node(c_.anchor, gi)) return false;
    // no wildcard matched a value of the match itself
    for (ir::node_id ph : c_.placeholders)
      if (!input_bound_[ph] || matched(input_[ph].node)) return false;
    // readers inside the match, per matched node (each reader once)
    for (ir::node_id pn = 0; pn < p_.size(); ++pn) {
      const ir::node_id m = bound_[pn];
      if (m == pattern_match::npos) continue;
      reads_.clear();
      ir::graph::for_each_ref(g_[m], [&](ir::value_ref r) {
        if (matched(r.node) && std::find(reads_.begin(), reads_.end(), r.node) == reads_.end()) reads_.push_back(r.node);
      });
      for (ir::node_id r : reads_) ++internal_[pnode_[r]];
    }
    // values leave the match only through the pattern's outputs, read after the anchor
    for (ir::node_id pn = 0; pn < p_.size(); ++pn) {
      const ir::node_id m = bound_[pn];
      if (m == pattern_match::npos) continue;
      if (!c_.is_output[pn]) {
        if (internal_[pn] != users_[m].size()) return false;
        continue;
      }
      for (ir::node_id u : users_[m]) {
        if (u > gi) break;
        if (!matched(u)) return false;
      }
    }
    return true;
  }

  bool match_value(ir::value_ref pv, ir::value_ref gv) {
    const ir::node& pn = p_[pv.node];
    if (pn.op == ir::node_op::placeholder) {
      if (input_bound_[pv.node]) return input_[pv.node] == gv;
      input_bound_[pv.node] = true;
      input_[pv.node] = gv;
      return true;
    }
    return pv.index == gv.index && match_node(pv.node, gv.node);
  }

  bool match_argument(ir::node_id pn, std::size_t k, const ir::argument& pa, const ir::argument& ga) {
    if (const auto* pr = std::get_if<ir::value_ref>(&pa)) {
      const auto* gr = std::get_if<ir::value_ref>(&ga);
      return gr != nullptr && match_value(*pr, *gr);
    }
    if (const auto* pl = std::get_if<std::vector<ir::value_ref>>(&pa)) {
      const auto* gl = std::get_if<std::vector<ir::value_ref>>(&ga);
      if (gl == nullptr || gl->size() != pl->size()) return false;
      for (std::size_t i = 0; i < pl->size(); ++i)
        if (!match_value((*pl)[i], (*gl)[i])) return false;
      return true;
    }
    const bool any = k < c_.any[pn].size() && c_.any[pn][k];
    if (any) return !std::holds_alternative<ir::value_ref>(ga) && !std::holds_alternative<std::vector<ir::value_ref>>(ga);
    return same_argument(pa, ga);
  }

  bool match_node(ir::node_id pn, ir::node_id gi) {
    if (bound_[pn] != pattern_match::npos) return bound_[pn] == gi;
    if (matched(gi) || claimed_[gi]) return false;  // (one graph node per pattern node; matches do not overlap)
    const ir::node& p = p_[pn];
    const ir::node& n = g_[gi];
    if (n.op != ir::node_op::call_function || n.target != p.target || n.args.size() != p.args.size() ||
        n.kwargs.size() != p.kwargs.size() || n.vals.size() != p.vals.size())
      return false;
    bound_[pn] = gi;
    stamp_[gi] = attempt_;
    pnode_[gi] = pn;
    for (std::size_t k = 0; k < p.args.size(); ++k)
      if (!match_argument(pn, k, p.args[k], n.args[k])) return false;
    for (std::size_t k = 0; k < p.kwargs.size(); ++k)
      if (p.kwargs[k].first != n.kwargs[k].first ||
          !match_argument(pn, static_cast<std::size_t>(-1), p.kwargs[k].second, n.kwargs[k].second))
        return false;
    return true;
  }

  const ir::graph& g_;
  const compiled_pattern& c_;
  const ir::graph& p_;
  const replace_options& options_;
  std::vector<std::vector<ir::node_id>> users_;
  std::uint32_t attempt_ = 0;
  std::vector<std::uint32_t> stamp_;   // per graph node: the attempt that matched it
  std::vector<ir::node_id> pnode_;     // per graph node: the pattern node it matched (valid with its stamp)
  std::vector<bool> claimed_;          // per graph node: in a match taken
  std::vector<ir::node_id> bound_;     // per pattern call: the graph node
  std::vector<ir::value_ref> input_;   // per pattern placeholder: the value
  std::vector<bool> input_bound_;
  std::vector<std::size_t> internal_;  // per pattern call: its readers inside the match
  std::vector<ir::node_id> reads_;
};

}  // namespace typex::passes::detail

TYPEX_API auto typex::passes::pattern_match::node(std::string_view pattern_node) const -> const ir::node& {
  if (graph != nullptr)
    for (std::size_t i = 0; i < pattern_names.size() && i < nodes.size(); ++i)
      if (pattern_names[i] == pattern_node && nodes[i] != npos) return (*graph)[nodes[i]];
  typex::detail::raise<argument_error>([&](auto& w) {
    w.put("typex::passes::pattern_match::node: the pattern has no call named '"); w.put(pattern_node); w.put("'");
  });
}

TYPEX_API auto typex::passes::find_pattern(const ir::graph& g, const ir::graph& pattern, const replace_options& options)
    -> std::vector<pattern_match> {
  const detail::compiled_pattern c = detail::compile_pattern(pattern, options);
  detail::pattern_matcher matcher(g, c, options);
  return matcher.run();
}

TYPEX_API auto typex::passes::replace_pattern(ir::graph& g, const ir::graph& pattern, const replacement_fn& replacement,
                                              const replace_options& options) -> std::size_t {
  if (!replacement) detail::bad_pattern("no replacement function");
  const detail::compiled_pattern c = detail::compile_pattern(pattern, options);
  std::vector<pattern_match> matches;
  {
    detail::pattern_matcher matcher(g, c, options);
    matches = matcher.run();
  }
  if (matches.empty()) return 0;
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> at_anchor(g.size(), none);
  std::vector<bool> dropped(g.size(), false);
  for (std::size_t j = 0; j < matches.size(); ++j) {
    at_anchor[matches[j].anchor] = j;
    for (ir::node_id m : matches[j].nodes)
      if (m != pattern_match::npos) dropped[m] = true;
  }

  detail::graph_rewriter rw(g);
  for (ir::node_id i = 0; i < g.size(); ++i) {
    if (at_anchor[i] == none) {
      if (!dropped[i]) rw.copy(i);
      continue;
    }
    const pattern_match& m = matches[at_anchor[i]];
    const ir::node& anchor = g[i];
    // the callback's graph: the matched inputs as its placeholders
    ir::graph scratch;
    std::vector<ir::value_ref> inputs;
    for (std::size_t k = 0; k < m.inputs.size(); ++k) {
      const ir::value_ref v = rw.map(m.inputs[k]);
      inputs.push_back(ir::value_ref{scratch.add_placeholder(pattern[c.placeholders[k]].name, rw.target().meta(v)), 0});
    }
    const std::size_t n_inputs = scratch.size();
    graph_builder b(scratch);
    b.set_origin(anchor.nn_module_stack, anchor.stack_trace);
    const std::vector<ir::value_ref> outs = replacement(b, inputs, m);
    if (scratch.has_output()) detail::bad_pattern("the replacement set an output node on its graph; return the values instead");
    for (std::size_t k = n_inputs; k < scratch.size(); ++k)
      if (scratch[static_cast<ir::node_id>(k)].op == ir::node_op::placeholder)
        detail::bad_pattern("the replacement added a placeholder; it may read the matched inputs only");
    if (outs.size() != c.outputs.size()) {
      typex::detail::raise<argument_error>([&](auto& w) {
        w.put("typex::passes::replace_pattern: the replacement returned "); w.put_int(static_cast<long long>(outs.size()));
        w.put(" values for a pattern with "); w.put_int(static_cast<long long>(c.outputs.size())); w.put(" outputs");
      });
    }
    // each replacement value has the metadata of the value it replaces
    std::vector<ir::value_ref> replaced(outs.size());
    for (std::size_t k = 0; k < outs.size(); ++k) {
      replaced[k] = ir::value_ref{m.nodes[c.outputs[k].node], c.outputs[k].index};
      if (outs[k].node >= scratch.size() || outs[k].index >= scratch[outs[k].node].vals.size())
        detail::bad_pattern("the replacement returned a value that is not one of its graph's");
      const ir::tensor_meta& want = g.meta(replaced[k]);
      const ir::tensor_meta& got = scratch.meta(outs[k]);
      if (!(want == got)) {
        typex::detail::raise<argument_error>([&](auto& w) {
          w.put("typex::passes::replace_pattern: the replacement of '"); w.put(g[replaced[k].node].name); w.put("' is ");
          w.put(got.to_string()); w.put(", the value it replaces "); w.put(want.to_string());
          w.put(" (a replacement keeps the metadata the graph's later nodes were built on)");
        });
      }
    }
    // names: a new node that gives pattern output k takes the name of the node it replaces
    std::vector<std::string> name_of(scratch.size());
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const ir::node_id s = outs[k].node;
      if (s < n_inputs || !name_of[s].empty()) continue;
      const std::string& old = g[replaced[k].node].name;
      bool taken = false;
      for (const std::string& other : name_of) taken = taken || other == old;
      if (!taken) name_of[s] = old;
    }
    // the new nodes, written here
    std::vector<ir::node_id> placed(scratch.size(), 0);
    const auto place = [&](ir::value_ref r) {
      return r.node < n_inputs ? rw.map(m.inputs[r.node]) : ir::value_ref{placed[r.node], r.index};
    };
    const auto place_argument = [&](const ir::argument& a) -> ir::argument {
      if (const auto* r = std::get_if<ir::value_ref>(&a)) return place(*r);
      if (const auto* rs = std::get_if<std::vector<ir::value_ref>>(&a)) {
        std::vector<ir::value_ref> v;
        for (const ir::value_ref& r : *rs) v.push_back(place(r));
        return v;
      }
      return a;
    };
    for (ir::node_id s = static_cast<ir::node_id>(n_inputs); s < scratch.size(); ++s) {
      const ir::node& sn = scratch[s];
      ir::call call{.target = sn.target, .vals = sn.vals, .name_hint = sn.name,
                    .nn_module_stack = sn.nn_module_stack.empty() ? anchor.nn_module_stack : sn.nn_module_stack,
                    .stack_trace = sn.stack_trace.empty() ? anchor.stack_trace : sn.stack_trace};
      for (const ir::argument& a : sn.args) call.args.push_back(place_argument(a));
      for (const auto& [key, a] : sn.kwargs) call.kwargs.emplace_back(key, place_argument(a));
      placed[s] = name_of[s].empty() ? rw.add_fresh(std::move(call)) : rw.add_named(std::move(call), name_of[s]);
    }
    for (std::size_t k = 0; k < outs.size(); ++k) rw.bind_value(replaced[k], place(outs[k]));
  }
  g = rw.finish();
  return matches.size();
}

TYPEX_API auto typex::passes::replace_pattern_pass(std::string name, ir::graph pattern, replacement_fn replacement,
                                                   replace_options options) -> pass {
  auto shared = std::make_shared<const std::tuple<ir::graph, replacement_fn, replace_options>>(std::move(pattern), std::move(replacement),
                                                                                                std::move(options));
  return pass{.name = std::move(name),
              .run = [shared](ir::graph& g) {
                return replace_pattern(g, std::get<0>(*shared), std::get<1>(*shared), std::get<2>(*shared)) > 0;
              },
              .preserves = {.signature = true, .output_names = false, .metadata = true}};
}
