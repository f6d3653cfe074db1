// typex/export/archive.hpp — save and load exported programs (torch.export.save / load, no pickle).
//
//   typex::save(program, "model.typex");            // any exported_program (a typed_program too)
//   typex::exported_program p = typex::load("model.typex");
//   auto typed = typex::load<decltype(program)>("model.typex");   // checked against the type
//
// An archive is one safetensors file (docs/saving_and_loading.md has the format): its tensors are
// the program's state dict under their FQNs (so any safetensors reader, Hugging Face's included,
// reads the weights), its constants under "constants/<name>" and its example inputs under
// "example_inputs/<i>"; its __metadata__ holds "format": "typex.exported_program", the format
// version and "typex.program", the JSON description of everything else: the graph (nodes, op names,
// typed arguments, value metadata, nn_module_stack, stack traces), the signature, the range
// constraints, the module call graph with the in/out specs, and which tensor each lifted name reads.
// Tensors that share storage in the program (tied weights) are written once and share it again
// when loaded. A loaded program prints, verifies and runs as the saved one did, bit for bit.
//
// Format versions are "major.minor". A reader reads every older version and newer minor versions
// (which only add fields it may ignore); a newer major version is refused (unsupported_error). A
// file that is not a valid archive is a format_error naming the file and the first thing wrong
// (the safetensors layer's checks first, then the description's schema, then the program's own
// verifier); an op the reader does not know (a user op not registered with typex::register_op) is
// one too. Loading maps the file: the weights are not copied (read_mode::copy reads them instead).
#pragma once

#include <typex/core/sentence.hpp>
#include <typex/core/type_name.hpp>
#include <typex/export/export_program.hpp>
#include <typex/tensor/safetensors.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace typex {

// The version this library writes, and the newest major version it reads.
struct archive_version {
  int major = 0;
  int minor = 0;
  friend bool operator==(const archive_version&, const archive_version&) = default;
};
inline constexpr archive_version archive_format_version{1, 0};

namespace detail {
// The calling convention's numbers a typed program specialized (saved so that a typed load can
// check calls again); null for an untyped program.
TYPEX_API void save_archive(const exported_program& ep, const std::vector<specialized_number>* scalars, const std::filesystem::path& path);
TYPEX_API std::vector<std::byte> archive_bytes(const exported_program& ep, const std::vector<specialized_number>* scalars);
struct loaded_archive {
  exported_program program;
  std::vector<specialized_number> scalars;
  bool typed = false;
};
TYPEX_API loaded_archive read_archive(const safetensors_file& file);
}  // namespace detail

// Writes `ep` to `path` (atomically: a failure leaves any previous file as it was). file_error when
// the file cannot be written.
inline void save(const exported_program& ep, const std::filesystem::path& path) { detail::save_archive(ep, nullptr, path); }
template <class In, class Out>
void save(const typed_program<In, Out>& p, const std::filesystem::path& path) {
  detail::save_archive(p, &p.specialized_numbers(), path);
}

// The archive's bytes in memory (what save writes).
inline std::vector<std::byte> save_to_bytes(const exported_program& ep) { return detail::archive_bytes(ep, nullptr); }
template <class In, class Out>
std::vector<std::byte> save_to_bytes(const typed_program<In, Out>& p) {
  return detail::archive_bytes(p, &p.specialized_numbers());
}

// The program saved at `path`. file_error when it cannot be read; format_error when it is not a
// valid archive; unsupported_error for a newer major format version or a tensor dtype typex does
// not hold.
inline exported_program load(const std::filesystem::path& path, read_mode mode = read_mode::map) {
  return detail::read_archive(safetensors_file::open(path, mode)).program;
}
// The same from an archive's bytes (kept alive by the program's tensors); `source` names them.
inline exported_program load_from_bytes(storage bytes, std::string source = "<buffer>") {
  return detail::read_archive(safetensors_file::parse(std::move(bytes), std::move(source))).program;
}

// The JSON description an archive holds for `ep` (indented), as docs/saving_and_loading.md
// documents it: for reading, diffing and writing readers in other languages.
TYPEX_API std::string describe_archive(const exported_program& ep);

namespace detail {
// What differs between the program an archive holds and the typed program type P expects: the
// first difference in words; empty when none. (P's inputs: user inputs' dtypes, ranks, static
// extents, symbolic dims' names and ranges; its outputs: dtypes, ranks and static extents; both
// trees' structure; the number of specialized numbers.)
template <class P>
std::string typed_mismatch(const exported_program& ep, const std::vector<specialized_number>& scalars, bool typed);
}  // namespace detail

namespace detail {
template <class P> struct is_typed_program : std::false_type {};
template <class In, class Out> struct is_typed_program<typed_program<In, Out>> : std::true_type {};

// An error here means: typex::load<P> was given a type that is not a typed program.
template <class P>
constexpr void fail_not_typed_program() {
  TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
    w.put("typex::load<P>: P = "); w.put(raw_type_name<P>());
    w.put(" is not a typed program type: pass the type export_program returned, "
          "typex::load<decltype(typex::export_program(model, inputs...))>(path), or call typex::load(path) "
          "(no template argument) for an exported_program");
  });
}
}  // namespace detail

// The program saved at `path`, as the typed program type P (decltype(typex::export_program(...))):
// its calling convention checked against P's, naming the first difference (argument_error) — an
// archive of another model, or of this model exported with other input types.
// (P as decltype gives it: `const auto program = export_program(...)` makes decltype(program) const)
template <class P>
  requires(!detail::is_typed_program<std::remove_cvref_t<P>>::value)
exported_program load(const std::filesystem::path& path, read_mode mode = read_mode::map) {
  detail::fail_not_typed_program<P>();
  return load(path, mode);  // (what was meant: no cascade of errors after the sentence)
}
template <class P>
  requires detail::is_typed_program<std::remove_cvref_t<P>>::value
std::remove_cvref_t<P> load(const std::filesystem::path& path, read_mode mode = read_mode::map) {
  using program = std::remove_cvref_t<P>;
  detail::loaded_archive a = detail::read_archive(safetensors_file::open(path, mode));
  if (const std::string why = detail::typed_mismatch<program>(a.program, a.scalars, a.typed); !why.empty()) {
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex::load: '"); w.put(path.string()); w.put("' does not hold the program type asked for: "); w.put(why);
    });
  }
  return program(std::move(a.program), std::move(a.scalars));
}

namespace detail {
// A leaf that becomes any leaf type's default value: builds a tree of the types' structure from a
// stored spec (unflatten checks the structure: kinds, sizes, field names).
struct any_leaf {
  template <class T>
  explicit operator T() const {
    return T{};
  }
};

template <class P>
std::string typed_mismatch(const exported_program& ep, const std::vector<specialized_number>& scalars, bool typed) {
  using inputs = rebind_tree_t<typename P::input_types, tensor_spec>;
  using outputs = rebind_tree_t<typename P::output_type, tensor_spec>;
  std::string why;
  const auto say = [&](auto&& f) {
    if (why.empty()) {
      string_writer w{why};
      f(w);
    }
  };
  auto build = [&]<class T>(std::type_identity<T>, const tree_spec& spec, std::string_view which) -> std::optional<T> {
    try {
      return unflatten<T>(spec, std::vector<any_leaf>(spec.num_leaves()));
    } catch (const tree_error& e) {
      say([&](auto& w) {
        w.put("the "); w.put(which); w.put(" have the structure "); w.put(spec.to_string()); w.put(" in the archive, which the type's do not have (");
        w.put(e.what()); w.put(')');
      });
      return std::nullopt;
    }
  };
  const ir::graph& g = ep.graph();
  const auto dims_differ = [&](const ir::tensor_meta& m, const auto& spec_leaf) -> std::string {
    using L = std::remove_cvref_t<decltype(spec_leaf)>;
    using S = typename L::shape_type;
    if (m.scalar_type != L::dtype_type::value) return "dtype";
    if (m.rank() != S::rank) return "rank";
    std::string d;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      [[maybe_unused]] auto one = [&]<std::size_t D>(std::integral_constant<std::size_t, D>) {
        using X = typename S::template dim_t<D>;
        const ir::sym_expr& e = m.shape[D];
        bool same = true;
        if constexpr (is_static_dim_v<X>) {
          same = e.value() == std::optional<index_t>(X::value);
        } else if constexpr (is_symbolic_dim_v<X>) {
          same = e.is_symbol() && e.name() == X::name.view();
        } else if constexpr (is_derived_dim_v<X>) {
          // (as the type spells it, or as the graph does: a sum whose terms cancel is simplified there)
          std::string text;
          string_writer tw{text};
          X::write_type(tw, 0);
          ir::symbol_namer namer;
          same = e.to_string() == text || e == ir::to_sym_expr<X>(namer);
        } else {
          same = !e.is_constant();
        }
        if (!same && d.empty()) d = with_number("dim ", static_cast<long long>(D));
      };
      (one(std::integral_constant<std::size_t, K>{}), ...);
    }(std::make_index_sequence<S::rank>{});
    return d;
  };
  // the inputs: structure, then every tensor leaf against its placeholder, every symbol's range
  if (const auto in = build(std::type_identity<inputs>{}, ep.in_spec(), "inputs")) {
    const std::vector<ir::node_id> user = ep.user_inputs();
    std::size_t k = 0, numbers = 0;
    for_each_leaf(*in, [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (std::is_arithmetic_v<L>) {
        ++numbers;
      } else {
        if (k >= user.size()) return;
        const ir::node& ph = g[user[k++]];
        const ir::tensor_meta& m = ph.vals.front();
        if (const std::string d = dims_differ(m, leaf); !d.empty()) {
          say([&](auto& w) {
            w.put("input '"); w.put(ph.name); w.put("' is "); w.put(m.to_string()); w.put(" in the archive, but the type expects ");
            L::write_type(w); w.put(" ("); w.put(d); w.put(" differs)");
          });
        }
        [&]<std::size_t... K>(std::index_sequence<K...>) {
          [[maybe_unused]] auto range = [&]<class X>(std::type_identity<X>) {
            if constexpr (is_symbolic_dim_v<X>) {
              const value_range* r = ep.ranges().find(X::name.view());
              if (r == nullptr || r->lo != X::lo || r->hi != X::hi) {
                say([&](auto& w) {
                  w.put("symbol '"); w.put(X::name.view()); w.put("' has the range "); w.put(r ? r->to_string() : std::string("(none)"));
                  w.put(" in the archive, but the type declares "); w.put(value_range{X::lo, X::hi}.to_string());
                });
              }
            }
          };
          (range(std::type_identity<typename L::shape_type::template dim_t<K>>{}), ...);
        }(std::make_index_sequence<L::shape_type::rank>{});
      }
    });
    if (k != user.size()) {
      say([&](auto& w) {
        w.put("the archive's program takes "); w.put_int(static_cast<long long>(user.size())); w.put(" tensor inputs, the type ");
        w.put_int(static_cast<long long>(k));
      });
    }
    if (numbers != 0 && !typed) {
      say([&](auto& w) {
        w.put("the type takes "); w.put_int(static_cast<long long>(numbers));
        w.put(" number inputs, whose exported values an untyped archive does not record (save the typed program)");
      });
    } else if (typed && numbers != scalars.size()) {
      say([&](auto& w) {
        w.put("the archive's program specialized "); w.put_int(static_cast<long long>(scalars.size()));
        w.put(" number inputs, the type has "); w.put_int(static_cast<long long>(numbers));
      });
    }
  }
  // the outputs: structure, then every leaf against the value the program returns
  if (const auto out = build(std::type_identity<outputs>{}, ep.out_spec(), "outputs")) {
    const std::vector<std::string> names = ep.signature().user_outputs();
    std::size_t k = 0;
    for_each_leaf(*out, [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (!std::is_arithmetic_v<L>) {
        if (k >= names.size()) return;
        const std::string& name = names[k++];
        for (const ir::node& n : g.nodes()) {
          if (n.name != name || n.vals.empty()) continue;
          if (const std::string d = dims_differ(n.vals.front(), leaf); !d.empty()) {
            say([&](auto& w) {
              w.put("output '"); w.put(name); w.put("' is "); w.put(n.vals.front().to_string()); w.put(" in the archive, but the type returns ");
              L::write_type(w); w.put(" ("); w.put(d); w.put(" differs)");
            });
          }
        }
      }
    });
  }
  return why;
}
}  // namespace detail

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/ops/all.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <unordered_map>

namespace typex::detail::archive_json {
using json = nlohmann::ordered_json;

inline constexpr std::string_view format_name = "typex.exported_program";
inline constexpr std::string_view constants_prefix = "constants/";
inline constexpr std::string_view examples_prefix = "example_inputs/";

constexpr std::string_view dim_op_names[] = {"add", "sub", "mul", "floordiv", "ceildiv", "max", "bcast"};
constexpr std::string_view node_op_names[] = {"placeholder", "call_function", "output"};
constexpr std::string_view input_kind_names[] = {"USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR"};
constexpr std::string_view output_kind_names[] = {"USER_OUTPUT", "LOSS_OUTPUT", "BUFFER_MUTATION", "GRADIENT_TO_PARAMETER",
                                                  "GRADIENT_TO_USER_INPUT", "USER_INPUT_MUTATION"};
constexpr std::string_view tree_kind_names[] = {"leaf", "tuple", "pair", "array", "optional", "list", "struct"};
constexpr std::string_view number_kind_names[] = {"bool", "int", "uint", "float"};

// ---- writing
inline json sym(const ir::sym_expr& e) {
  switch (e.what()) {
    case ir::sym_expr::kind::constant: return *e.value();
    case ir::sym_expr::kind::symbol: return std::string(e.name());
    case ir::sym_expr::kind::op: break;
  }
  return json{{"op", dim_op_names[static_cast<std::size_t>(e.op())]}, {"lhs", sym(e.lhs())}, {"rhs", sym(e.rhs())}};
}

inline json real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;  // (written with the digits that read back as the same double)
}

inline json meta(const ir::tensor_meta& m) {
  json shape = json::array();
  for (const auto& e : m.shape) shape.push_back(sym(e));
  return json{{"dtype", std::string(name(m.scalar_type))}, {"shape", std::move(shape)}};
}

inline json tree(const tree_spec& t) {
  json j{{"kind", tree_kind_names[static_cast<std::size_t>(t.kind())]}};
  if (t.is_leaf()) return j;
  if (!t.type_name().empty()) j["type"] = t.type_name();
  if (!t.keys().empty()) j["keys"] = t.keys();
  json children = json::array();
  for (const auto& c : t.children()) children.push_back(tree(c));
  j["children"] = std::move(children);
  return j;
}

struct writer {
  const ir::graph& g;

  json ref(ir::value_ref r) const { return json{{"node", g[r.node].name}, {"output", r.index}}; }

  json arg(const ir::argument& a) const {
    return std::visit(
        [&](const auto& v) -> json {
          using V = std::remove_cvref_t<decltype(v)>;
          if constexpr (std::is_same_v<V, ir::value_ref>) return ref(v);
          else if constexpr (std::is_same_v<V, ir::none_t>) return nullptr;
          else if constexpr (std::is_same_v<V, bool>) return v;
          else if constexpr (std::is_same_v<V, std::int64_t>) return json{{"int", v}};
          else if constexpr (std::is_same_v<V, double>) return json{{"float", real(v)}};
          else if constexpr (std::is_same_v<V, std::string>) return json{{"str", v}};
          else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) return json{{"ints", v}};
          else if constexpr (std::is_same_v<V, std::vector<ir::value_ref>>) {
            json l = json::array();
            for (const auto& r : v) l.push_back(ref(r));
            return json{{"nodes", std::move(l)}};
          } else if constexpr (std::is_same_v<V, ir::sym_expr>) return json{{"sym", sym(v)}};
          else if constexpr (std::is_same_v<V, dtype>) return json{{"dtype", std::string(name(v))}};
          else {
            json l = json::array();
            for (const auto& e : v) l.push_back(sym(e));
            return json{{"syms", std::move(l)}};
          }
        },
        a);
  }

  json node(const ir::node& n) const {
    json j{{"name", n.name}, {"op", node_op_names[static_cast<std::size_t>(n.op)]}};
    if (n.op == ir::node_op::call_function) j["target"] = std::string(n.target.name());
    json args = json::array();
    for (const auto& a : n.args) args.push_back(arg(a));
    j["args"] = std::move(args);
    if (!n.kwargs.empty()) {
      json kw = json::array();
      for (const auto& [k, v] : n.kwargs) kw.push_back(json::array({k, arg(v)}));
      j["kwargs"] = std::move(kw);
    }
    json vals = json::array();
    for (const auto& m : n.vals) vals.push_back(meta(m));
    j["vals"] = std::move(vals);
    if (!n.nn_module_stack.empty()) {
      json st = json::array();
      for (const auto& f : n.nn_module_stack)  // ([path, type, call] for a call after the first: "fc@1")
        st.push_back(f.call.empty() || f.call == f.path ? json::array({f.path, f.type}) : json::array({f.path, f.type, f.call}));
      j["nn_module_stack"] = std::move(st);
    }
    if (!n.stack_trace.empty()) j["stack_trace"] = n.stack_trace;
    if (!n.derived_from.empty()) j["derived_from"] = n.derived_from;
    return j;
  }

  // {"nodes": [...]} and, for a graph with control flow, "subgraphs": [{"name", "graph"}, ...]
  static json whole(const ir::graph& g) {
    const writer w{g};
    json nodes = json::array();
    for (const auto& n : g.nodes()) nodes.push_back(w.node(n));
    json out{{"nodes", std::move(nodes)}};
    if (!g.subgraphs().empty()) {
      json subs = json::array();
      for (const auto& sub : g.subgraphs()) subs.push_back(json{{"name", sub.name}, {"graph", whole(*sub.body)}});
      out["subgraphs"] = std::move(subs);
    }
    return out;
  }
};

// The description, and the tensors it names (each storage once: tied tensors share a key).
struct described {
  json program;
  named_tensors tensors;
};

inline described describe(const exported_program& ep, const std::vector<specialized_number>* scalars) {
  described d;
  json& p = d.program;
  p["graph"] = writer::whole(ep.graph());
  json ins = json::array(), outs = json::array();
  for (const auto& s : ep.signature().input_specs()) {
    json j{{"kind", input_kind_names[static_cast<std::size_t>(s.kind)]}, {"arg", s.arg}};
    if (!s.target.empty()) j["target"] = s.target;
    if (s.kind == input_kind::buffer) j["persistent"] = s.persistent;
    ins.push_back(std::move(j));
  }
  for (const auto& s : ep.signature().output_specs()) {
    json j{{"kind", output_kind_names[static_cast<std::size_t>(s.kind)]}, {"arg", s.arg}};
    if (!s.target.empty()) j["target"] = s.target;
    outs.push_back(std::move(j));
  }
  p["signature"] = json{{"inputs", std::move(ins)}, {"outputs", std::move(outs)}};
  // tensors: a storage seen before (same bytes, dtype and extents) reuses its key
  struct seen_tensor {
    const std::byte* data;
    dtype scalar_type;
    std::vector<index_t> extents;
    std::string key;
  };
  std::vector<seen_tensor> seen;
  auto key_of = [&](const any_tensor& t, std::string key) -> std::string {
    t.check_storage("typex::save: tensor '" + key + "'");
    if (t.nbytes() != 0)
      for (const auto& s : seen)
        if (s.data == t.raw_data() && s.scalar_type == t.scalar_type() && s.extents == t.extents()) return s.key;
    d.tensors.insert(key, t);
    seen.push_back({t.raw_data(), t.scalar_type(), t.extents(), key});
    return key;
  };
  auto table = [&](const named_tensors& from, std::string_view prefix) {
    json l = json::array();
    for (const auto& [name, t] : from) l.push_back(json{{"name", name}, {"tensor", key_of(t, std::string(prefix) + name)}});
    return l;
  };
  p["state_dict"] = table(ep.state_dict(), "");
  p["constants"] = table(ep.constants(), constants_prefix);
  json examples = json::array();
  for (std::size_t i = 0; i < ep.example_inputs().size(); ++i)
    examples.push_back(key_of(ep.example_inputs()[i], std::string(examples_prefix) + std::to_string(i)));
  p["example_inputs"] = std::move(examples);
  json ranges = json::array();
  for (const auto& [sym_name, r] : ep.ranges().entries()) {
    json j{{"symbol", sym_name}, {"min", r.lo}};
    if (r.hi >= int_oo) j["max"] = "int_oo";
    else j["max"] = r.hi;
    if (ep.ranges().is_unbacked(sym_name)) j["unbacked"] = true;
    ranges.push_back(std::move(j));
  }
  p["range_constraints"] = std::move(ranges);
  json calls = json::array();
  for (const auto& c : ep.module_call_graph()) {
    json j{{"fqn", c.fqn}};
    if (c.signature) {
      j["signature"] = json{{"inputs", c.signature->inputs}, {"outputs", c.signature->outputs}, {"in_spec", tree(c.signature->in_spec)},
                            {"out_spec", tree(c.signature->out_spec)}};
    } else {
      j["signature"] = nullptr;
    }
    if (!c.writes.empty()) {
      json w = json::array();
      for (const buffer_write& b : c.writes) w.push_back(json::array({b.buffer, b.value}));
      j["writes"] = std::move(w);
    }
    if (c.preserved) j["preserved"] = true;
    calls.push_back(std::move(j));
  }
  p["module_call_graph"] = std::move(calls);
  if (scalars != nullptr) {
    json l = json::array();
    for (const auto& n : *scalars) {
      json j{{"kind", number_kind_names[static_cast<std::size_t>(n.k)]}};
      switch (n.k) {
        case specialized_number::kind::boolean: j["value"] = n.i != 0; break;
        case specialized_number::kind::signed_integer: j["value"] = n.i; break;
        case specialized_number::kind::unsigned_integer: j["value"] = n.u; break;
        case specialized_number::kind::floating: j["value"] = real(n.d); j["bits"] = std::to_string(std::bit_cast<std::uint64_t>(n.d)); break;
      }
      l.push_back(std::move(j));
    }
    p["specialized_numbers"] = std::move(l);
  }
  return d;
}

inline string_pairs metadata_of(const json& program) {
  std::string version = std::to_string(archive_format_version.major) + "." + std::to_string(archive_format_version.minor);
  return {{"format", std::string(format_name)}, {"typex.format_version", std::move(version)}, {"typex.program", program.dump()}};
}

// ---- reading: every field checked, every failure a format_error naming where it is
class reader {
 public:
  explicit reader(std::string_view source) : source_(source) {}

  template <class F>
    requires(!std::is_convertible_v<F, std::string_view>)
  [[noreturn]] void fail(std::string_view where, F&& what) const {
    bad_file(source_, [&](auto& w) {
      w.put("the program description: "); w.put(where); w.put(": "); what(w);
    });
  }
  [[noreturn]] void fail(std::string_view where, std::string_view what) const {
    fail(where, [&](auto& w) { w.put(what); });
  }

  const json& field(const json& obj, std::string_view key, std::string_view where) const {
    if (!obj.is_object()) fail(where, "expected an object");
    const auto it = obj.find(key);
    if (it == obj.end()) fail(where, [&](auto& w) { w.put("no '"); w.put(key); w.put("' field"); });
    return *it;
  }
  const json* optional_field(const json& obj, std::string_view key, std::string_view where) const {
    if (!obj.is_object()) fail(where, "expected an object");
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  const json& array(const json& j, std::string_view where) const {
    if (!j.is_array()) fail(where, "expected a list");
    return j;
  }
  std::string string(const json& j, std::string_view where) const {
    if (!j.is_string()) fail(where, "expected a string");
    return j.get<std::string>();
  }
  std::int64_t integer(const json& j, std::string_view where) const {
    if (!j.is_number_integer() || (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      fail(where, "expected an integer (64-bit, signed)");
    return j.get<std::int64_t>();
  }
  bool boolean(const json& j, std::string_view where) const {
    if (!j.is_boolean()) fail(where, "expected true or false");
    return j.get<bool>();
  }
  double real(const json& j, std::string_view where) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
      const std::string s = j.get<std::string>();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    fail(where, "expected a number, \"inf\", \"-inf\" or \"nan\"");
  }
  template <std::size_t N>
  std::size_t one_of(const json& j, const std::string_view (&names)[N], std::string_view where) const {
    const std::string s = string(j, where);
    for (std::size_t i = 0; i < N; ++i)
      if (names[i] == s) return i;
    fail(where, [&](auto& w) {
      w.put("'"); w.put(s); w.put("' is none of");
      for (const auto& n : names) { w.put(' '); w.put(n); }
    });
  }
  dtype scalar_type(const json& j, std::string_view where) const {
    const std::string s = string(j, where);
    for (const dtype d : all_dtypes)
      if (name(d) == s) return d;
    fail(where, [&](auto& w) { w.put("unknown dtype '"); w.put(s); w.put('\''); });
  }

  ir::sym_expr sym(const json& j, std::string_view where) const {
    if (j.is_number_integer()) return ir::sym_expr(integer(j, where));
    if (j.is_string()) {
      const std::string s = j.get<std::string>();
      if (s.empty()) fail(where, "a symbol with an empty name");
      return ir::sym_expr::symbol(s);
    }
    if (!j.is_object()) fail(where, "expected a symbolic integer (an integer, a symbol's name or {op, lhs, rhs})");
    const auto op = static_cast<dim_op>(one_of(field(j, "op", where), dim_op_names, where));
    return ir::sym_expr::apply(op, sym(field(j, "lhs", where), where), sym(field(j, "rhs", where), where));
  }

  ir::tensor_meta meta(const json& j, std::string_view where) const {
    ir::tensor_meta m;
    m.scalar_type = scalar_type(field(j, "dtype", where), where);
    for (const json& e : array(field(j, "shape", where), where)) m.shape.push_back(sym(e, where));
    return m;
  }

  tree_spec tree(const json& j, std::string_view where) const {
    const auto kind = static_cast<node_kind>(one_of(field(j, "kind", where), tree_kind_names, where));
    if (kind == node_kind::leaf) return tree_spec::leaf();
    std::string type;
    if (const json* t = optional_field(j, "type", where)) type = string(*t, where);
    std::vector<std::string> keys;
    if (const json* k = optional_field(j, "keys", where))
      for (const json& x : array(*k, where)) keys.push_back(string(x, where));
    std::vector<tree_spec> children;
    for (const json& c : array(field(j, "children", where), where)) children.push_back(tree(c, where));
    if (!keys.empty() && keys.size() != children.size()) fail(where, "a tree node with a different number of keys and children");
    return tree_spec::node(kind, std::move(type), std::move(keys), std::move(children));
  }

  std::vector<std::string> strings(const json& j, std::string_view where) const {
    std::vector<std::string> out;
    for (const json& x : array(j, where)) out.push_back(string(x, where));
    return out;
  }

 private:
  std::string_view source_;
};

struct graph_reader {
  const reader& r;
  ir::graph g;
  std::unordered_map<std::string, ir::node_id> ids;

  ir::value_ref ref(const json& j, std::string_view where) const {
    const std::string n = r.string(r.field(j, "node", where), where);
    const auto it = ids.find(n);
    if (it == ids.end()) r.fail(where, [&](auto& w) { w.put("reads '"); w.put(n); w.put("', which no earlier node defines"); });
    const std::int64_t k = r.integer(r.field(j, "output", where), where);
    if (k < 0 || static_cast<std::size_t>(k) >= g[it->second].vals.size()) {
      r.fail(where, [&](auto& w) { w.put("reads output "); w.put_int(k); w.put(" of '"); w.put(n); w.put("', which has no such output"); });
    }
    return ir::value_ref{it->second, static_cast<std::uint32_t>(k)};
  }

  ir::argument arg(const json& j, std::string_view where) const {
    if (j.is_null()) return ir::none_t{};
    if (j.is_boolean()) return j.get<bool>();
    if (!j.is_object() || j.size() == 0) r.fail(where, "an argument is null, true, false or an object with one tag (node, int, float, str, ints, nodes, sym, dtype, syms)");
    if (j.contains("node")) return ref(j, where);
    if (j.size() != 1) r.fail(where, "an argument object has one tag");
    const auto first = j.begin();  // (not items(): its proxy is a temporary the binding would outlive)
    const std::string tag = first.key();
    const json& v = first.value();
    if (tag == "int") return r.integer(v, where);
    if (tag == "float") return r.real(v, where);
    if (tag == "str") return r.string(v, where);
    if (tag == "ints") {
      std::vector<std::int64_t> l;
      for (const json& x : r.array(v, where)) l.push_back(r.integer(x, where));
      return l;
    }
    if (tag == "nodes") {
      std::vector<ir::value_ref> l;
      for (const json& x : r.array(v, where)) l.push_back(ref(x, where));
      return l;
    }
    if (tag == "sym") return r.sym(v, where);
    if (tag == "dtype") return r.scalar_type(v, where);
    if (tag == "syms") {
      std::vector<ir::sym_expr> l;
      for (const json& x : r.array(v, where)) l.push_back(r.sym(x, where));
      return l;
    }
    r.fail(where, [&](auto& w) { w.put("unknown argument tag '"); w.put(tag); w.put('\''); });
  }

  void node(const json& j, std::size_t index) {
    std::string where = "graph node " + std::to_string(index);
    const std::string name = r.string(r.field(j, "name", where), where);
    where += " ('" + name + "')";
    const auto op = static_cast<ir::node_op>(r.one_of(r.field(j, "op", where), node_op_names, where));
    std::vector<ir::argument> args;
    for (const json& a : r.array(r.field(j, "args", where), where)) args.push_back(arg(a, where + ": args"));
    std::vector<std::pair<std::string, ir::argument>> kwargs;
    if (const json* kw = r.optional_field(j, "kwargs", where)) {
      for (const json& p : r.array(*kw, where)) {
        if (!p.is_array() || p.size() != 2) r.fail(where, "a kwarg is a list [name, argument]");
        kwargs.emplace_back(r.string(p[0], where), arg(p[1], where + ": kwargs"));
      }
    }
    std::vector<ir::tensor_meta> vals;
    for (const json& m : r.array(r.field(j, "vals", where), where)) vals.push_back(r.meta(m, where + ": vals"));
    std::vector<ir::module_frame> stack;
    if (const json* st = r.optional_field(j, "nn_module_stack", where)) {
      for (const json& f : r.array(*st, where)) {
        if (!f.is_array() || (f.size() != 2 && f.size() != 3)) r.fail(where, "an nn_module_stack frame is a list [path, type] or [path, type, call]");
        std::string path = r.string(f[0], where);
        std::string call = f.size() == 3 ? r.string(f[2], where) : path;
        stack.push_back({std::move(path), r.string(f[1], where), std::move(call)});
      }
    }
    std::string trace;
    if (const json* t = r.optional_field(j, "stack_trace", where)) trace = r.string(*t, where);
    std::vector<std::string> derived;
    if (const json* d = r.optional_field(j, "derived_from", where)) derived = r.strings(*d, where);
    ir::node_id id = 0;
    switch (op) {
      case ir::node_op::placeholder:
        if (vals.size() != 1 || !args.empty()) r.fail(where, "a placeholder has no arguments and one value");
        id = derived.empty() && trace.empty() ? g.add_placeholder(name, std::move(vals.front()))
                                              : g.add_derived_placeholder(name, std::move(vals.front()), std::move(derived), std::move(trace));
        break;
      case ir::node_op::call_function: {
        const std::string target = r.string(r.field(j, "target", where), where);
        op_id found = target == op_id_of<ir::assert_shape_op>.name() ? op_id_of<ir::assert_shape_op> : find_op(target);
        if (!found) found = ir::find_control_flow_op(target);
        if (!found) {
          r.fail(where, [&](auto& w) {
            w.put("op '"); w.put(target); w.put("' is not one this program knows (a user-defined op: register it with typex::register_op<Op>() before loading)");
          });
        }
        if (found == op_id_of<ir::assert_shape_op>) {  // (read back as the exported program reads them)
          relation rel{};
          if (args.size() != 4 || !std::holds_alternative<ir::sym_expr>(args[0]) || !std::holds_alternative<std::string>(args[1]) ||
              !std::holds_alternative<ir::sym_expr>(args[2]) || !std::holds_alternative<std::string>(args[3]) ||
              !parse_relation(std::get<std::string>(args[1]), rel))
            r.fail(where, "a run-time assertion's arguments are (sym, relation, sym, str)");
        }
        id = g.add_call({.target = found, .args = std::move(args), .kwargs = std::move(kwargs), .vals = std::move(vals), .name_hint = name,
                         .nn_module_stack = std::move(stack), .stack_trace = std::move(trace)});
        break;
      }
      case ir::node_op::output: {
        std::vector<ir::value_ref> outs;
        for (const auto& a : args) {
          const auto* ref = std::get_if<ir::value_ref>(&a);
          if (ref == nullptr) r.fail(where, "the output node returns nodes' values only");
          outs.push_back(*ref);
        }
        id = g.set_output(std::move(outs));
        break;
      }
    }
    if (g[id].name != name) {
      r.fail(where, [&](auto& w) {
        w.put("the name '"); w.put(name); w.put("' is not a unique identifier ([A-Za-z_][A-Za-z0-9_]*, once per graph; 'output' is the output node's)");
      });
    }
    ids.emplace(name, id);
  }

  // A graph's nodes, then its subgraphs (each read the same way, before the nodes that name them
  // are checked by the verifier).
  static ir::graph whole(const reader& r, const json& j, const std::string& where) {
    graph_reader gr{r, {}, {}};
    if (const json* subs = r.optional_field(j, "subgraphs", where)) {
      for (const json& sj : r.array(*subs, where + ".subgraphs")) {
        const std::string name = r.string(r.field(sj, "name", where + ".subgraphs"), where + ".subgraphs");
        const std::string inner = where + ".subgraphs['" + name + "']";
        ir::graph sub = whole(r, r.field(sj, "graph", inner), inner);
        if (!sub.has_output()) r.fail(inner, "no output node");
        try {
          gr.g.add_subgraph_named(name, std::make_shared<const ir::graph>(std::move(sub)));
        } catch (const ir::graph_error&) {
          r.fail(inner, "the name is not an identifier, or is used twice");
        }
      }
    }
    const json& nodes = r.array(r.field(j, "nodes", where), where + ".nodes");
    std::size_t i = 0;
    for (const json& n : nodes) gr.node(n, i++);
    return std::move(gr.g);
  }
};

inline std::pair<int, int> parse_version(const reader& r, std::string_view text) {
  int major = 0, minor = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, major);
  if (ec != std::errc{} || p == end || *p != '.') r.fail("typex.format_version", "expected \"major.minor\"");
  auto [q, ec2] = std::from_chars(p + 1, end, minor);
  if (ec2 != std::errc{} || q != end || major < 0 || minor < 0) r.fail("typex.format_version", "expected \"major.minor\"");
  return {major, minor};
}
}  // namespace typex::detail::archive_json

TYPEX_API auto typex::detail::save_archive(const exported_program& ep, const std::vector<specialized_number>* scalars,
                                           const std::filesystem::path& path) -> void {
  const archive_json::described d = archive_json::describe(ep, scalars);
  save_safetensors(path, d.tensors, archive_json::metadata_of(d.program));
}

TYPEX_API auto typex::detail::archive_bytes(const exported_program& ep, const std::vector<specialized_number>* scalars) -> std::vector<std::byte> {
  const archive_json::described d = archive_json::describe(ep, scalars);
  return to_safetensors(d.tensors, archive_json::metadata_of(d.program));
}

TYPEX_API auto typex::describe_archive(const exported_program& ep) -> std::string {
  return detail::archive_json::describe(ep, nullptr).program.dump(2);
}

TYPEX_API auto typex::detail::read_archive(const safetensors_file& file) -> loaded_archive {
  using namespace archive_json;
  const reader r(file.source());
  const auto format = file.metadata("format");
  const auto version_text = file.metadata("typex.format_version");
  if (format != std::optional<std::string_view>(format_name) || !version_text) {
    bad_file(file.source(), [&](auto& w) {
      w.put("a safetensors file, but not a typex program archive (its metadata has no format \"typex.exported_program\" and "
            "typex.format_version); read its tensors with typex::load_safetensors");
    });
  }
  const auto [major, minor] = parse_version(r, *version_text);
  if (major > archive_format_version.major) {
    raise<unsupported_error>([&](auto& w) {
      w.put("typex: "); w.put(file.source()); w.put(": the archive's format version is "); w.put(*version_text);
      w.put(", newer than this typex reads ("); w.put_int(archive_format_version.major); w.put(".x and older): load it with a newer typex");
    });
  }
  const auto text = file.metadata("typex.program");
  if (!text) r.fail("metadata", "no typex.program");
  if (!json_depth_within(*text, 256)) r.fail("typex.program", "nests deeper than 256 levels");
  json p;
  try {
    p = json::parse(*text);
  } catch (const json::exception& e) {
    r.fail("typex.program", [&](auto& w) { w.put("not valid JSON: "); w.put(e.what()); });
  }
  if (!p.is_object()) r.fail("typex.program", "expected an object");
  try {
    graph_reader gr{r, graph_reader::whole(r, r.field(p, "graph", "graph"), "graph"), {}};
    if (!gr.g.has_output()) r.fail("graph", "no output node");
    // signature
    const json& sig = r.field(p, "signature", "signature");
    std::vector<input_spec> ins;
    std::vector<output_spec> outs;
    for (const json& s : r.array(r.field(sig, "inputs", "signature"), "signature.inputs")) {
      input_spec x;
      x.kind = static_cast<input_kind>(r.one_of(r.field(s, "kind", "signature input"), input_kind_names, "signature input"));
      x.arg = r.string(r.field(s, "arg", "signature input"), "signature input");
      if (const json* t = r.optional_field(s, "target", "signature input")) x.target = r.string(*t, "signature input");
      if (const json* ps = r.optional_field(s, "persistent", "signature input")) x.persistent = r.boolean(*ps, "signature input");
      ins.push_back(std::move(x));
    }
    for (const json& s : r.array(r.field(sig, "outputs", "signature"), "signature.outputs")) {
      output_spec x;
      x.kind = static_cast<output_kind>(r.one_of(r.field(s, "kind", "signature output"), output_kind_names, "signature output"));
      x.arg = r.string(r.field(s, "arg", "signature output"), "signature output");
      if (const json* t = r.optional_field(s, "target", "signature output")) x.target = r.string(*t, "signature output");
      outs.push_back(std::move(x));
    }
    // tensors, by key (a key named twice shares its tensor: tied weights stay tied)
    std::unordered_map<std::string, any_tensor> by_key;
    auto tensor = [&](const std::string& key, std::string_view where) -> any_tensor {
      if (const auto it = by_key.find(key); it != by_key.end()) return it->second;
      if (!file.contains(key)) r.fail(where, [&](auto& w) { w.put("names the tensor '"); w.put(key); w.put("', which the file does not hold"); });
      any_tensor t = file.tensor(key);
      by_key.emplace(key, t);
      return t;
    };
    auto table = [&](std::string_view what) {
      named_tensors out;
      for (const json& e : r.array(r.field(p, what, what), what)) {
        const std::string name = r.string(r.field(e, "name", what), what);
        if (out.contains(name)) r.fail(what, [&](auto& w) { w.put("names '"); w.put(name); w.put("' twice"); });
        out.insert(name, tensor(r.string(r.field(e, "tensor", what), what), what));
      }
      return out;
    };
    named_tensors state = table("state_dict");
    named_tensors constants = table("constants");
    std::vector<any_tensor> examples;
    if (const json* ex = r.optional_field(p, "example_inputs", "example_inputs"))
      for (const json& k : r.array(*ex, "example_inputs")) examples.push_back(tensor(r.string(k, "example_inputs"), "example_inputs"));
    // range constraints
    range_constraints ranges;
    for (const json& e : r.array(r.field(p, "range_constraints", "range_constraints"), "range_constraints")) {
      const std::string s = r.string(r.field(e, "symbol", "range_constraints"), "range_constraints");
      value_range v;
      v.lo = r.integer(r.field(e, "min", "range_constraints"), "range_constraints");
      const json& hi = r.field(e, "max", "range_constraints");
      v.hi = hi.is_string() && hi.get<std::string>() == "int_oo" ? int_oo : r.integer(hi, "range_constraints");
      if (v.lo > v.hi) r.fail("range_constraints", [&](auto& w) { w.put("symbol '"); w.put(s); w.put("' has an empty range "); w.put(v.to_string()); });
      if (ranges.find(s) != nullptr) r.fail("range_constraints", [&](auto& w) { w.put("symbol '"); w.put(s); w.put("' is listed twice"); });
      const json* u = r.optional_field(e, "unbacked", "range_constraints");
      if (u != nullptr && r.boolean(*u, "range_constraints")) ranges.add_unbacked(s, v);
      else ranges.add(s, v);
    }
    // module call graph
    std::vector<module_call_entry> calls;
    for (const json& c : r.array(r.field(p, "module_call_graph", "module_call_graph"), "module_call_graph")) {
      module_call_entry e;
      e.fqn = r.string(r.field(c, "fqn", "module_call_graph"), "module_call_graph");
      const std::string where = "module_call_graph entry '" + e.fqn + "'";
      if (const json* s = r.optional_field(c, "signature", where)) {
        module_call_signature m;
        m.inputs = r.strings(r.field(*s, "inputs", where), where);
        m.outputs = r.strings(r.field(*s, "outputs", where), where);
        m.in_spec = r.tree(r.field(*s, "in_spec", where), where + ": in_spec");
        m.out_spec = r.tree(r.field(*s, "out_spec", where), where + ": out_spec");
        e.signature = std::move(m);
      }
      if (const json* w = r.optional_field(c, "writes", where)) {
        for (const json& b : r.array(*w, where)) {
          if (!b.is_array() || b.size() != 2) r.fail(where, "a buffer write is a list [buffer, value]");
          e.writes.push_back({r.string(b[0], where), r.string(b[1], where)});
        }
      }
      if (const json* pr = r.optional_field(c, "preserved", where)) e.preserved = r.boolean(*pr, where);
      if (e.preserved && !e.signature) r.fail(where, "a preserved call has a signature");
      calls.push_back(std::move(e));
    }
    // Every node's recorded dtype and shape are checked here, at load time, against its op's rule
    // (the verifier that exported_program runs: a lying record is a graph_error naming the node).
    // A program whose every op has a rule is then trusted; one with an op that has none (a user op
    // that declares no `infer`), or with a data-dependent result (whose dim 0 no rule can check), is
    // not: the backend checks its first call per shape step by step.
    bool every_rule = true;
    for (const ir::node& n : gr.g.nodes()) {
      if (n.op != ir::node_op::call_function) continue;
      const ir::op_description* d = ir::find_description(n.target);
      every_rule = every_rule && d != nullptr && d->infer != nullptr && !d->traits.data_dependent;
    }
    loaded_archive out{exported_program(std::move(gr.g), graph_signature(std::move(ins), std::move(outs)), std::move(state), std::move(constants),
                                        std::move(ranges), std::move(calls), std::move(examples)),
                       {}, false};
    out.program.set_trusted_shapes(every_rule);
    if (const json* sc = r.optional_field(p, "specialized_numbers", "specialized_numbers")) {
      out.typed = true;
      for (const json& e : r.array(*sc, "specialized_numbers")) {
        specialized_number n;
        n.k = static_cast<specialized_number::kind>(r.one_of(r.field(e, "kind", "specialized_numbers"), number_kind_names, "specialized_numbers"));
        const json& v = r.field(e, "value", "specialized_numbers");
        switch (n.k) {
          case specialized_number::kind::boolean: n.i = r.boolean(v, "specialized_numbers"); break;
          case specialized_number::kind::signed_integer: n.i = r.integer(v, "specialized_numbers"); break;
          case specialized_number::kind::unsigned_integer:
            if (!v.is_number_unsigned()) r.fail("specialized_numbers", "expected a non-negative integer");
            n.u = v.get<std::uint64_t>();
            break;
          case specialized_number::kind::floating: {
            n.d = r.real(v, "specialized_numbers");
            if (const json* bits = r.optional_field(e, "bits", "specialized_numbers")) {  // (exact: NaN payloads, -0.0)
              const std::string b = r.string(*bits, "specialized_numbers");
              std::uint64_t u = 0;
              const auto [q, ec] = std::from_chars(b.data(), b.data() + b.size(), u);
              if (ec != std::errc{} || q != b.data() + b.size()) r.fail("specialized_numbers", "bits is a decimal 64-bit integer");
              n.d = std::bit_cast<double>(u);
            }
            break;
          }
        }
        out.scalars.push_back(n);
      }
    }
    if (out.typed && out.program.in_spec().num_leaves() != out.program.user_inputs().size() + out.scalars.size())
      r.fail("specialized_numbers", "the root's in_spec has another number of number leaves than the numbers listed");
    return out;
  } catch (const format_error&) {
    throw;
  } catch (const unsupported_error&) {
    throw;
  } catch (const error& e) {  // (the graph's, the signature's or the verifier's: the description breaks the program's invariants)
    bad_file(file.source(), [&](auto& w) { w.put("the program it describes is not valid: "); w.put(e.what()); });
  }
}
#endif  // TYPEX_HEADER_DEFINITIONS
