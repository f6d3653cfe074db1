// typex/export/exported_program.hpp — torch.export's ExportedProgram, as run-time data.
//
// The graph with its signature, the state dict and constants it lifted, the range constraints of
// its symbols, the module call graph (whose root entry carries the calling convention's in/out
// specs) and the example inputs. Constructing one runs the verifier: the graph's own invariants,
// then the graph against the signature and the lifted tensors' dtypes and shapes. Printing follows
// torch.export (ExportedProgram: / Graph signature: / Range constraints:).
#pragma once

#include <typex/export/graph_signature.hpp>
#include <typex/export/module_call_graph.hpp>
#include <typex/tensor/named_tensors.hpp>
#include <typex/export/range_constraints.hpp>
#include <typex/ir/printer.hpp>
#include <typex/ir/verifier.hpp>

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace typex {

template <class Backend>
class program_module;  // (program_module.hpp: included by export_program.hpp, typex.hpp and the backends)
template <class Backend>
class partitioned_module;  // (partitioned_module.hpp)

namespace detail {
// e == v where e has exactly one unbound symbol, reached through +, - and * with operands the
// bound symbols determine: that symbol and its value (nullopt when there is none, or no integer).
TYPEX_API std::optional<std::pair<std::string, index_t>> solve_for_symbol(const ir::sym_expr& e, index_t v,
                                                                      const symbol_table& t);
// The symbols of e that t does not bind, each once, appended to out.
TYPEX_API void unbound_symbols(const ir::sym_expr& e, const symbol_table& t, std::vector<std::string>& out);
}  // namespace detail

class exported_program {
 public:
  exported_program(ir::graph graph, graph_signature signature, named_tensors state_dict, named_tensors constants,
                   range_constraints ranges, std::vector<module_call_entry> module_call_graph,
                   std::vector<any_tensor> example_inputs = {})
      : graph_(std::move(graph)),
        signature_(std::move(signature)),
        state_dict_(std::move(state_dict)),
        constants_(std::move(constants)),
        ranges_(std::move(ranges)),
        module_call_graph_(std::move(module_call_graph)),
        example_inputs_(std::move(example_inputs)) {
    verify();
  }

  const ir::graph& graph() const noexcept { return graph_; }
  const graph_signature& signature() const noexcept { return signature_; }
  const named_tensors& state_dict() const noexcept { return state_dict_; }
  const named_tensors& constants() const noexcept { return constants_; }
  const range_constraints& ranges() const noexcept { return ranges_; }
  const std::vector<module_call_entry>& module_call_graph() const noexcept { return module_call_graph_; }
  const std::vector<any_tensor>& example_inputs() const noexcept { return example_inputs_; }

  // Whether each node's recorded dtype and shape come from typex's tracer and passes (true), or
  // from a file (false: typex::load). A backend plans memory by the recorded shapes; for a program
  // whose shapes are not trusted it first checks them against what each op computes, on the first
  // call for each set of input extents (the Eigen backend: one step-by-step run that compares every
  // result with its record, a graph_error naming the node on a difference), and plans after. A
  // program made from another (make_joint, partitioning, a module's own copy) keeps its source's
  // answer. Set it to true for files you wrote yourself to skip that first checked run.
  bool trusted_shapes() const noexcept { return trusted_shapes_; }
  exported_program& set_trusted_shapes(bool trusted) noexcept {
    trusted_shapes_ = trusted;
    return *this;
  }

  // The ops the program may call (ir/dialect.hpp): ir::export_dialect for what tracing records,
  // ir::core_dialect after passes::run_decompositions to the core set. The verifier holds the
  // graph to it. set_dialect verifies the graph in the new dialect (a graph_error naming the
  // first node outside it).
  const ir::dialect& dialect() const noexcept { return dialect_; }
  exported_program& set_dialect(const ir::dialect& d) {
    const ir::dialect before = dialect_;
    dialect_ = d;  // (a copy: a name and a predicate; the caller's object may be a temporary)
    try {
      verify();
    } catch (...) {
      dialect_ = before;
      throw;
    }
    return *this;
  }

  // The calling convention (torch: call_spec): the root entry's in/out specs.
  const tree_spec& in_spec() const { return root_signature().in_spec; }
  const tree_spec& out_spec() const { return root_signature().out_spec; }

  // A callable running the program on a backend (program_module.hpp; the default backend is
  // TYPEX_DEFAULT_BACKEND, <typex/backend/eigen.hpp>'s CPU backend unless configured): it takes the tensor
  // leaves of the inputs (std::vector<any_tensor>, in flattening order), checks their dtypes and
  // shapes against the program, and returns the output leaves.
  template <class Backend = TYPEX_DEFAULT_BACKEND>
  program_module<Backend> module() const {
    return program_module<Backend>(*this);
  }

  // The user inputs' tensor leaves (in flattening order) checked against the program: count, dtype,
  // rank, static extents; each symbol bound by the first input that uses it and agreed on by the
  // others, inside its range; a symbol that appears only in derived dims (x: [2*seq]) solved from
  // them; every derived dim equal to its expression; every run-time assertion true. Returns the
  // bound symbols; throws an error naming the input, the dim, the symbol and the range or relation.
  TYPEX_API symbol_table bind_inputs(std::span<const any_tensor> inputs) const;

  // The run-time assertion nodes, for the bound symbols (bind_inputs calls it). An assertion about
  // a data-dependent size not bound yet waits: the backend checks it again once the op that makes
  // the size has run.
  TYPEX_API void check_assertions(const symbol_table& symbols) const;

  // How many unbound data-dependent symbols e mentions.
  TYPEX_API int waits_for_data(const ir::sym_expr& e, const symbol_table& symbols) const;

  // The user inputs' placeholders, in order.
  TYPEX_API std::vector<ir::node_id> user_inputs() const;

  // std::cout << program (any stream that takes a std::string; no <ostream> needed here).
  template <class Stream>
    requires requires(Stream& os, const std::string& text) { os << text; }
  friend Stream& operator<<(Stream& os, const exported_program& ep) {
    os << ep.to_string();
    return os;
  }

  TYPEX_API std::string to_string() const;

 private:
  const module_call_signature& root_signature() const {
    if (module_call_graph_.empty() || !module_call_graph_.front().fqn.empty() ||
        !module_call_graph_.front().signature)
      detail::raise_message<ir::graph_error>("typex::exported_program: the module call graph has no root signature");
    return *module_call_graph_.front().signature;
  }

  static std::string indent(const std::string& text) {
    std::string s;
    for (char c : text) {
      s += c;
      if (c == '\n') s += "    ";
    }
    return s;
  }

  [[noreturn]] void fail(std::string_view what) const {
    detail::raise<ir::graph_error>([&](auto& w) { w.put("typex::exported_program: "); w.put(what); });
  }

  // The signature against the graph, and the lifted tensors against the placeholders' metadata.
  TYPEX_API void verify() const;
  // Every symbol of the user inputs' dims can be bound from a call's extents (constraint_violation).
  TYPEX_API void check_inputs_bind_symbols() const;

  TYPEX_API static void check_lifted_meta(const ir::node& ph, const std::string& fqn, const any_tensor& t);

  ir::graph graph_;
  graph_signature signature_;
  named_tensors state_dict_;
  named_tensors constants_;
  range_constraints ranges_;
  std::vector<module_call_entry> module_call_graph_;
  std::vector<any_tensor> example_inputs_;
  bool trusted_shapes_ = true;
  ir::dialect dialect_ = ir::export_dialect;
};

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::detail::solve_for_symbol(const ir::sym_expr& e, index_t v,
                                                                      const symbol_table& t) -> std::optional<std::pair<std::string, index_t>> {
  if (e.is_symbol()) {
    if (t.value(e.name())) return std::nullopt;
    return std::pair{std::string(e.name()), v};
  }
  if (e.is_constant()) return std::nullopt;
  const ir::sym_expr a = e.lhs(), b = e.rhs();
  const auto av = a.evaluate(t), bv = b.evaluate(t);
  if (av.has_value() == bv.has_value()) return std::nullopt;  // both known, or two unknowns
  const index_t k = av ? *av : *bv;
  const ir::sym_expr& u = av ? b : a;
  switch (e.op()) {
    // (saturating: v is a checked extent, k may be anything the other symbols make)
    case dim_op::add: return solve_for_symbol(u, detail::apply(dim_op::sub, v, k), t);
    case dim_op::sub: return av ? solve_for_symbol(u, detail::apply(dim_op::sub, k, v), t) : solve_for_symbol(u, detail::apply(dim_op::add, v, k), t);
    case dim_op::mul:
      if (k == 0 || v % k != 0) return std::nullopt;
      return solve_for_symbol(u, v / k, t);
    default: return std::nullopt;
  }
}

TYPEX_API auto typex::exported_program::bind_inputs(std::span<const any_tensor> inputs) const -> symbol_table {
  const std::vector<ir::node_id> user = user_inputs();
  const ir::graph& g = graph_;
  symbol_table symbols;
  if (inputs.size() != user.size()) {
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex: the exported program takes "); w.put_int(static_cast<long long>(user.size()));
      w.put(user.size() == 1 ? " tensor input (" : " tensor inputs (");
      for (std::size_t i = 0; i < user.size(); ++i) { if (i) w.put(", "); w.put(g[user[i]].name); }
      w.put("), but "); w.put_int(static_cast<long long>(inputs.size())); w.put(" were given");
    });
  }
  auto where = [&](std::size_t i, std::size_t d) {
    std::string s = "input '";
    s += g[user[i]].name;
    s += "' (dim ";
    s += std::to_string(d);
    s += ')';
    return s;
  };
  // dtype, rank and static extents; symbols bound by the first input that uses them
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ir::node& ph = g[user[i]];
    const ir::tensor_meta& m = ph.vals.front();
    const any_tensor& t = inputs[i];
    t.check_storage("input '" + ph.name + "'");  // (a moved-from tensor: no data behind its extents)
    if (t.scalar_type() != m.scalar_type) {
      detail::raise<dtype_error>([&](auto& w) {
        w.put("typex: input '"); w.put(ph.name); w.put("' has dtype "); w.put(name(t.scalar_type()));
        w.put(", expected "); w.put(m.to_string());
      });
    }
    if (t.rank() != m.rank()) {
      detail::raise<shape_error>([&](auto& w) {
        w.put("typex: input '"); w.put(ph.name); w.put("' is "); w.put(t.to_string()); w.put(", expected ");
        w.put(m.to_string()); w.put(" (rank "); w.put_int(static_cast<long long>(m.rank())); w.put(')');
      });
    }
    for (std::size_t d = 0; d < m.rank(); ++d) {
      const ir::sym_expr& e = m.shape[d];
      if (const auto v = e.value(); v && *v != t.extents()[d]) {
        detail::raise<shape_error>([&](auto& w) {
          w.put("typex: input '"); w.put(ph.name); w.put("' is "); w.put(t.to_string()); w.put(", expected ");
          w.put(m.to_string()); w.put(": dim "); w.put_int(static_cast<long long>(d)); w.put(" is ");
          w.put_int(t.extents()[d]); w.put(", expected "); w.put_int(*v);
        });
      }
      if (e.is_symbol()) symbols.bind(e.name(), t.extents()[d], where(i, d));
    }
  }
  // symbols met only in derived dims: solved from them (2*seq = 8 gives seq = 4), until no more
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const ir::tensor_meta& m = g[user[i]].vals.front();
      for (std::size_t d = 0; d < m.rank(); ++d) {
        const ir::sym_expr& e = m.shape[d];
        if (e.is_constant() || e.is_symbol() || e.evaluate(symbols)) continue;
        if (const auto s = detail::solve_for_symbol(e, inputs[i].extents()[d], symbols)) {
          symbols.bind(s->first, s->second, where(i, d));
          progress = true;
        }
      }
    }
  }
  ranges_.check(symbols);
  // derived dims: equal to their expression of the bound symbols
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ir::tensor_meta& m = g[user[i]].vals.front();
    for (std::size_t d = 0; d < m.rank(); ++d) {
      const ir::sym_expr& e = m.shape[d];
      if (e.is_constant() || e.is_symbol()) continue;
      const auto v = e.evaluate(symbols);
      if (!v || *v != inputs[i].extents()[d]) {
        detail::raise<constraint_violation>([&](auto& w) {
          w.put("typex: input '"); w.put(g[user[i]].name); w.put("' is "); w.put(inputs[i].to_string());
          w.put(", expected "); w.put(m.to_string()); w.put(": dim "); w.put_int(static_cast<long long>(d));
          w.put(" is "); w.put_int(inputs[i].extents()[d]); w.put(", but ");
          if (v) {
            w.put(e.to_string()); w.put(" = "); w.put_int(*v);
          } else {  // (no value of the unknown symbol gives it: export makes sure one unknown is all there is)
            w.put(e.to_string()); w.put(" cannot be "); w.put_int(inputs[i].extents()[d]);
            w.put(" for any integer value of its symbols");
          }
        });
      }
    }
  }
  check_assertions(symbols);
  return symbols;
}

TYPEX_API auto typex::exported_program::check_assertions(const symbol_table& symbols) const -> void {
  for (const ir::node& n : graph_.nodes()) {
    if (!ir::is_assertion(n)) continue;
    const auto& lhs = std::get<ir::sym_expr>(n.args[0]);
    const auto& rhs = std::get<ir::sym_expr>(n.args[2]);
    relation rel{};
    (void)parse_relation(std::get<std::string>(n.args[1]), rel);
    const auto a = lhs.evaluate(symbols), b = rhs.evaluate(symbols);
    if (a && b && holds(rel, *a, *b)) continue;
    if (!(a && b) && waits_for_data(lhs, symbols) + waits_for_data(rhs, symbols) > 0) continue;
    bool by_inputs = true;  // (or by a data-dependent op's result)
    for (const auto& e : symbols.entries())
      if ((lhs.mentions(e.name) || rhs.mentions(e.name)) && !e.bound_by.starts_with("input")) by_inputs = false;
    detail::raise<constraint_violation>([&](auto& w) {
      w.put(by_inputs ? "typex: the inputs bind " : "typex: the program binds ");
      bool first = true;
      for (const auto& e : symbols.entries()) {
        if (!lhs.mentions(e.name) && !rhs.mentions(e.name)) continue;
        if (!first) w.put(", ");
        first = false;
        w.put(e.name); w.put(" = "); w.put_int(e.value); w.put(" (by "); w.put(e.bound_by); w.put(')');
      }
      w.put(", and the program asserts "); w.put(lhs.to_string()); w.put(' '); w.put(typex::to_string(rel)); w.put(' ');
      w.put(rhs.to_string());
      if (a && b) {
        w.put(", but "); w.put_int(*a); w.put(' '); w.put(to_negated_string(rel)); w.put(' '); w.put_int(*b);
      } else {
        w.put(", which the inputs do not determine");
      }
      w.put(" (run-time assertion '"); w.put(n.name); w.put("': "); w.put(std::get<std::string>(n.args[3]));
      w.put(')');
    });
  }
}

TYPEX_API auto typex::exported_program::waits_for_data(const ir::sym_expr& e, const symbol_table& symbols) const -> int {
  int k = 0;
  for (const auto& [name, range] : ranges_.entries())
    if (ranges_.is_unbacked(name) && !symbols.value(name) && e.mentions(name)) ++k;
  return k;
}

TYPEX_API auto typex::exported_program::user_inputs() const -> std::vector<ir::node_id> {
  std::vector<ir::node_id> out;
  const auto placeholders = graph_.placeholders();
  for (std::size_t i = 0; i < placeholders.size(); ++i)
    if (signature_.input_specs()[i].kind == input_kind::user_input) out.push_back(placeholders[i]);
  return out;
}

TYPEX_API auto typex::exported_program::to_string() const -> std::string {
  std::string s = "ExportedProgram:\n    ";
  s += indent(ir::print_readable(graph_));
  s += "\nGraph signature: ";
  s += indent(signature_.to_string());
  s += "\nRange constraints: ";
  s += ranges_.to_string();
  s += '\n';
  return s;
}

TYPEX_API auto typex::detail::unbound_symbols(const ir::sym_expr& e, const symbol_table& t, std::vector<std::string>& out) -> void {
  if (e.is_symbol()) {
    if (!t.value(e.name()) && std::find(out.begin(), out.end(), e.name()) == out.end()) out.emplace_back(e.name());
  } else if (!e.is_constant()) {
    unbound_symbols(e.lhs(), t, out);
    unbound_symbols(e.rhs(), t, out);
  }
}

TYPEX_API auto typex::exported_program::check_inputs_bind_symbols() const -> void {
  // What bind_inputs can do with any inputs: bind a symbol that is a whole dim, then solve a derived
  // dim for its one unknown symbol when only +, - and * lead to it (2*seq, seq + 1), until no more.
  // A symbol left unknown (a dim a*b whose a and b no other dim gives) cannot be bound from the
  // inputs: every call would be rejected, so the export is.
  const std::vector<ir::node_id> user = user_inputs();
  symbol_table known;
  auto solvable = [&](const ir::sym_expr& e, const auto& self) -> bool {  // (one unknown, through + - *)
    if (e.is_symbol()) return !known.value(e.name());
    if (e.is_constant()) return false;
    const bool a = e.lhs().evaluate(known).has_value(), b = e.rhs().evaluate(known).has_value();
    if (a == b || (e.op() != dim_op::add && e.op() != dim_op::sub && e.op() != dim_op::mul)) return false;
    return self(a ? e.rhs() : e.lhs(), self);
  };
  for (const ir::node_id id : user)
    for (const ir::sym_expr& e : graph_[id].vals.front().shape)
      if (e.is_symbol() && !known.value(e.name())) known.bind(e.name(), 1, "");
  for (bool progress = true; progress;) {
    progress = false;
    for (const ir::node_id id : user)
      for (const ir::sym_expr& e : graph_[id].vals.front().shape) {
        if (e.is_constant() || e.is_symbol() || e.evaluate(known) || !solvable(e, solvable)) continue;
        std::vector<std::string> one;
        detail::unbound_symbols(e, known, one);
        known.bind(one.front(), 1, "");
        progress = true;
      }
  }
  for (const ir::node_id id : user) {
    const ir::tensor_meta& m = graph_[id].vals.front();
    for (std::size_t d = 0; d < m.rank(); ++d) {
      const ir::sym_expr& e = m.shape[d];
      std::vector<std::string> unknown;
      detail::unbound_symbols(e, known, unknown);
      if (unknown.empty()) continue;
      detail::raise<constraint_violation>([&](auto& w) {
        w.put("typex: input '"); w.put(graph_[id].name); w.put("' has dim "); w.put_int(static_cast<long long>(d));
        w.put(" = "); w.put(e.to_string()); w.put(", and no input binds ");
        for (std::size_t k = 0; k < unknown.size(); ++k) { if (k) w.put(k + 1 == unknown.size() ? " and " : ", "); w.put(unknown[k]); }
        w.put(": a call's extent does not tell the symbols apart, so no call could be checked");
        w.put("\n    fix: declare that dim as one symbol of its own (typex::sym<\"name\", lo, hi>), or give another input a dim that is ");
        w.put(unknown.front()); w.put(" alone");
      });
    }
  }
}

TYPEX_API auto typex::exported_program::verify() const -> void {
  ir::verify(graph_, {.in_dialect = &dialect_});
  const auto placeholders = graph_.placeholders();
  const auto& ins = signature_.input_specs();
  if (placeholders.size() != ins.size()) {
    detail::raise<ir::graph_error>([&](auto& w) {
      w.put("typex::exported_program: the graph has "); w.put_int(static_cast<long long>(placeholders.size()));
      w.put(" placeholders but the signature describes "); w.put_int(static_cast<long long>(ins.size()));
      w.put(" inputs");
    });
  }
  bool user_seen = false;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    const ir::node& ph = graph_[placeholders[i]];
    const input_spec& spec = ins[i];
    if (ph.name != spec.arg) {
      detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::exported_program: input "); w.put_int(static_cast<long long>(i)); w.put(" is the placeholder '");
        w.put(ph.name); w.put("' but the signature names '"); w.put(spec.arg); w.put('\'');
      });
    }
    if (spec.kind == input_kind::user_input) {
      user_seen = true;
      continue;
    }
    if (user_seen) fail("lifted parameters, buffers and constants must come before the user inputs");
    if (spec.target.empty()) fail("a lifted input without the FQN it refers to");
    const bool in_state_dict =
        spec.kind == input_kind::parameter || (spec.kind == input_kind::buffer && spec.persistent);
    const any_tensor* t = in_state_dict ? state_dict_.find(spec.target) : constants_.find(spec.target);
    if (t == nullptr) {
      detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::exported_program: "); w.put(name(spec.kind)); w.put(" '"); w.put(spec.target);
        w.put(in_state_dict ? "' is not in the state dict" : "' is not in the constants");
      });
    }
    check_lifted_meta(ph, spec.target, *t);
  }
  const ir::node& out = graph_.output();
  const auto& outs = signature_.output_specs();
  if (out.args.size() != outs.size()) {
    detail::raise<ir::graph_error>([&](auto& w) {
      w.put("typex::exported_program: the graph returns "); w.put_int(static_cast<long long>(out.args.size()));
      w.put(" values but the signature describes "); w.put_int(static_cast<long long>(outs.size()));
      w.put(" outputs");
    });
  }
  bool user_output_seen = false, gradient_seen = false, loss_seen = false;
  // a gradient's value has its input's dtype and shape
  const auto check_gradient = [&](std::size_t i, const ir::tensor_meta& now, input_kind kind, bool by_fqn) {
    const input_spec* in = nullptr;
    for (const auto& s : ins)
      if (s.kind == kind && (by_fqn ? s.target : s.arg) == outs[i].target) in = &s;
    if (in == nullptr) {
      detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::exported_program: output "); w.put_int(static_cast<long long>(i)); w.put(" is a gradient for '");
        w.put(outs[i].target); w.put(by_fqn ? "', which is not a lifted parameter" : "', which is not a user input");
      });
    }
    const ir::tensor_meta& was = graph_[placeholders[static_cast<std::size_t>(in - ins.data())]].vals.front();
    if (now != was) {
      detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::exported_program: output "); w.put_int(static_cast<long long>(i)); w.put(", the gradient for '");
        w.put(outs[i].target); w.put("', is "); w.put(now.to_string()); w.put(", but its input is "); w.put(was.to_string());
      });
    }
  };
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto r = std::get<ir::value_ref>(out.args[i]);
    const output_kind kind = outs[i].kind;
    if (kind == output_kind::gradient_to_parameter || kind == output_kind::gradient_to_user_input) {
      gradient_seen = true;
      check_gradient(i, graph_[r.node].vals.at(r.index), kind == output_kind::gradient_to_parameter ? input_kind::parameter : input_kind::user_input,
                     kind == output_kind::gradient_to_parameter);
    } else if (gradient_seen) {
      fail("the gradients must come after the user outputs and the loss");
    }
    if (kind == output_kind::loss_output) {
      const ir::tensor_meta& m = graph_[r.node].vals.at(r.index);
      if (loss_seen) fail("a program has one LOSS_OUTPUT");
      if (m.rank() != 0 || !is_floating_point(m.scalar_type)) fail("the LOSS_OUTPUT must be a floating-point scalar");
      loss_seen = true;
      user_output_seen = true;
    } else if (kind == output_kind::user_output) {
      user_output_seen = true;
    } else if (outs[i].kind == output_kind::buffer_mutation || outs[i].kind == output_kind::user_input_mutation) {
      const bool of_buffer = outs[i].kind == output_kind::buffer_mutation;
      if (user_output_seen) fail("buffer and user input mutations must come before the user outputs");
      const input_spec* buf = nullptr;
      for (const auto& in : ins)
        if (of_buffer ? in.kind == input_kind::buffer && in.target == outs[i].target
                      : in.kind == input_kind::user_input && in.arg == outs[i].target)
          buf = &in;
      if (buf == nullptr) {
        detail::raise<ir::graph_error>([&](auto& w) {
          w.put("typex::exported_program: output "); w.put_int(static_cast<long long>(i)); w.put(" mutates '");
          w.put(outs[i].target); w.put(of_buffer ? "', which is not a lifted buffer" : "', which is not a user input");
        });
      }
      const ir::tensor_meta& now = graph_[r.node].vals.at(r.index);
      const ir::tensor_meta& was = graph_[graph_.placeholders()[static_cast<std::size_t>(buf - ins.data())]].vals.front();
      if (now.to_string() != was.to_string()) {
        detail::raise<ir::graph_error>([&](auto& w) {
          w.put("typex::exported_program: output "); w.put_int(static_cast<long long>(i)); w.put(" writes ");
          w.put(now.to_string()); w.put(of_buffer ? " to buffer '" : " to user input '"); w.put(outs[i].target); w.put("', which is ");
          w.put(was.to_string());
        });
      }
    }
    std::string produced = graph_[r.node].name;
    if (graph_[r.node].vals.size() > 1) produced = detail::with_number(produced + "[", r.index) + "]";
    if (produced != outs[i].arg) {
      detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::exported_program: output "); w.put_int(static_cast<long long>(i)); w.put(" is '"); w.put(produced);
        w.put("' but the signature names '"); w.put(outs[i].arg); w.put('\'');
      });
    }
  }
  check_inputs_bind_symbols();
}

TYPEX_API auto typex::exported_program::check_lifted_meta(const ir::node& ph, const std::string& fqn, const any_tensor& t) -> void {
  const ir::tensor_meta& m = ph.vals.front();
  bool same = m.scalar_type == t.scalar_type() && m.shape.size() == t.rank();
  for (std::size_t d = 0; same && d < m.shape.size(); ++d) same = m.shape[d].value() == t.extents()[d];
  if (!same) {
    detail::raise<ir::graph_error>([&](auto& w) {
      w.put("typex::exported_program: placeholder '"); w.put(ph.name); w.put("' is "); w.put(m.to_string());
      w.put(" but '"); w.put(fqn); w.put("' is "); w.put(t.to_string());
    });
  }
}
#endif  // TYPEX_HEADER_DEFINITIONS
