// typex/ir/dot.hpp — a graph as a Graphviz DOT picture (`dot -Tsvg program.dot -o program.svg`).
//
//   digraph typex {
//     n3 [label="x\nf32[s0, 784]", shape=ellipse, ...];
//     subgraph cluster_1 {
//       label="fc1 (Linear)";
//       n4 [label="linear\nf32[s0, 512]\nlinear", ...];
//     }
//     n3 -> n4;
//     ...
//   }
//
// A DOT node for each graph node: placeholders as ellipses, the output as an octagon, calls as boxes
// with the op, the dtype and shape of what they produce and the node's name. An edge for each value
// read (labelled [i] where the producer has several outputs). A cluster for each module of the
// nn_module_stack, nested as the modules nest, labelled with its path and type. collapse_repeated
// draws a run of identical sibling modules (a transformer's layers.0 .. layers.11) once. Each
// subgraph of control flow (true_graph_0, a loop's body) is drawn inside a dashed cluster of its
// name, with a dotted edge from the higher-order call that runs it. Labels are
// plain quoted strings: quotes, backslashes and line breaks are escaped and invalid UTF-8 replaced;
// no record or HTML labels are used, so <, >, {, } and | are written as they are.
#pragma once

#include <typex/core/error.hpp>
#include <typex/ir/control_flow.hpp>
#include <typex/ir/graph.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace typex::ir {

struct dot_options {
  // Draws each run of consecutive sibling modules of one type whose nodes are the same op sequence
  // (same ops, dtypes and shapes, same wiring inside, nothing between them) once, as one cluster
  // "layers.0 .. layers.11 (x12, TransformerEncoderLayer)"; the edges into and out of the run are
  // kept (drawn to and from the first member), the edges from one member to the next are not, and a
  // placeholder only the hidden members read (their parameters) is left out.
  bool collapse_repeated = false;
  bool show_stack_trace = false;  // a line with the node's source location ("model.cpp:12 in forward")
  bool full_target = false;       // "aten.linear.default" rather than "linear"
  std::string rankdir = "TB";     // TB (top to bottom), LR, BT or RL
  std::size_t max_label_width = 60;  // bytes per label line, longer lines cut and ended with "..."; 0: no limit
  std::string name = "typex";        // the digraph's name
};

// One key of the legend: a node fill colour (or, edge = true, an edge colour) and what it means.
struct dot_legend_entry {
  std::string color;
  std::string text;
  bool edge = false;
};

// What a caller adds to the picture (typex/export/dot.hpp: a program's graph signature). Colours
// are Graphviz colours ("#bbf7d0", "lightblue").
struct dot_decorations {
  std::vector<std::string> node_fill;     // by node id: the node's fill colour; "" keeps the default
  std::vector<std::string> node_note;     // by node id: a line added to its label; "" adds none
  std::vector<std::string> output_color;  // by position of the output node's arguments: the edge's colour
  std::vector<std::string> output_label;  //   and a label on it ("USER_OUTPUT")
  std::vector<dot_legend_entry> legend;   // drawn as a cluster "legend" when not empty
};

namespace detail {
// Appends `text` as the inside of a DOT quoted string: `"` and `\` escaped, a line break as \n,
// other control characters as '?', and bytes that are not UTF-8 as '?'.
TYPEX_API void dot_escape(std::string& out, std::string_view text);

// The type's own name, without namespaces and template arguments:
// "typex::nn::TransformerEncoderLayer<32, 4, 64>" -> "TransformerEncoderLayer".
TYPEX_API std::string_view short_type_name(std::string_view type) noexcept;
}  // namespace detail

// The graph as a DOT digraph. Linear in the graph's size (and the depth of its module stacks).
// Throws argument_error for a rankdir other than TB, LR, BT and RL.
TYPEX_API std::string to_dot(const graph& g, const dot_options& options = {});
TYPEX_API std::string to_dot(const graph& g, const dot_options& options, const dot_decorations& decorations);

}  // namespace typex::ir

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API void typex::ir::detail::dot_escape(std::string& out, std::string_view text) {
  const auto cont = [&](std::size_t i, unsigned char lo, unsigned char hi) {
    if (i >= text.size()) return false;
    const auto c = static_cast<unsigned char>(text[i]);
    return c >= lo && c <= hi;
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += ' ';
      } else if (c == '\r') {
        // (dropped: a CRLF line break is one break)
      } else if (c < 0x20 || c == 0x7f) {
        out += '?';
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // a well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF)
    std::size_t len = 0;
    if (c >= 0xc2 && c <= 0xdf) len = cont(i + 1, 0x80, 0xbf) ? 2 : 0;
    else if (c == 0xe0) len = cont(i + 1, 0xa0, 0xbf) && cont(i + 2, 0x80, 0xbf) ? 3 : 0;
    else if (c == 0xed) len = cont(i + 1, 0x80, 0x9f) && cont(i + 2, 0x80, 0xbf) ? 3 : 0;
    else if (c >= 0xe1 && c <= 0xef) len = cont(i + 1, 0x80, 0xbf) && cont(i + 2, 0x80, 0xbf) ? 3 : 0;
    else if (c == 0xf0) len = cont(i + 1, 0x90, 0xbf) && cont(i + 2, 0x80, 0xbf) && cont(i + 3, 0x80, 0xbf) ? 4 : 0;
    else if (c >= 0xf1 && c <= 0xf3) len = cont(i + 1, 0x80, 0xbf) && cont(i + 2, 0x80, 0xbf) && cont(i + 3, 0x80, 0xbf) ? 4 : 0;
    else if (c == 0xf4) len = cont(i + 1, 0x80, 0x8f) && cont(i + 2, 0x80, 0xbf) && cont(i + 3, 0x80, 0xbf) ? 4 : 0;
    if (len == 0) {
      out += '?';
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
}

TYPEX_API auto typex::ir::detail::short_type_name(std::string_view type) noexcept -> std::string_view {
  // the last "::"-separated part outside template arguments and parentheses, up to its own '<'
  int depth = 0;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    if (c == '<' || c == '(') ++depth;
    else if ((c == '>' || c == ')') && depth > 0) --depth;
    else if (c == ':' && depth == 0 && i + 1 < type.size() && type[i + 1] == ':') {
      begin = i + 2;
      ++i;
    }
  }
  std::string_view part = type.substr(begin);
  part = part.substr(0, part.find('<'));
  while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
  return part.empty() ? type : part;
}

TYPEX_API auto typex::ir::to_dot(const graph& g, const dot_options& options) -> std::string {
  return to_dot(g, options, dot_decorations{});
}

TYPEX_API auto typex::ir::to_dot(const graph& g, const dot_options& options, const dot_decorations& deco) -> std::string {
  if (options.rankdir != "TB" && options.rankdir != "LR" && options.rankdir != "BT" && options.rankdir != "RL") {
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put("typex::ir::to_dot: rankdir '"); w.put(options.rankdir); w.put("' is not one of TB, LR, BT, RL");
    });
  }
  const std::vector<node>& nodes = g.nodes();
  const auto n = static_cast<node_id>(nodes.size());
  constexpr node_id none = std::numeric_limits<node_id>::max();

  // ---- the module tree: a cluster per module frame, children in order of first appearance ----
  struct cluster {
    const module_frame* frame = nullptr;  // (null for the root: the nodes outside every module)
    std::uint32_t parent = 0;
    std::uint32_t depth = 0;
    std::vector<std::uint32_t> children = {};
    std::vector<node_id> direct = {};  // the nodes whose innermost module it is
    node_id first = none;              // the subtree's nodes: first, last, how many
    node_id last = 0;
    std::size_t count = 0;
    std::int64_t run = -1;      // collapse_repeated: the run it is a member of, and which member
    std::uint32_t member = 0;
    std::uint32_t run_size = 1;  // (on a run's first member: how many members)
    const module_frame* run_last = nullptr;
    bool hidden = false;  // a member of a run after its first: not drawn
  };
  std::vector<cluster> clusters(1);
  std::vector<std::uint32_t> node_cluster(n, 0);
  {
    std::unordered_map<std::string, std::uint32_t> child_of;  // "parent\npath\ntype" -> cluster
    std::vector<std::uint32_t> chain;                         // the clusters of the previous node's frames
    const std::vector<module_frame>* prev = nullptr;
    std::string key;
    for (node_id i = 0; i < n; ++i) {
      const std::vector<module_frame>& st = nodes[i].nn_module_stack;
      std::size_t k = 0;
      if (prev != nullptr)
        while (k < st.size() && k < prev->size() && st[k] == (*prev)[k]) ++k;
      chain.resize(k);
      for (std::size_t d = k; d < st.size(); ++d) {
        const std::uint32_t parent = d == 0 ? 0 : chain[d - 1];
        key.clear();
        key += std::to_string(parent);
        key += '\n';
        key += st[d].path;
        key += '\n';
        key += st[d].type;
        const auto [it, inserted] = child_of.try_emplace(key, static_cast<std::uint32_t>(clusters.size()));
        if (inserted) {
          cluster c;
          c.frame = &st[d];
          c.parent = parent;
          c.depth = static_cast<std::uint32_t>(d + 1);
          clusters.push_back(std::move(c));
          clusters[parent].children.push_back(it->second);
        }
        chain.push_back(it->second);
      }
      node_cluster[i] = st.empty() ? 0 : chain.back();
      cluster& c = clusters[node_cluster[i]];
      c.direct.push_back(i);
      c.first = std::min(c.first, i);
      c.last = std::max(c.last, i);
      ++c.count;
      prev = &st;
    }
    for (std::size_t c = clusters.size() - 1; c > 0; --c) {  // (a parent is made before its children)
      cluster& p = clusters[clusters[c].parent];
      p.first = std::min(p.first, clusters[c].first);
      p.last = std::max(p.last, clusters[c].last);
      p.count += clusters[c].count;
    }
  }

  // ---- collapse_repeated: runs of identical siblings; step[i]: node i's counterpart in the run's
  // first member (i itself outside hidden members); rep[i]: where node i is drawn ----
  std::vector<node_id> rep(n);
  for (node_id i = 0; i < n; ++i) rep[i] = i;
  std::vector<node_id> step = rep;
  std::vector<bool> dropped(n, false);  // placeholders only hidden members read
  if (options.collapse_repeated) {
    const auto contiguous = [&](std::uint32_t c) {
      return clusters[c].count > 0 && clusters[c].last - clusters[c].first + 1 == clusters[c].count;
    };
    // the member's nodes in order: op, dtype and shape, modules below it (paths relative to its
    // own), and where each value read comes from (a node of the member, by offset, or outside)
    const auto signature = [&](std::uint32_t c) {
      const cluster& k = clusters[c];
      const std::string& base = k.frame->path;
      std::string s;
      for (node_id i = k.first; i <= k.last; ++i) {
        const node& nd = nodes[i];
        for (std::size_t d = k.depth; d < nd.nn_module_stack.size(); ++d) {
          std::string_view p = nd.nn_module_stack[d].path;
          if (p.starts_with(base)) p.remove_prefix(base.size());
          s += p;
          s += '\x1f';
          s += nd.nn_module_stack[d].type;
          s += '\x1e';
        }
        s += nd.op == node_op::call_function ? nd.target.name() : name(nd.op);
        for (const tensor_meta& m : nd.vals) {
          s += ' ';
          s += m.to_string();
        }
        s += '(';
        graph::for_each_ref(nd, [&](value_ref r) {
          if (r.node >= k.first && r.node <= k.last) s += std::to_string(r.node - k.first);
          else s += 'x';
          s += ':';
          s += std::to_string(r.index);
          s += ',';
        });
        s += ")\n";
      }
      return s;
    };
    std::int64_t runs = 0;
    std::vector<std::uint32_t> todo{0};
    while (!todo.empty()) {
      const std::uint32_t c = todo.back();
      todo.pop_back();
      const std::vector<std::uint32_t> ch = clusters[c].children;  // (a copy: the loop writes clusters)
      for (std::size_t a = 0; a < ch.size();) {
        std::size_t b = a + 1;
        if (contiguous(ch[a])) {
          std::string first_signature;
          while (b < ch.size()) {
            const cluster& x = clusters[ch[a]];
            const cluster& y = clusters[ch[b]];
            if (y.frame->type != x.frame->type || y.count != x.count || !contiguous(ch[b]) || y.first != clusters[ch[b - 1]].last + 1)
              break;
            if (first_signature.empty()) first_signature = signature(ch[a]);
            if (signature(ch[b]) != first_signature) break;
            ++b;
          }
        }
        if (b - a >= 2) {
          cluster& head = clusters[ch[a]];
          head.run = runs;
          head.run_size = static_cast<std::uint32_t>(b - a);
          head.run_last = clusters[ch[b - 1]].frame;
          for (std::size_t j = a + 1; j < b; ++j) {
            cluster& m = clusters[ch[j]];
            m.run = runs;
            m.member = static_cast<std::uint32_t>(j - a);
            m.hidden = true;
            for (node_id p = 0; p < m.count; ++p) step[m.first + p] = head.first + p;
          }
          ++runs;
        }
        todo.push_back(ch[a]);  // (of a run, only the first member is looked into)
        a = b;
      }
    }
    for (node_id i = 0; i < n; ++i) rep[i] = step[i] == i ? i : rep[step[i]];  // (step[i] < i)
    std::vector<bool> read(n, false), read_visibly(n, false);
    for (node_id i = 0; i < n; ++i) {
      graph::for_each_ref(nodes[i], [&](value_ref r) {
        if (r.node >= n) return;
        read[r.node] = true;
        if (rep[i] == i) read_visibly[r.node] = true;
      });
    }
    for (node_id i = 0; i < n; ++i)
      dropped[i] = nodes[i].op == node_op::placeholder && read[i] && !read_visibly[i];
  }
  // Whether an edge s -> c joins two different members of one run (one layer's output read by the
  // next): such edges are not drawn. Checked at each level of nesting, as the nodes are mapped.
  std::vector<std::pair<std::int64_t, std::uint32_t>> runs_of_s;
  const auto crosses_members = [&](node_id s, node_id c) {
    for (;;) {
      runs_of_s.clear();
      for (std::uint32_t k = node_cluster[s]; k != 0; k = clusters[k].parent)
        if (clusters[k].run >= 0) runs_of_s.emplace_back(clusters[k].run, clusters[k].member);
      if (!runs_of_s.empty()) {
        for (std::uint32_t k = node_cluster[c]; k != 0; k = clusters[k].parent) {
          if (clusters[k].run < 0) continue;
          for (const auto& [run, member] : runs_of_s)
            if (run == clusters[k].run && member != clusters[k].member) return true;
        }
      }
      if (step[s] == s && step[c] == c) return false;
      s = step[s];
      c = step[c];
    }
  };

  // ---- writing ----
  std::string out;
  out.reserve(static_cast<std::size_t>(n) * 128 + 512);
  const auto put_number = [&](std::uint64_t v) {
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(res.ptr - buf));
  };
  const auto put_quoted = [&](std::string_view text) {
    out += '"';
    detail::dot_escape(out, text);
    out += '"';
  };
  // one label line, cut to max_label_width (at a UTF-8 character's start)
  const auto put_line = [&](bool& first, std::string_view text) {
    if (!first) out += "\\n";
    first = false;
    const std::size_t width = options.max_label_width;
    if (width == 0 || text.size() <= width) {
      detail::dot_escape(out, text);
      return;
    }
    std::size_t cut = width > 3 ? width - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
    detail::dot_escape(out, text.substr(0, cut));
    out += "...";
  };
  const auto indent = [&](std::size_t depth) { out.append(2 * std::min<std::size_t>(depth, 32), ' '); };
  const auto put_node = [&](node_id i, std::size_t depth) {
    const node& nd = nodes[i];
    indent(depth);
    out += 'n';
    put_number(i);
    out += " [label=\"";
    bool first = true;
    std::string meta;
    switch (nd.op) {
      case node_op::placeholder:
        put_line(first, nd.name);
        for (const tensor_meta& m : nd.vals) put_line(first, m.to_string());
        break;
      case node_op::output: put_line(first, "output"); break;
      case node_op::call_function:
        put_line(first, options.full_target ? nd.target.name() : nd.target.short_name());
        if (nd.vals.size() == 1) {
          put_line(first, nd.vals[0].to_string());
        } else {
          for (std::size_t k = 0; k < nd.vals.size(); ++k) {
            meta = "[";
            meta += std::to_string(k);
            meta += "] ";
            meta += nd.vals[k].to_string();
            put_line(first, meta);
          }
        }
        put_line(first, nd.name);
        break;
    }
    if (i < deco.node_note.size() && !deco.node_note[i].empty()) put_line(first, deco.node_note[i]);
    if (options.show_stack_trace && !nd.stack_trace.empty()) put_line(first, nd.stack_trace);
    out += '"';
    if (nd.op == node_op::call_function) {
      out += ", tooltip=";
      meta = nd.target.name();
      if (!nd.stack_trace.empty()) {
        meta += '\n';
        meta += nd.stack_trace;
      }
      put_quoted(meta);
    }
    std::string_view fill;
    switch (nd.op) {
      case node_op::placeholder:
        out += ", shape=ellipse";
        fill = "#dbeafe";
        break;
      case node_op::output:
        out += ", shape=octagon";
        fill = "#fde68a";
        break;
      case node_op::call_function:
        if (is_assertion(nd)) {
          out += ", shape=hexagon";
          fill = "#fee2e2";
        }
        break;
    }
    if (i < deco.node_fill.size() && !deco.node_fill[i].empty()) fill = deco.node_fill[i];
    if (!fill.empty()) {
      out += ", fillcolor=";
      put_quoted(fill);
    }
    out += "];\n";
  };
  const auto visible = [&](node_id i) { return rep[i] == i && !dropped[i]; };

  out += "digraph ";
  put_quoted(options.name);
  out += " {\n  graph [rankdir=";
  out += options.rankdir;
  out += ", fontname=\"Helvetica\", fontsize=11, labeljust=l];\n"
         "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=10];\n"
         "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#475569\"];\n";
  for (node_id i : clusters[0].direct)
    if (visible(i)) put_node(i, 1);

  // the clusters, depth first (an explicit stack: module stacks read from a file may be deep)
  std::vector<std::pair<std::uint32_t, std::size_t>> open{{0, 0}};  // (cluster, next child)
  std::string text;
  while (!open.empty()) {
    const std::uint32_t c = open.back().first;
    const std::size_t k = open.back().second;
    if (k == clusters[c].children.size()) {
      if (c != 0) {
        indent(clusters[c].depth);
        out += "}\n";
      }
      open.pop_back();
      continue;
    }
    ++open.back().second;
    const std::uint32_t child = clusters[c].children[k];
    const cluster& x = clusters[child];
    if (x.hidden) continue;
    const std::size_t d = x.depth;
    indent(d);
    out += "subgraph cluster_";
    put_number(child);
    out += " {\n";
    indent(d + 1);
    out += "label=\"";
    const std::string_view type = x.frame->type.empty() ? std::string_view{} : detail::short_type_name(x.frame->type);
    text = x.frame->path;
    if (x.run_size > 1) {
      text += " .. ";
      text += x.run_last->path;
      text += " (x";
      text += std::to_string(x.run_size);
      if (!type.empty()) {
        text += ", ";
        text += type;
      }
      text += ')';
    } else if (!type.empty()) {
      text += " (";
      text += type;
      text += ')';
    }
    bool first = true;
    put_line(first, text);
    out += "\";\n";
    if (!x.frame->type.empty()) {
      indent(d + 1);
      out += "tooltip=";
      put_quoted(x.frame->type);
      out += ";\n";
    }
    indent(d + 1);
    if (x.run_size > 1) out += "style=\"rounded,filled,bold\"; fillcolor=\"#fef9c3\"; color=\"#ca8a04\"; penwidth=2;\n";
    else out += d % 2 == 1 ? "style=\"rounded,filled\"; fillcolor=\"#f8fafc\"; color=\"#94a3b8\";\n"
                           : "style=\"rounded,filled\"; fillcolor=\"#eef2f7\"; color=\"#94a3b8\";\n";
    for (node_id i : x.direct)
      if (visible(i)) put_node(i, d + 1);
    open.emplace_back(child, 0);
  }

  // the edges: every value read, from its producer (collapsed: from and to where they are drawn)
  struct edge_key {
    std::uint64_t ends;   // producer << 32 | consumer
    std::uint64_t which;  // output index << 32 | position in the output node (or none)
    bool operator==(const edge_key&) const = default;
  };
  struct edge_hash {
    std::size_t operator()(const edge_key& e) const noexcept {
      return std::hash<std::uint64_t>{}(e.ends * 0x9e3779b97f4a7c15ull ^ e.which);
    }
  };
  std::unordered_set<edge_key, edge_hash> drawn;
  for (node_id i = 0; i < n; ++i) {
    const node& nd = nodes[i];
    const bool is_output = nd.op == node_op::output;
    const auto edge = [&](value_ref r, std::size_t position) {
      if (r.node >= n) return;
      node_id s = r.node, c = i;
      if (options.collapse_repeated) {
        if (dropped[s]) return;
        if ((step[s] != s || step[c] != c) && crosses_members(s, c)) return;
        s = rep[s];
        c = rep[c];
        if (s == c) return;
        const edge_key key{(std::uint64_t{s} << 32) | c, (std::uint64_t{r.index} << 32) | (is_output ? position : none)};
        if (!drawn.insert(key).second) return;
      }
      out += "  n";
      put_number(s);
      out += " -> n";
      put_number(c);
      text.clear();
      if (nodes[s].vals.size() > 1) {
        text += '[';
        text += std::to_string(r.index);
        text += ']';
      }
      std::string_view color;
      if (is_output && position < deco.output_label.size() && !deco.output_label[position].empty()) {
        if (!text.empty()) text += ' ';
        text += deco.output_label[position];
      }
      if (is_output && position < deco.output_color.size()) color = deco.output_color[position];
      if (!text.empty() || !color.empty()) {
        out += " [";
        if (!text.empty()) {
          out += "label=";
          put_quoted(text);
        }
        if (!color.empty()) {
          if (!text.empty()) out += ", ";
          out += "color=";
          put_quoted(color);
          out += ", fontcolor=";
          put_quoted(color);
        }
        out += ']';
      }
      out += ";\n";
    };
    for (std::size_t a = 0; a < nd.args.size(); ++a) graph::for_each_ref(nd.args[a], [&](value_ref r) { edge(r, a); });
    for (const auto& kv : nd.kwargs) graph::for_each_ref(kv.second, [&](value_ref r) { edge(r, none); });
  }

  // the subgraphs of control flow: each drawn as its own picture, inside a cluster of its name
  // (node and cluster ids prefixed with it), a dotted edge from each call that names it
  for (const graph::subgraph& sub : g.subgraphs()) {
    const std::string inner = to_dot(*sub.body, options);
    const std::size_t open_brace = inner.find('{'), close_brace = inner.rfind('}');
    if (open_brace == std::string::npos || close_brace == std::string::npos || close_brace <= open_brace) continue;
    const std::string_view body = std::string_view(inner).substr(open_brace + 1, close_brace - open_brace - 1);
    const std::string prefix = sub.name + "_";
    out += "  subgraph cluster_";
    out += sub.name;
    out += " {\n    label=";
    put_quoted(sub.name);
    out += "; style=\"rounded,dashed\"; color=\"#7c3aed\";\n";
    const auto ident = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; };
    bool quoted = false, escaped = false;
    for (std::size_t k = 0; k < body.size(); ++k) {  // (ids n12 and cluster_3 outside quotes get the prefix)
      const char c = body[k];
      if (quoted && escaped) {
        escaped = false;
      } else if (quoted && c == '\\') {
        escaped = true;
      } else if (c == '"') {
        quoted = !quoted;
      }
      const bool starts = !quoted && (k == 0 || !ident(body[k - 1]));
      if (starts && c == 'n' && k + 1 < body.size() && body[k + 1] >= '0' && body[k + 1] <= '9') out += prefix;
      if (starts && body.substr(k).starts_with("cluster_")) {
        out += "cluster_";
        out += prefix;
        k += 7;
        continue;
      }
      out += c;
    }
    out += "  }\n";
    for (node_id i = 0; i < n; ++i) {
      if (!is_control_flow(nodes[i])) continue;
      for (const argument& a : nodes[i].args) {
        const auto* name = std::get_if<std::string>(&a);
        if (name == nullptr || *name != sub.name || sub.body->size() == 0) continue;
        out += "  n";
        put_number(i);
        out += " -> ";
        out += prefix;
        out += "n0 [style=dotted, color=\"#7c3aed\", lhead=";
        put_quoted("cluster_" + sub.name);
        out += ", label=";
        put_quoted(sub.name);
        out += "];\n";
      }
    }
  }

  if (!deco.legend.empty()) {
    out += "  subgraph cluster_legend {\n    label=\"legend\"; style=\"rounded,dashed\"; color=\"#94a3b8\";\n";
    for (std::size_t k = 0; k < deco.legend.size(); ++k) {
      const dot_legend_entry& e = deco.legend[k];
      out += "    legend_";
      put_number(k);
      out += " [label=";
      put_quoted(e.text);
      out += e.edge ? ", shape=box, style=\"rounded,bold\", penwidth=2, color=" : ", shape=box, fillcolor=";
      put_quoted(e.color);
      if (e.edge) {
        out += ", fontcolor=";
        put_quoted(e.color);
      }
      out += "];\n";
    }
    out += "  }\n";
  }
  out += "}\n";
  return out;
}
#endif  // TYPEX_HEADER_DEFINITIONS
