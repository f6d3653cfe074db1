// typex/export/export_program.hpp — export_program(module, inputs...): trace a module into an
// exported_program, as torch.export.export does.
//
//   auto ep = typex::export_program(model, typex::input<"x">(tensor_spec<f32, shape<batch, fix<784>>>(...)));
//
// The module's parameters, buffers and constants are lifted to placeholders (p_/b_/c_ + FQN; a
// storage shared by several names — tied weights — is lifted once, under its first name); each
// input becomes a placeholder named by input<"name">(...) or args_<i>; the module is called on
// traced values and every op records a node; the outputs become the output node. Then the
// placeholders are ordered as torch.export orders them (parameters, buffers, constants, user
// inputs), dead code is removed, and the signature, state dict, constants, range constraints and
// module call graph are assembled. The program's verifier runs before it is returned.
//
// Inputs are tensors or tensor specs, one per argument of the module's call operator (nested input
// structures arrive with the dynamic-shapes and pytree work of the export issue); outputs may be any
// pytree of traced values.
#pragma once

#include <typex/export/exported_program.hpp>
#include <typex/export/program_module.hpp>
#include <typex/export/shape_facts.hpp>
#include <typex/ir/printer.hpp>
#include <typex/passes/dce.hpp>
#include <typex/trace/module.hpp>
#include <typex/trace/record.hpp>
#include <typex/tree/flatten.hpp>
#include <typex/tree/map.hpp>
#include <typex/tree/unflatten.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace typex {

// An input with a name for its placeholder: input<"x">(spec).
template <fixed_string Name, class T>
struct named_input {
  T value;
};
template <fixed_string Name, class T>
named_input<Name, T> input(const T& value) {
  return {value};
}

namespace detail {
template <class T> struct input_parts {
  static std::string name(std::size_t i) { return with_number("args_", static_cast<long long>(i)); }
  static const T& value(const T& v) { return v; }
};
template <fixed_string Name, class T> struct input_parts<named_input<Name, T>> {
  static std::string name(std::size_t) { return std::string(Name.view()); }
  static const T& value(const named_input<Name, T>& v) { return v.value; }
};
template <class T>
using input_tree_t = std::remove_cvref_t<decltype(input_parts<T>::value(std::declval<const T&>()))>;

// Placeholder names of a tree's leaves, in flattening order: the input's name, then the path
// (x, or x_0, x_1 for a tuple, inputs_image for a struct field), as torch.export names them.
template <class T>
void leaf_names(const T& tree, const std::string& prefix, std::vector<std::string>& out) {
  if constexpr (node_kind_of<T>() == node_kind::leaf) {
    out.push_back(prefix);
  } else {
    for_each_child(tree, [&](const auto& c, std::string_view key, std::size_t i) {
      std::string p = prefix;
      p += '_';
      if (key.empty()) p += std::to_string(i);
      else p += key;
      leaf_names(c, p, out);
    });
  }
}

// The declared range of each symbol in dim type D.
template <class D>
void add_symbol_ranges(range_constraints& ranges) {
  if constexpr (is_symbolic_dim_v<D>) {
    ranges.add<D>();
  } else if constexpr (is_derived_dim_v<D>) {
    add_symbol_ranges<typename D::lhs_type>(ranges);
    add_symbol_ranges<typename D::rhs_type>(ranges);
  }
}

// A number input leaf, as export saw it: specialized into the program, so a call must pass the same
// number. Compared exactly, in the leaf's own type: integers as integers (2^53 + 1 is not 2^53),
// floating-point by value with NaN equal to NaN (a program exported with NaN can be called with
// NaN) and -0.0 distinct from 0.0 (1 / x tells them apart).
struct specialized_number {
  enum class kind : unsigned char { boolean, signed_integer, unsigned_integer, floating };
  kind k = kind::floating;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;

  template <class L>
  static specialized_number of(L v) {
    specialized_number n;
    if constexpr (std::is_same_v<L, bool>) { n.k = kind::boolean; n.i = v; }
    else if constexpr (std::is_integral_v<L> && std::is_signed_v<L>) { n.k = kind::signed_integer; n.i = v; }
    else if constexpr (std::is_integral_v<L>) { n.k = kind::unsigned_integer; n.u = v; }
    else { n.k = kind::floating; n.d = static_cast<double>(v); }
    return n;
  }
  bool operator==(const specialized_number& o) const noexcept {
    if (k != o.k) return false;
    switch (k) {
      case kind::boolean:
      case kind::signed_integer: return i == o.i;
      case kind::unsigned_integer: return u == o.u;
      case kind::floating: return (d != d && o.d != o.d) || std::bit_cast<std::uint64_t>(d) == std::bit_cast<std::uint64_t>(o.d);
    }
    return false;
  }
  std::string to_string() const {
    switch (k) {
      case kind::boolean: return i ? "true" : "false";
      case kind::signed_integer: return std::to_string(i);
      case kind::unsigned_integer: return std::to_string(u);
      case kind::floating: {
        if (d != d) return "nan";
        if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, d);  // (shortest text that reads back as d)
        return std::string(buf, r.ptr);
      }
    }
    return {};
  }
};

// One user input: a placeholder per tensor leaf (its symbolic dims join the range constraints),
// the tree of traced values the module receives; scalar leaves are kept as they are (specialized
// into the graph, as torch.export does) and remembered for the run-time check.
template <class T>
auto trace_input(tracing_context& ctx, const T& in, std::size_t i, std::vector<std::string>& names,
                 range_constraints& ranges, std::vector<any_tensor>& examples, std::vector<specialized_number>& scalars) {
  const auto& v = input_parts<T>::value(in);
  std::vector<std::string> paths;
  leaf_names(v, input_parts<T>::name(i), paths);
  std::size_t k = 0;
  return map_tree<traced>(v, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    const std::string& path = paths[k++];
    if constexpr (std::is_arithmetic_v<L>) {
      scalars.push_back(specialized_number::of(leaf));
      return leaf;
    } else {
      static_assert(tensor_like<L>, "typex::export_program: an input leaf must be a tensor, a tensor_spec or a number");
      using DT = typename L::dtype_type;
      using S = typename L::shape_type;
      const auto spec = spec_of_argument(leaf);
      const ir::node_id ph = ctx.graph().add_placeholder(path, ctx.meta_of_type<DT, S>());
      names.push_back(ctx.graph()[ph].name);
      if constexpr (host_tensor_type<L> || module_tensor_type<L>) examples.push_back(leaf.erase());
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        auto add = [&]<class D>(std::type_identity<D>) {
          if constexpr (is_derived_dim_v<D> && is_named_dim_v<D>) {
            add_symbol_ranges<D>(ranges);  // (its roots first: {seq: VR[1, 512], 2*seq: VR[2, 1024]})
            ranges.add_derived<D>();
          } else {
            add_symbol_ranges<D>(ranges);
          }
        };
        (add(std::type_identity<typename S::template dim_t<K>>{}), ...);
        (void)add;  // (a rank-0 input: no dim)
      }(std::make_index_sequence<S::rank>{});
      return traced<DT, S>(ctx, ir::value_ref{ph}, spec.shape);
    }
  });
}
}  // namespace detail

namespace detail {
// A type in a message: a tensor as tensor<f32[batch, 784]>, anything else by its name.
template <class T, class W>
constexpr void put_tree_type(W& w) {
  if constexpr (requires { T::write_type(w); }) T::write_type(w);
  else w.put(raw_type_name<T>());
}

// A leaf as a spec (numbers stay numbers): the calling convention's structure without data.
inline constexpr auto to_spec = [](const auto& leaf) {
  if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(leaf)>>) return leaf;
  else return spec_of_argument(leaf);
};
}  // namespace detail

// An exported program that remembers its calling convention as types: In is the tuple of the
// input trees (specs or tensors), Out the tree of traced values the module returned. Its module()
// takes exactly rebind_tree_t<In, host_tensor>... and returns rebind_tree_t<Out, host_tensor>, so a
// wrong input type is a compile error. It is an exported_program (the type-erased view) too.
template <class In, class Out>
class typed_program;

namespace detail {
// An output leaf on its way into the typed output tree (unflatten casts it to each leaf's type):
// bound to that type, so a result of another dtype or shape is an error naming the output.
struct named_output {
  const any_tensor* tensor;
  const std::string* name;
  template <dtype_tag_type DT, shape_type S>
  explicit operator host_tensor<DT, S>() const {
    return host_tensor<DT, S>::bind(*tensor, *name);
  }
};
}  // namespace detail

template <class... In, class Out>
class typed_program<std::tuple<In...>, Out> : public exported_program {
 public:
  using input_types = std::tuple<In...>;  // the input trees' types (tensor specs, tensors or numbers)
  using output_type = rebind_tree_t<Out, host_tensor>;

  // `ep` with the calling convention In... -> Out: its in/out specs are the trees' structures, and
  // `scalars` the number leaves export specialized (typex::load<P> checks an archive against P first).
  typed_program(exported_program ep, std::vector<detail::specialized_number> scalars) : exported_program(std::move(ep)) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < signature().user_outputs().size(); ++i) names.push_back(output_name(*this, i));
    info_ = std::make_shared<const typed_info>(typed_info{std::move(scalars), in_spec(), out_spec(), std::move(names)});
  }

  // The numbers export specialized into the program, in input leaf order.
  const std::vector<detail::specialized_number>& specialized_numbers() const noexcept { return info_->scalars; }

 private:
  struct typed_info {
    std::vector<detail::specialized_number> scalars;
    tree_spec in_spec;
    tree_spec out_spec;
    std::vector<std::string> output_names;  // "output 'linear_1'"
  };

 public:

  // The callable typed_program::module() returns. It owns what it needs (its program_module holds
  // its own copy of the program and weights; the output prototype and the specialized numbers are
  // shared): it may outlive the typed_program it came from. Thread-safe as program_module.
  template <class Backend>
  class typed_module {
   public:
    explicit typed_module(const typed_program& p)
        : run_(p.exported_program::template module<Backend>()), info_(p.info_) {}

    output_type operator()(const rebind_tree_t<In, host_tensor>&... args) const {
      if (!info_) detail::moved_from_module();
      std::vector<any_tensor> flat;
      std::size_t k = 0, leaf = 0;
      auto one = [&](const auto& tree) {
        for_each_leaf(tree, [&](const auto& l) {
          using L = std::remove_cvref_t<decltype(l)>;
          if constexpr (std::is_arithmetic_v<L>) {
            check_scalar(k, leaf, detail::specialized_number::of(l));
            ++k;
          } else {
            flat.push_back(l.erase());
          }
          ++leaf;
        });
      };
      (one(args), ...);
      // (a static structure is fixed by the types; vectors and optionals are checked here)
      if constexpr (!is_static_tree_v<std::tuple<rebind_tree_t<In, host_tensor>...>>) check_structure(args...);
      const std::vector<any_tensor> out = run_(flat);
      if constexpr (is_static_tree_v<output_type>) {  // (the leaves on the stack: no allocation per call)
        std::array<detail::named_output, static_leaf_count_v<output_type>> leaves{};
        const std::size_t n = std::min(leaves.size(), out.size());  // (another count: unflatten names it)
        for (std::size_t i = 0; i < n; ++i) leaves[i] = {&out[i], &info_->output_names[i]};
        return unflatten<output_type>(info_->out_spec, std::span<const detail::named_output>(leaves.data(), n));
      } else {
        std::vector<detail::named_output> leaves;
        leaves.reserve(out.size());
        for (std::size_t i = 0; i < out.size(); ++i) leaves.push_back({&out[i], &info_->output_names[i]});
        return unflatten<output_type>(info_->out_spec, leaves);
      }
    }

    // Any other arguments: a compile error naming, on one line, the types the program takes and
    // the types given (instead of "no match for call" and every candidate's nested types).
    template <class... A>
      requires(!std::is_invocable_v<void (*)(const rebind_tree_t<In, host_tensor>&...), const A&...>)
    output_type operator()(const A&...) const {
      TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
        w.put("typex: the exported program takes (");
        std::size_t i = 0;
        ((w.put(i++ ? ", " : ""), detail::put_tree_type<rebind_tree_t<In, host_tensor>>(w)), ...);
        w.put(") but is called with (");
        i = 0;
        ((w.put(i++ ? ", " : ""), detail::put_tree_type<A>(w)), ...);
        w.put("); pass tensors of the exported types (a symbolic dim takes any extent in its range), or export again");
      });
      return output_type{};
    }

    // The state dict the module computes with, and new weights for it (torch's module.state_dict() /
    // load_state_dict(): program_module's rules; every later call uses them).
    named_tensors state_dict() const { return run_.state_dict(); }
    load_result load_state_dict(const named_tensors& sd, bool strict = true) { return run_.load_state_dict(sd, strict); }
    load_result load_state_dict(const named_tensors& sd, const load_options& options) { return run_.load_state_dict(sd, options); }

    // The program_module underneath (report, the program).
    const program_module<Backend>& untyped() const noexcept { return run_; }
    program_module<Backend>& untyped() noexcept { return run_; }

   private:
    void check_structure(const rebind_tree_t<In, host_tensor>&... args) const {
      const tree_spec given = spec_of(std::make_tuple(map_tree<tensor_spec>(args, detail::to_spec)...));
      if (given != info_->in_spec) {
        detail::raise<tree_error>([&](auto& w) {
          w.put("typex: the inputs have the structure "); w.put(given.to_string());
          w.put(", but the program was exported for "); w.put(info_->in_spec.to_string());
        });
      }
    }

    void check_scalar(std::size_t k, std::size_t leaf, const detail::specialized_number& v) const {
      if (v == info_->scalars[k]) return;
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex: input leaf "); w.put_int(static_cast<long long>(leaf)); w.put(" is the number ");
        w.put(v.to_string()); w.put(", but the program was exported with ");
        w.put(info_->scalars[k].to_string()); w.put(" (numbers are specialized into the program; export again for another value)");
      });
    }

    program_module<Backend> run_;
    std::shared_ptr<const typed_info> info_;
  };

  // A callable with the model's calling convention (it owns what it needs: see typed_module).
  template <class Backend = TYPEX_DEFAULT_BACKEND>
  typed_module<Backend> module() const {
    return typed_module<Backend>(*this);
  }

 private:
  static std::string output_name(const exported_program& ep, std::size_t i) {  // (i: among the user outputs)
    std::string s = "output '";
    s += ep.signature().user_outputs()[i];
    s += '\'';
    return s;
  }

  std::shared_ptr<const typed_info> info_;
};

namespace detail {
// A submodule call, named in the traced graph's terms (names survive reordering and DCE).
struct named_module_call {
  std::string fqn;
  std::vector<std::string> nodes;  // the calls recorded during it
  std::optional<std::vector<std::string>> inputs, outputs;
  tree_spec in_spec, out_spec;
};

TYPEX_API std::vector<named_module_call> name_module_calls(const ir::graph& g, const std::vector<module_call_record>& calls);

// A flat spec of n leaves: one leaf alone, a tuple otherwise.
TYPEX_API tree_spec flat_spec(std::size_t n, bool tuple_of_one);

// The module call graph: the root's entry, then one per submodule call (a module called again is
// "fqn@1", "fqn@2", ...). A call whose module did not say what it received or returned gets it
// read off the final graph: its inputs are the values its nodes read from outside it (parameters,
// buffers and constants excepted: they are the module's state), its outputs the values its nodes
// produce that something outside it reads; their specs are then flat.
TYPEX_API std::vector<module_call_entry> module_call_graph_of(const ir::graph& g, module_call_entry root,
                                                           const std::vector<named_module_call>& calls);

// A value's name as signatures write it ("linear_1", or "split[1]" for a node's second value).
TYPEX_API std::string value_name(const ir::graph& g, ir::value_ref v);
// The inputs and outputs of the calls export_options::preserve_module_call_signature names (kept by
// dead code elimination); an FQN that names no call, or a call that did not state its signature, is an error.
TYPEX_API std::vector<std::string> preserved_outputs(const std::vector<named_module_call>& calls, const export_options& options);
// Dead code elimination that also keeps the nodes `keep` names (and what they read).
TYPEX_API void eliminate_dead_code_keeping(ir::graph& g, const std::vector<std::string>& keep);
// The entries' buffer writes (those whose value is still in the graph; `write_calls[i]` is the call
// that made writes[i], "" the root) and preserved flags.
TYPEX_API void finish_module_call_graph(std::vector<module_call_entry>& calls, const ir::graph& g,
                                        const std::vector<named_module_call>& named, std::vector<buffer_write> writes,
                                        const std::vector<std::string>& write_calls, const export_options& options);
}  // namespace detail

namespace detail {
template <class F, class Tuple>
inline constexpr bool callable_with_tuple_v = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::is_invocable_v<F, const std::tuple_element_t<I, Tuple>&...>;
}(std::make_index_sequence<std::tuple_size_v<Tuple>>{});

// An error here means: the model cannot be called with the traced inputs — most often a call
// operator written for one input type (a tensor<...>) rather than as a template.
template <class M, class Traced>
constexpr auto fail_not_traceable() {
  TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
    w.put("typex::export_program: "); w.put(raw_type_name<M>());
    w.put(" cannot be called with the traced inputs ");
    w.put(raw_type_name<Traced>());
    w.put(": its call operator must be a template over its input types (template <class X> auto operator()(const X& x) "
          "const), so that it runs on tensors and is recorded on traced values");
  });
}

// The model seen as a module without members, after that error: the export goes on (one error).
template <class M>
struct unreflected_model {
  static constexpr bool numbered_children = true;
  std::tuple<> children;
  const M* model;
  template <class... A>
  auto operator()(const A&... a) const -> decltype((*model)(a...)) {
    return (*model)(a...);
  }
};
}  // namespace detail

// With options: export_program(typex::export_options{.runtime_assertions = true}, model, inputs...).
template <module_type M, class... In>
auto export_program(const export_options& options, const M& module, const In&... inputs) {
  tracing_context ctx;
  const scoped_tracing on(ctx);
  ir::graph& g = ctx.graph();

  // 1. the module's tensors, lifted once per storage, and its submodules' names
  struct lifted {
    input_kind kind;
    bool persistent;
    std::string fqn;
    ir::node_id placeholder;
    const void* storage;
  };
  std::vector<lifted> lifted_tensors;
  named_tensors state, constants;
  for_each_module_tensor(module, [&](const std::string& fqn, tensor_role role, bool persistent, const auto& t) {
    using T = std::remove_cvref_t<decltype(t)>;
    if constexpr (!T::shape_type::is_static) {  // (a run-time error naming the member: a static_assert here would
      detail::raise<argument_error>([&](auto& w) {  //  sit under the module walk's instantiation cascade)
        w.put("typex::export_program: the module's tensor '"); w.put(fqn); w.put("' has the type "); T::write_type(w);
        w.put(", with a dynamic dim: parameters, buffers and tensor members are lifted into the program with their "
              "extents, so their types must give them (declare it with typex::fix<N> extents)");
      });
    }
    const void* id = t.get_storage().data();
    if (id == nullptr) {  // (every tensor made by typex has storage, even an empty one)
      detail::raise<state_error>([&](auto& w) {
        w.put("typex::export_program: the module's tensor '"); w.put(fqn);
        w.put("' has no storage: the module (or this member) was moved from; export a module that owns its tensors");
      });
    }
    const input_kind kind = role == tensor_role::parameter ? input_kind::parameter
                            : role == tensor_role::buffer  ? input_kind::buffer
                                                           : input_kind::constant_tensor;
    if (ctx.find_storage(id) != nullptr) {  // tied: lifted under its first name only,
      if (kind == input_kind::parameter || (kind == input_kind::buffer && persistent))  // in the state dict
        state.insert(fqn, t.erase());                                                  // under every name (torch's)
      return;
    }
    const ir::node_id ph = g.add_placeholder(placeholder_name(kind, fqn), ctx.meta_of(t));
    ctx.bind_storage(id, ir::value_ref{ph});
    lifted_tensors.push_back({kind, persistent, fqn, ph, id});
    if (kind == input_kind::parameter || (kind == input_kind::buffer && persistent)) state.insert(fqn, t.erase());
    else constants.insert(fqn, t.erase());
  });
  ctx.register_module(&module, "", std::string(detail::raw_type_name<M>()));  // the root shares its first member's address
  for_each_submodule(module, [&](const std::string& fqn, const auto& sub) {
    ctx.register_module(&sub, fqn, std::string(detail::raw_type_name<std::remove_cvref_t<decltype(sub)>>()));
  });

  // 2. the user inputs
  range_constraints ranges;
  std::vector<std::string> input_names;
  std::vector<any_tensor> examples;
  std::vector<detail::specialized_number> scalars;
  const std::size_t first_user = g.size();
  auto traced_inputs = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple{detail::trace_input(ctx, inputs, I, input_names, ranges, examples, scalars)...};
  }(std::index_sequence_for<In...>{});
  const std::size_t n_user = g.size() - first_user;

  // 3. the call, then the shape facts it needed, decided against the declared ranges: a violation
  //    is raised here; the facts no range expresses become assertion nodes when asked for
  // A call operator that is not a template (it has an address) cannot take traced values: asked
  // only of those (is_invocable on a template one instantiates its body inside the standard
  // library's traits, which then fill the context lines of any error in the model).
  // (not std::apply: its noexcept test puts the standard library's traits on the context lines of
  // any error in the model; a template, so that its body is instantiated only where called)
  const auto call = [&]<class = void>() {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return module(std::get<I>(traced_inputs)...); }(
        std::index_sequence_for<In...>{});
  };
  const auto outputs = [&] {
    if constexpr (!requires { &M::operator(); }) {
      return call();
    } else if constexpr (detail::callable_with_tuple_v<const M&, decltype(traced_inputs)>) {
      return call();
    } else {
      detail::fail_not_traceable<M, decltype(traced_inputs)>();
      return std::tuple<>{};  // (after the error: the export goes on, so no second error follows from it)
    }
  }();
  for (const auto& u : ctx.unbacked()) ranges.add_unbacked(u.name, value_range{u.lo, u.hi});
  const detail::decided_facts facts = detail::decide_facts(ctx.requirements(), ranges, options, ctx.unbacked());
  std::vector<ir::node_id> assertions;
  for (const shape_requirement* r : facts.assertions) {
    assertions.push_back(g.add_call({.target = op_id_of<ir::assert_shape_op>,
                                     .args = {detail::terms_expr(r->lhs_terms), std::string(to_string(r->rel)),
                                              detail::terms_expr(r->rhs_terms), detail::fact_origin(*r)},
                                     .name_hint = "_assert_shape",
                                     .stack_trace = r->site}));
  }

  // 4. the outputs: the buffers written while tracing (their last values, in the buffers' order:
  //    torch.export's BUFFER_MUTATION outputs come first), then the user's
  std::vector<ir::value_ref> outs;
  std::vector<std::string> mutated;  // their FQNs
  for (const lifted& l : lifted_tensors) {
    for (const auto& [storage, value] : ctx.mutations()) {
      if (l.storage == nullptr || storage != l.storage) continue;  // (an empty tensor has no storage to match)
      if (l.kind != input_kind::buffer) {
        detail::raise<unsupported_error>([&](auto& w) {
          w.put("typex::export_program: the module writes to ");
          w.put(l.kind == input_kind::parameter ? "parameter '" : "constant '"); w.put(l.fqn);
          w.put("' (copy_); exported programs write to buffers only: declare it as a typex::buffer if it is state");
        });
      }
      outs.push_back(value);
      mutated.push_back(l.fqn);
    }
  }
  if (mutated.size() != ctx.mutations().size()) {
    detail::raise<unsupported_error>(
        [&](auto& w) {
          w.put("typex::export_program: the module writes (copy_) to a tensor that is not one of its buffers (a tensor "
                "captured from outside the module); make it a typex::buffer member so the program carries it");
        });
  }
  // then the user inputs written (USER_INPUT_MUTATION, in the inputs' order)
  std::vector<std::pair<ir::node_id, ir::value_ref>> input_writes = ctx.input_mutations();
  std::sort(input_writes.begin(), input_writes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [placeholder, value] : input_writes) {
    if (placeholder < first_user || placeholder >= first_user + n_user) {  // (a constant lifted while tracing)
      detail::raise<unsupported_error>([&](auto& w) {
        w.put("typex::export_program: the module writes to the tensor constant '"); w.put(g[placeholder].name);
        w.put("' (a tensor captured from outside the module); make it a typex::buffer member so the program carries it");
      });
    }
    outs.push_back(value);
  }
  const std::size_t n_buffer_mutations = mutated.size();
  const std::size_t n_mutations = outs.size();
  for_each_leaf(outputs, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (traced_type<L>) outs.push_back(ctx.current(leaf.value()));
    else if constexpr (host_tensor_type<L> || module_tensor_type<L>) outs.push_back(ctx.value_of_tensor(leaf));
    else static_assert(traced_type<L>, "typex::export_program: the module returned a leaf that is not a tensor");
  });
  const ir::node_id output = g.set_output(outs);
  (void)output;
  const auto module_calls = detail::name_module_calls(g, ctx.module_calls());
  std::vector<buffer_write> writes;  // (the write log, by name: unflatten hands each write to its owner)
  std::vector<std::string> write_calls;
  for (const auto& w : ctx.state_writes())
    for (const lifted& l : lifted_tensors)
      if (l.placeholder == w.placeholder) {
        writes.push_back({l.fqn, detail::value_name(g, w.value)});
        write_calls.push_back(w.call);
      }

  // 5. placeholder order: parameters, buffers, constants (the module's, then those met while
  //    tracing), user inputs; then the calls
  std::vector<const lifted*> ordered;  // the module's lifted tensors in signature order
  for (input_kind k : {input_kind::parameter, input_kind::buffer, input_kind::constant_tensor})
    for (const lifted& l : lifted_tensors)
      if (l.kind == k) ordered.push_back(&l);
  std::vector<ir::node_id> order;
  for (const lifted* l : ordered) order.push_back(l->placeholder);
  const std::size_t n_module_lifted = order.size();
  for (ir::node_id i = static_cast<ir::node_id>(first_user + n_user); i < g.size(); ++i)
    if (g[i].op == ir::node_op::placeholder) order.push_back(i);  // constants lifted while tracing
  for (std::size_t i = 0; i < n_user; ++i) order.push_back(static_cast<ir::node_id>(first_user + i));
  order.insert(order.end(), assertions.begin(), assertions.end());  // (the inputs are checked first)
  for (ir::node_id i = 0; i < g.size(); ++i)
    if (g[i].op != ir::node_op::placeholder && std::find(assertions.begin(), assertions.end(), i) == assertions.end())
      order.push_back(i);
  g.reorder(order);
  detail::eliminate_dead_code_keeping(g, detail::preserved_outputs(module_calls, options));

  // 6. the signature
  std::vector<input_spec> in_specs;
  const auto placeholders = g.placeholders();
  for (std::size_t k = 0; k < placeholders.size(); ++k) {
    const std::string& arg = g[placeholders[k]].name;
    if (k < n_module_lifted) {
      in_specs.push_back({ordered[k]->kind, arg, ordered[k]->fqn, ordered[k]->persistent});
    } else if (k < placeholders.size() - n_user) {
      const auto& c = ctx.lifted_constants()[k - n_module_lifted];
      in_specs.push_back({input_kind::constant_tensor, arg, c.first, true});
      constants.insert(c.first, c.second);
    } else {
      in_specs.push_back({input_kind::user_input, arg, "", true});
    }
  }
  std::vector<output_spec> out_specs;
  std::vector<std::string> output_names;  // the user outputs'
  for (std::size_t i = 0; i < g.output().args.size(); ++i) {
    const auto r = std::get<ir::value_ref>(g.output().args[i]);
    if (i < n_buffer_mutations) {
      out_specs.push_back({output_kind::buffer_mutation, detail::value_name(g, r), mutated[i]});
    } else if (i < n_mutations) {
      // (the placeholders keep their order: user input k is the k-th user placeholder)
      const std::size_t k = static_cast<std::size_t>(input_writes[i - n_buffer_mutations].first) - first_user;
      out_specs.push_back({output_kind::user_input_mutation, detail::value_name(g, r), g[placeholders[placeholders.size() - n_user + k]].name});
    } else {
      output_names.push_back(detail::value_name(g, r));
      out_specs.push_back({output_kind::user_output, detail::value_name(g, r), ""});
    }
  }

  // 7. the module call graph: the root with the calling convention, then each submodule call
  std::vector<module_call_entry> calls = detail::module_call_graph_of(
      g,
      {"", module_call_signature{input_names, output_names, spec_of(map_tree<tensor_spec>(traced_inputs, detail::to_spec)),
                                 spec_of(outputs)}},
      module_calls);
  detail::finish_module_call_graph(calls, g, module_calls, std::move(writes), write_calls, options);

  using program = typed_program<std::tuple<detail::input_tree_t<In>...>, std::remove_cvref_t<decltype(outputs)>>;
  return program(exported_program(std::move(g), graph_signature(std::move(in_specs), std::move(out_specs)),
                                  std::move(state), std::move(constants), std::move(ranges), std::move(calls),
                                  std::move(examples)),
                 std::move(scalars));
}

template <module_type M, class... In>
auto export_program(const M& module, const In&... inputs) {
  return export_program(export_options{}, module, inputs...);
}

// A model type without reflection: a compile error saying so (not "no matching function").
template <class M, class... In>
  requires(!module_type<M> && !std::same_as<M, export_options>)
auto export_program(const M& module, const In&... inputs) {
  detail::fail_not_a_module<M>();
  return export_program(export_options{}, detail::unreflected_model<M>{{}, &module}, inputs...);
}
template <class M, class... In>
  requires(!module_type<M>)
auto export_program(const export_options& options, const M& module, const In&... inputs) {
  detail::fail_not_a_module<M>();
  return export_program(options, detail::unreflected_model<M>{{}, &module}, inputs...);
}

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::detail::name_module_calls(const ir::graph& g, const std::vector<module_call_record>& calls) -> std::vector<named_module_call> {
  auto names = [&](const std::vector<ir::argument>& args) {
    std::vector<std::string> out;
    for (const ir::argument& a : args) {
      std::string s;
      ir::detail::print_argument(s, g, a);
      out.push_back(std::move(s));
    }
    return out;
  };
  std::vector<named_module_call> out;
  for (const module_call_record& c : calls) {
    named_module_call n{c.fqn, {}, std::nullopt, std::nullopt, c.in_spec, c.out_spec};
    for (ir::node_id i = c.begin; i < c.end; ++i)
      if (g[i].op == ir::node_op::call_function) n.nodes.push_back(g[i].name);
    if (c.inputs) n.inputs = names(*c.inputs);
    if (c.outputs) n.outputs = names(*c.outputs);
    out.push_back(std::move(n));
  }
  return out;
}

TYPEX_API auto typex::detail::value_name(const ir::graph& g, ir::value_ref v) -> std::string {
  std::string s;
  ir::detail::print_value(s, g, v);
  return s;
}

TYPEX_API auto typex::detail::preserved_outputs(const std::vector<named_module_call>& calls, const export_options& options)
    -> std::vector<std::string> {
  std::vector<std::string> keep;
  for (const std::string& fqn : options.preserve_module_call_signature) {
    bool found = false;
    for (const named_module_call& c : calls) {
      if (c.fqn != fqn) continue;
      found = true;
      if (!c.inputs || !c.outputs) {
        detail::raise<argument_error>([&](auto& w) {
          w.put("typex::export_program: preserve_module_call_signature names '"); w.put(fqn);
          w.put("', whose call does not state its signature: open its scope with its arguments (const typex::module_scope "
                "scope(*this, args...);) and return scope.returns(result), so that the program keeps exactly what it "
                "receives and returns");
        });
      }
      keep.insert(keep.end(), c.outputs->begin(), c.outputs->end());
      keep.insert(keep.end(), c.inputs->begin(), c.inputs->end());  // (an input the module ignores stays its input)
    }
    if (!found) {
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::export_program: preserve_module_call_signature names '"); w.put(fqn);
        w.put("', but no call of a submodule of that name was recorded (the submodules called:");
        std::vector<std::string_view> seen;
        for (const named_module_call& c : calls)
          if (std::find(seen.begin(), seen.end(), c.fqn) == seen.end()) {
            seen.push_back(c.fqn);
            w.put(seen.size() == 1 ? " '" : ", '"); w.put(c.fqn); w.put("'");
          }
        if (seen.empty()) w.put(" none: a module's call operator opens a typex::module_scope");
        w.put(")");
      });
    }
  }
  return keep;
}

TYPEX_API auto typex::detail::eliminate_dead_code_keeping(ir::graph& g, const std::vector<std::string>& keep) -> void {
  if (keep.empty()) {
    passes::eliminate_dead_code(g);
    return;
  }
  std::vector<bool> live(g.size(), false);
  for (std::string_view k : keep) {
    if (const auto b = k.find('['); b != std::string_view::npos) k = k.substr(0, b);
    for (ir::node_id i = 0; i < g.size(); ++i)
      if (g[i].name == k) live[i] = true;
  }
  for (std::size_t k = g.size(); k-- > 0;) {
    const ir::node& nd = g[static_cast<ir::node_id>(k)];
    if (nd.op != ir::node_op::call_function || passes::has_side_effects(nd)) live[k] = true;
    if (!live[k]) continue;
    ir::graph::for_each_ref(nd, [&](ir::value_ref r) { live[r.node] = true; });
  }
  if (std::find(live.begin(), live.end(), false) != live.end()) g.retain(live);
}

TYPEX_API auto typex::detail::finish_module_call_graph(std::vector<module_call_entry>& calls, const ir::graph& g,
                                                     const std::vector<named_module_call>& named, std::vector<buffer_write> writes,
                                                     const std::vector<std::string>& write_calls, const export_options& options) -> void {
  std::unordered_set<std::string_view> names;
  for (const ir::node& n : g.nodes()) names.insert(n.name);
  for (std::size_t i = 0; i < writes.size(); ++i) {
    std::string_view v = writes[i].value;
    if (const auto b = v.find('['); b != std::string_view::npos) v = v.substr(0, b);
    if (!names.contains(v)) continue;  // (a write nothing observes: removed with its value)
    for (module_call_entry& e : calls)
      if (e.fqn == write_calls[i]) {
        e.writes.push_back(std::move(writes[i]));
        break;
      }
  }
  for (std::size_t i = 0; i < named.size() && i + 1 < calls.size(); ++i)
    for (const std::string& fqn : options.preserve_module_call_signature)
      if (named[i].fqn == fqn) calls[i + 1].preserved = true;
}

TYPEX_API auto typex::detail::flat_spec(std::size_t n, bool tuple_of_one) -> tree_spec {
  if (n == 1 && !tuple_of_one) return tree_spec::leaf();
  return tree_spec::node(node_kind::tuple, "", {}, std::vector<tree_spec>(n));
}

TYPEX_API auto typex::detail::module_call_graph_of(const ir::graph& g, module_call_entry root,
                                                           const std::vector<named_module_call>& calls) -> std::vector<module_call_entry> {
  std::unordered_map<std::string_view, ir::node_id> id_of;
  for (ir::node_id i = 0; i < g.size(); ++i) id_of.emplace(g[i].name, i);
  std::unordered_map<std::string_view, bool> user_input;
  for (const std::string& n : root.signature->inputs) user_input.emplace(n, true);
  const auto users = g.users();

  std::vector<module_call_entry> out;
  out.push_back(std::move(root));
  for (const named_module_call& c : calls) {
    std::vector<bool> inside(g.size(), false);
    std::vector<ir::node_id> ids;
    for (const std::string& n : c.nodes)
      if (const auto it = id_of.find(n); it != id_of.end()) {  // DCE may have removed some
        inside[it->second] = true;
        ids.push_back(it->second);
      }
    std::sort(ids.begin(), ids.end());
    module_call_signature sig;
    if (c.inputs) {
      sig.inputs = *c.inputs;
      sig.in_spec = c.in_spec;
    } else {
      for (const ir::node_id i : ids)
        ir::graph::for_each_ref(g[i], [&](ir::value_ref r) {
          const ir::node& src = g[r.node];
          if (inside[r.node] || (src.op == ir::node_op::placeholder && !user_input.contains(src.name))) return;
          std::string s;
          ir::detail::print_value(s, g, r);
          if (std::find(sig.inputs.begin(), sig.inputs.end(), s) == sig.inputs.end()) sig.inputs.push_back(std::move(s));
        });
      sig.in_spec = flat_spec(sig.inputs.size(), true);
    }
    if (c.outputs) {
      sig.outputs = *c.outputs;
      sig.out_spec = c.out_spec;
    } else {
      for (const ir::node_id i : ids)
        for (const ir::node_id u : users[i])
          if (!inside[u]) {
            sig.outputs.push_back(g[i].name);
            break;
          }
      sig.out_spec = flat_spec(sig.outputs.size(), false);
    }
    int seen = 0;
    for (const auto& e : out) seen += e.fqn == c.fqn || e.fqn.starts_with(c.fqn + "@") ? 1 : 0;
    out.push_back({seen == 0 ? c.fqn : with_number(c.fqn + "@", seen), std::move(sig)});
  }
  return out;
}
#endif  // TYPEX_HEADER_DEFINITIONS
