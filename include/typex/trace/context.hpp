// typex/trace/context.hpp — the tracing context: the graph being recorded and what feeds it.
//
// While a functor is traced, every op records a call node here. Tensors that are not traced values
// (module parameters and buffers, constants, tensors the forward creates) are found by their
// storage: a lifted module tensor maps to its placeholder; an unknown tensor is lifted as a
// constant (c_lifted_tensor_0, as torch.export names them). The context is also the thread's
// requirement recorder: shape facts the rules could not decide from types become the program's
// guards. One context is active per thread, installed by scoped_tracing.
#pragma once

#include <typex/core/requirement.hpp>
#include <typex/ir/graph.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/trace/module_tensor.hpp>
#include <typex/tree/flatten.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace typex {

// One submodule call seen while tracing: the module call graph's raw material. The calls recorded
// during it are the graph nodes [begin, end). What the call received and returned is known exactly
// when the module told its scope (`module_scope scope(*this, x)`, `return scope.returns(y)`);
// otherwise export reads it off the graph (values the call's nodes read from outside it; values
// they produce that are read outside it).
struct module_call_record {
  std::string fqn;
  ir::node_id begin = 0;
  ir::node_id end = 0;
  std::optional<std::vector<ir::argument>> inputs;
  tree_spec in_spec;
  std::optional<std::vector<ir::argument>> outputs;
  tree_spec out_spec;
};

// Where the user's code recorded an op: "model.cpp:21 in forward" (torch.export's stack_trace).
TYPEX_API std::string format_location(const std::source_location& loc);

namespace detail {
// A shape fact's side as the IR's symbolic expression.
TYPEX_API ir::sym_expr terms_expr(const dim_terms& terms);
}  // namespace detail

class tracing_context final : public requirement_recorder {
 public:
  tracing_context() = default;
  // A context for a subgraph (a branch or loop body of control flow, trace/control_flow.hpp)
  // traced inside `parent`: its values are the subgraph's. A value of an enclosing context that it
  // reads (a captured traced value, a parameter, a buffer) becomes a placeholder of the subgraph,
  // listed by captures(); module tensors written inside it are listed by mutations(); the shape
  // facts its ops need stay its own (requirements()); symbols, modules and lifted constants are
  // the root's.
  explicit tracing_context(tracing_context& parent)
      : stack_(parent.stack_), call_sites_(parent.call_sites_), parent_(&parent), depth_(parent.depth_ + 1) {}
  tracing_context(const tracing_context&) = delete;
  tracing_context& operator=(const tracing_context&) = delete;

  ir::graph& graph() noexcept { return graph_; }
  const ir::graph& graph() const noexcept { return graph_; }
  ir::symbol_namer& namer() noexcept { return parent_ != nullptr ? parent_->namer() : namer_; }

  // -- subgraphs --------------------------------------------------------------------------------------
  tracing_context* parent() const noexcept { return parent_; }
  std::size_t depth() const noexcept { return depth_; }
  bool encloses(const tracing_context& inner) const noexcept {
    for (const tracing_context* c = &inner; c != nullptr; c = c->parent_)
      if (c == this) return true;
    return false;
  }
  // The value `v` of the enclosing context `from` as a value of this one (a placeholder of this
  // subgraph, made once per value; through every context in between).
  TYPEX_API ir::value_ref import(const tracing_context& from, ir::value_ref v);
  // The values of the parent context this subgraph read, in the order of their placeholders
  // (after the subgraph's own inputs).
  const std::vector<ir::value_ref>& captures() const noexcept { return captures_; }

  // -- shape facts --------------------------------------------------------------------------------
  TYPEX_API void record(shape_requirement r) override;
  const std::vector<shape_requirement>& requirements() const noexcept { return requirements_; }
  // -- data-dependent sizes (unbacked symbols) ------------------------------------------------------
  struct unbacked_symbol {
    std::string name;
    index_t lo, hi;
    std::string op, node;  // the op and node whose result's size it is
  };
  bool is_unbacked(std::string_view symbol) const override {
    for (const auto& u : unbacked_)
      if (u.name == symbol) return true;
    return false;
  }
  void add_unbacked(unbacked_symbol u) {
    if (parent_ != nullptr) {
      typex::detail::raise<unsupported_error>([&](auto& w) {
        w.put("typex: "); w.put(u.op); w.put(" (node '"); w.put(u.node);
        w.put("') makes a data-dependent size inside a branch or loop body of control flow, which typex does not support; "
              "compute it outside the typex::cond / while_loop / map / scan and pass the result in");
      });
    }
    for (const auto& e : unbacked_)
      if (e.name == u.name) {
        typex::detail::raise<argument_error>([&](auto& w) {
          w.put("typex: "); w.put(u.op); w.put(" (node '"); w.put(u.node); w.put("') names its data-dependent size '");
          w.put(u.name); w.put("', which "); w.put(e.op); w.put(" (node '"); w.put(e.node);
          w.put("') names already; one name means one value: give each data-dependent op its own name");
        });
      }
    unbacked_.push_back(std::move(u));
  }
  const std::vector<unbacked_symbol>& unbacked() const noexcept { return unbacked_; }

  // The facts recorded from index `first` on were needed by the call that recorded node `v`.
  void attribute_requirements(std::size_t first, ir::value_ref v) {
    for (std::size_t i = first; i < requirements_.size(); ++i) {
      requirements_[i].node = graph_[v.node].name;
      requirements_[i].site = graph_[v.node].stack_trace;
      if (!stack_.empty()) requirements_[i].module = stack_.back().path;
    }
  }

  // -- module scopes (nn_module_stack) ------------------------------------------------------------
  void push_module(std::string path, std::string type, std::string call = {}) {
    stack_.push_back({std::move(path), std::move(type), std::move(call)});
  }
  void pop_module() { stack_.pop_back(); }
  const std::vector<ir::module_frame>& module_stack() const noexcept { return stack_; }

  // -- tensors by storage ---------------------------------------------------------------------------
  void bind_storage(const void* storage, ir::value_ref v) {
    by_storage_[storage] = v;
    if (graph_[v.node].op == ir::node_op::placeholder) lifted_.emplace(storage, v.node);  // (the first: its placeholder)
  }
  const ir::value_ref* find_storage(const void* storage) const {
    const auto it = by_storage_.find(storage);
    return it == by_storage_.end() ? nullptr : &it->second;
  }
  // Whether this context or an enclosing one follows the tensor with storage `storage`.
  bool follows_storage(const void* storage) const {
    for (const tracing_context* c = this; c != nullptr; c = c->parent_)
      if (c->find_storage(storage) != nullptr) return true;
    return false;
  }

  // The graph value of an eager tensor met while tracing: its placeholder if it was lifted (or an
  // op recorded it), otherwise a new constant placeholder holding it.
  template <class DT, class S>
  ir::value_ref value_of(const host_tensor<DT, S>& t) {
    const void* id = t.get_storage().data();
    if (id == nullptr)  // (every tensor typex makes has storage, even an empty one: null is a moved-from tensor)
      detail::raise_message<state_error>("typex: a tensor used while tracing has no storage: it was moved from");
    if (const ir::value_ref* v = find_storage(id)) return current(*v);  // (after a write to it: the value written)
    if (parent_ != nullptr) {  // (a subgraph: the enclosing context's value, captured)
      const ir::value_ref outer = parent_->value_of(t);
      const ir::value_ref v = import(*parent_, outer);
      bind_storage(id, v);
      return v;
    }
    const std::string name = detail::with_number("lifted_tensor_", static_cast<long long>(lifted_constants_.size()));
    std::string placeholder = "c_";
    placeholder += name;
    const ir::node_id ph = graph_.add_placeholder(placeholder, meta_of(t));
    lifted_constants_.emplace_back(name, t.erase());
    const ir::value_ref v{ph};
    bind_storage(id, v);
    return v;
  }
  // value_of for a tensor argument of any tensor type. A parameter or buffer must be one the export
  // lifted from the model's members: one that is not was left out of the reflection
  // (BOOST_HANA_ADAPT_STRUCT / BOOST_HANA_DEFINE_STRUCT) of the module holding it, and would
  // otherwise become an anonymous constant that init_module and load_state_dict never reach (its
  // values zeros or stale: a program that runs and is silently wrong).
  template <class T>
  ir::value_ref value_of_tensor(const T& t) {
    if constexpr (module_tensor_type<T>) {
      const void* id = t.get_storage().data();
      if (T::role != tensor_role::constant && id != nullptr && !follows_storage(id)) {
        detail::raise<state_error>([&](auto& w) {
          w.put("typex::export_program: a ");
          w.put(T::role == tensor_role::parameter ? "parameter " : "buffer ");
          T::base::write_type(w);
          w.put(" used by the model is not one of its members: it is missing from the BOOST_HANA_ADAPT_STRUCT (or "
                "BOOST_HANA_DEFINE_STRUCT) list of the module that holds it; add the member (or the submodule holding "
                "it) to that list, so that it is lifted, initialized by init_module and loaded by load_state_dict");
        });
      }
    }
    return value_of(static_cast<const host_tensor<typename T::dtype_type, typename T::shape_type>&>(t));
  }

  // -- in-place writes (functionalization) ---------------------------------------------------------
  // The program is functional: an in-place write (copy_, add_, ...) records the new value, and the
  // context remembers which value it replaces, so that every later read of the old one (through any
  // copy of its traced handle, or the module tensor's storage) gets the new one, and export returns
  // the last value of a buffer (BUFFER_MUTATION) or user input (USER_INPUT_MUTATION) as an output.

  // The tensor with storage `storage` now holds value v.
  void mutate(const void* storage, ir::value_ref v) {
    if (const ir::value_ref* old = find_storage(storage)) {
      const ir::value_ref now = current(*old);
      replaced_[key(now)] = v;
      if (const auto root = root_of(now)) roots_[key(v)] = *root;
    }
    bind_storage(storage, v);
    if (const auto it = lifted_.find(storage); it != lifted_.end())  // (a module tensor: the write log unflatten reads)
      state_writes_.push_back({it->second, v, stack_.empty() ? std::string{} : stack_.back().call_id()});
    for (auto& m : mutations_)
      if (m.first == storage) {
        m.second = v;
        return;
      }
    mutations_.emplace_back(storage, v);
  }
  // The traced value `v` now holds `w` (w has v's dtype and shape). Written where it lives: a
  // lifted module tensor by its storage (above), a user input as an input mutation; an
  // intermediate value only for the reads after the write. A view that shares its input's memory
  // (reshape, view, flatten, unsqueeze, squeeze) writes its input (w reshaped back); a write to
  // the result of a view op that copies in typex (select, slice, transpose, permute, expand) is
  // refused: PyTorch's would reach the tensor it was taken from.
  TYPEX_API void overwrite(ir::value_ref v, ir::value_ref w);
  // The placeholder whose tensor `v` is the current value of (after writes), if any.
  std::optional<ir::node_id> root_of(ir::value_ref v) const {
    if (graph_[v.node].op == ir::node_op::placeholder) return v.node;
    const auto it = roots_.find(key(v));
    if (it == roots_.end()) return std::nullopt;
    return it->second;
  }
  // What a read of `v` gets now: v, or the value that last replaced it; a view that shares its
  // input's memory, taken before its input was written, is taken again from the written value (as
  // PyTorch's functionalization replays views).
  TYPEX_API ir::value_ref current(ir::value_ref v);
  // Node `view` is a view op's result on `base`: `write_back` is the op that writes a value of the
  // view's shape back into the base's shape (aten.reshape), or none for a view op whose typex
  // result is a copy (`op` names it in the error a write to it gets).
  void note_view(ir::value_ref view, ir::value_ref base, std::optional<op_id> write_back, std::string_view op) {
    views_[key(view)] = view_record{base, write_back, std::string(op)};
  }
  // (storage, last value) of each tensor written while tracing, in order of first write.
  const std::vector<std::pair<const void*, ir::value_ref>>& mutations() const noexcept { return mutations_; }
  // Every write of a lifted module tensor, in order: its placeholder, the value written and the
  // module call that wrote it ("" for the root's own code).
  struct state_write {
    ir::node_id placeholder;
    ir::value_ref value;
    std::string call;
  };
  const std::vector<state_write>& state_writes() const noexcept { return state_writes_; }
  // (placeholder, last value) of each user input written while tracing, in order of first write.
  const std::vector<std::pair<ir::node_id, ir::value_ref>>& input_mutations() const noexcept { return input_mutations_; }

  // -- what eager ops compute from the module's tensors while tracing -------------------------------
  // An op whose arguments are host tensors runs eagerly; while a model is traced, one that reads a
  // tensor the trace follows (a lifted parameter, buffer or tensor member, or such a result) is
  // also recorded as a node (the eager runner does it, through detail::record_op), and its result's
  // storage is bound to that node: an op on module state alone (`cls_token.expand(B, -1, -1)`,
  // `pos[:, :seq]`, `w.t()`, `scale.exp()`) is part of the program, never a constant frozen at
  // export. The result is kept until the trace ends, so that its storage's address stays its own.
  void bind_eager_result(const any_tensor& result, ir::value_ref v) {
    kept_.push_back(result);
    bind_storage(result.get_storage().data(), v);
  }
  // Whether `storage` is a tensor the forward made from literals and value_of lifted as an anonymous
  // constant (c_lifted_tensor_N): a write to it gives the tensor a new value, it is not module state.
  bool is_forward_constant(const void* storage) const {
    for (const auto& [name, t] : lifted_constants_)
      if (t.get_storage().data() == storage) return true;
    return false;
  }
  // Forgets the shape facts recorded from index `first` on (an eager op's rule, evaluated again
  // after the op was recorded with its facts).
  void drop_requirements_from(std::size_t first) {
    if (first < requirements_.size()) requirements_.resize(first);
  }

  // Constants lifted while tracing, as (FQN, tensor), in order of discovery.
  const std::vector<std::pair<std::string, any_tensor>>& lifted_constants() const noexcept { return lifted_constants_; }

  // -- modules ----------------------------------------------------------------------------------------
  // Remembers a module object's FQN and type (export registers the whole tree before tracing).
  // A module is known by its address and its type together: a struct's first member, and the
  // elements of a std::tuple of modules (empty ones share addresses), live where their parent does.
  TYPEX_API void register_module(const void* address, std::string fqn, std::string type);  // (the root's)
  // The module at `address` of type `type`; failing that, the only module at `address` (a module
  // deriving from another calls its base's operator(), whose scope names the base type).
  TYPEX_API const ir::module_frame* find_module(const void* address, std::string_view type) const;
  // The submodule calls seen, in call order (the module call graph's entries).
  std::vector<module_call_record>& module_calls() noexcept { return module_calls_; }
  const std::vector<module_call_record>& module_calls() const noexcept { return module_calls_; }

  // The user's line for the ops a library module (typex::nn) records: the outermost library module
  // call made from the user's code sets it (call sites in typex's own headers are skipped: a model
  // that is itself an nn module keeps each op's own line), and every op recorded inside carries it
  // instead of the library's line, as torch.export's stack traces name the user's frame.
  void push_call_site(const std::source_location& loc) { call_sites_.push_back(loc); }
  void pop_call_site() noexcept { call_sites_.pop_back(); }

  // Records a call and returns its (first) value. `loc` may be null (operators have no location).
  TYPEX_API ir::value_ref call(op_id target, std::vector<ir::argument> args, std::vector<ir::tensor_meta> vals,
                     std::vector<std::pair<std::string, ir::argument>> kwargs, const std::source_location* loc);

  // The metadata of a typed tensor: its dims as symbolic expressions (anonymous dims get fresh
  // symbols s0, s1, ...).
  template <class T>
  ir::tensor_meta meta_of(const T&) {
    return meta_of_type<typename T::dtype_type, typename T::shape_type>();
  }
  template <class DT, class S>
  ir::tensor_meta meta_of_type() {
    ir::tensor_meta m{DT::value, {}};
    [[maybe_unused]] ir::symbol_namer& names = namer();
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (m.shape.push_back(ir::to_sym_expr<typename S::template dim_t<I>>(names)), ...);
    }(std::make_index_sequence<S::rank>{});
    return m;
  }

 private:
  ir::graph graph_;
  ir::symbol_namer namer_;
  std::vector<shape_requirement> requirements_;
  std::vector<unbacked_symbol> unbacked_;
  std::vector<ir::module_frame> stack_;
  std::unordered_map<const void*, ir::value_ref> by_storage_;
  std::vector<std::pair<std::string, any_tensor>> lifted_constants_;
  std::vector<any_tensor> kept_;  // eager results bound to graph values (bind_eager_result)
  std::vector<std::source_location> call_sites_;
  std::vector<std::pair<const void*, ir::value_ref>> mutations_;
  std::vector<state_write> state_writes_;
  std::vector<std::pair<ir::node_id, ir::value_ref>> input_mutations_;
  std::unordered_map<std::uint64_t, ir::value_ref> replaced_;  // a value -> the value written over it
  std::unordered_map<std::uint64_t, ir::node_id> roots_;       // a written value -> the placeholder it updates
  std::unordered_map<const void*, ir::node_id> lifted_;         // a lifted tensor's storage -> its placeholder
  struct view_record {
    ir::value_ref base;
    std::optional<op_id> write_back;
    std::string op;
  };
  std::unordered_map<std::uint64_t, view_record> views_;        // a view op's result -> what it views
  static std::uint64_t key(ir::value_ref v) noexcept { return std::uint64_t{v.node} << 32 | v.index; }
  std::map<std::pair<const void*, std::string>, ir::module_frame> modules_;
  std::vector<module_call_record> module_calls_;
  tracing_context* parent_ = nullptr;
  std::size_t depth_ = 0;
  std::vector<ir::value_ref> captures_;                          // (a subgraph) the parent's values read, in order
  std::unordered_map<std::uint64_t, ir::value_ref> imported_;    // (a subgraph) a parent value -> its placeholder
};

namespace detail {
inline tracing_context*& current_tracing_context_slot() noexcept {
  thread_local tracing_context* c = nullptr;
  return c;
}
}  // namespace detail

// The context tracing on this thread, or nullptr.
inline tracing_context* current_tracing_context() noexcept { return detail::current_tracing_context_slot(); }

// The context a call records into: the innermost of `from_args` (its arguments' contexts') and the
// context tracing now. A branch or loop body being traced records every op it makes into its own
// subgraph, even one whose traced arguments are all outer values (they are captured), so that the
// op runs only when the branch does and reads the branch's state.
inline tracing_context& recording_context(tracing_context* from_args) {
  tracing_context* const now = current_tracing_context();
  if (from_args == nullptr) return *now;
  if (now != nullptr && now != from_args && now->depth() > from_args->depth() && from_args->encloses(*now)) return *now;
  return *from_args;
}

// Makes `ctx` the thread's tracing context and requirement recorder for its lifetime.
class scoped_tracing {
 public:
  explicit scoped_tracing(tracing_context& ctx) : prev_(detail::current_tracing_context_slot()), recorder_(ctx) {
    detail::current_tracing_context_slot() = &ctx;
  }
  ~scoped_tracing() { detail::current_tracing_context_slot() = prev_; }
  scoped_tracing(const scoped_tracing&) = delete;
  scoped_tracing& operator=(const scoped_tracing&) = delete;

 private:
  tracing_context* prev_;
  scoped_requirement_recorder recorder_;
};

namespace detail {
// A module call's argument leaf as a graph argument: traced values by reference, numbers as
// constants, tensors that are not traced (a parameter handed to a submodule) by their storage.
template <class L>
ir::argument call_leaf_argument(tracing_context& ctx, const L& leaf) {
  if constexpr (requires { leaf.value(); leaf.context(); }) return ctx.current(ctx.import(leaf.context(), leaf.value()));
  else if constexpr (std::is_same_v<L, bool>) return leaf;
  else if constexpr (std::is_integral_v<L>) return static_cast<std::int64_t>(leaf);
  else if constexpr (std::is_floating_point_v<L>) return static_cast<double>(leaf);
  else return ctx.value_of_tensor(leaf);
}

template <class T>
std::vector<ir::argument> call_leaf_arguments(tracing_context& ctx, const T& tree) {
  std::vector<ir::argument> out;
  for_each_leaf(tree, [&](const auto& leaf) { out.push_back(call_leaf_argument(ctx, leaf)); });
  return out;
}
}  // namespace detail

// Marks a module's forward: while tracing, the ops recorded inside carry the module in their
// nn_module_stack and the call joins the module call graph. Eagerly it does nothing. A module's
// call operator starts with `const typex::module_scope scope(*this, args...);` and returns
// `scope.returns(result)`; both parts are optional (`module_scope scope(*this)` alone works), they
// make the call's signature in the module call graph exact (its arguments in order, with their
// pytree structure, even where the module passes a value through untouched).
// A library module's call (typex::nn modules make one from their `loc` argument, which defaults to
// the caller's line): while it lives, the ops recorded carry that line (the outermost one when
// library modules nest: an encoder layer's attention records at the user's encoder call).
class library_call {
 public:
  explicit library_call(const std::source_location& loc) : ctx_(current_tracing_context()) {
    if (ctx_ != nullptr) ctx_->push_call_site(loc);
  }
  ~library_call() {
    if (ctx_ != nullptr) ctx_->pop_call_site();
  }
  library_call(const library_call&) = delete;
  library_call& operator=(const library_call&) = delete;

 private:
  tracing_context* ctx_;
};

class module_scope {
 public:
  template <class M, class... Args>
  explicit module_scope(const M& m, const Args&... args) {
    tracing_context* ctx = current_tracing_context();
    if (ctx == nullptr) return;
    const ir::module_frame* f = ctx->find_module(&m, detail::raw_type_name<M>());
    if (f == nullptr || f->path.empty()) return;  // the root is not a frame; unregistered: not a module of the export
    index_ = ctx->module_calls().size();
    int seen = 0;  // (the call's entry: "fc" first, then "fc@1", "fc@2", ... as the module call graph numbers them)
    for (const module_call_record& c : ctx->module_calls()) seen += c.fqn == f->path ? 1 : 0;
    ctx->push_module(f->path, f->type, seen == 0 ? f->path : detail::with_number(f->path + "@", seen));
    module_call_record r;
    r.fqn = f->path;
    r.begin = static_cast<ir::node_id>(ctx->graph().size());
    if constexpr (sizeof...(Args) > 0) {
      const auto in = std::make_tuple(args...);
      r.inputs = detail::call_leaf_arguments(*ctx, in);
      r.in_spec = spec_of(in);
    }
    ctx->module_calls().push_back(std::move(r));
    ctx_ = ctx;
  }
  ~module_scope() {
    if (ctx_ == nullptr) return;
    ctx_->module_calls()[index_].end = static_cast<ir::node_id>(ctx_->graph().size());
    ctx_->pop_module();
  }
  module_scope(const module_scope&) = delete;
  module_scope& operator=(const module_scope&) = delete;

  // Records `result` as what the call returned, and returns it.
  template <class T>
  T returns(T result) const {
    if (ctx_ != nullptr) {
      module_call_record& r = ctx_->module_calls()[index_];
      r.outputs = detail::call_leaf_arguments(*ctx_, result);
      r.out_spec = spec_of(result);
    }
    return result;
  }

 private:
  tracing_context* ctx_ = nullptr;
  std::size_t index_ = 0;
};

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::format_location(const std::source_location& loc) -> std::string {
  std::string_view file = loc.file_name();
  if (const auto slash = file.find_last_of('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  std::string s(file);
  s += ':';
  s += std::to_string(loc.line());
  std::string_view fn = loc.function_name();
  // "auto ns::model::operator()(const X&) const [with X = ...]" -> "operator()";
  // "auto ns::mha<...>::attend<Q, K>(const Q&) const::<lambda()>" -> "attend"; "void ns::f(int)" -> "f"
  int depth = 0;
  std::size_t end = fn.size();
  for (std::size_t i = 0; i < fn.size(); ++i) {  // the first '(' outside template arguments
    if (fn[i] == '<') ++depth;
    else if (fn[i] == '>') --depth;
    else if (fn[i] == '(' && depth == 0) {
      if (fn.substr(i).starts_with("(anonymous")) {  // clang's "(anonymous namespace)::" is not a parameter list
        i = fn.find(')', i);
        if (i == std::string_view::npos) break;
        continue;
      }
      end = i;
      break;
    }
  }
  fn = fn.substr(0, end);
  if (fn.ends_with("operator")) fn = "operator()";  // (the '(' found was the one of "operator()")
  if (!fn.empty() && fn.back() == '>') {  // drop the function's own template arguments
    depth = 0;
    for (std::size_t i = fn.size(); i-- > 0;) {
      if (fn[i] == '>') ++depth;
      else if (fn[i] == '<' && --depth == 0) {
        fn = fn.substr(0, i);
        break;
      }
    }
  }
  if (const auto sep = fn.find_last_of(" :"); sep != std::string_view::npos && fn != "operator()") fn.remove_prefix(sep + 1);
  if (!fn.empty()) {
    s += " in ";
    s += fn;
  }
  return s;
}

TYPEX_API auto typex::detail::terms_expr(const dim_terms& terms) -> ir::sym_expr {
  std::vector<ir::sym_expr> stack;
  for (const dim_term& t : terms) {
    switch (t.k) {
      case dim_term::kind::constant: stack.emplace_back(t.value); break;
      case dim_term::kind::symbol: stack.push_back(ir::sym_expr::symbol(std::string(t.name))); break;
      case dim_term::kind::anonymous: stack.push_back(ir::sym_expr::symbol("?")); break;
      case dim_term::kind::op: {
        ir::sym_expr b = std::move(stack.back());
        stack.pop_back();
        stack.back() = ir::sym_expr::apply(t.op, stack.back(), b);
        break;
      }
    }
  }
  return stack.front();
}

TYPEX_API auto typex::tracing_context::record(shape_requirement r) -> void { requirements_.push_back(std::move(r)); }

TYPEX_API auto typex::tracing_context::register_module(const void* address, std::string fqn, std::string type) -> void {
  if (parent_ != nullptr) return parent_->register_module(address, std::move(fqn), std::move(type));
  std::string key = type;
  modules_.insert_or_assign(std::pair{address, std::move(key)}, ir::module_frame{std::move(fqn), std::move(type)});
}

TYPEX_API auto typex::tracing_context::find_module(const void* address, std::string_view type) const -> const ir::module_frame* {
  if (parent_ != nullptr) return parent_->find_module(address, type);
  if (const auto it = modules_.find(std::pair{address, std::string(type)}); it != modules_.end()) return &it->second;
  auto it = modules_.lower_bound(std::pair{address, std::string{}});
  if (it == modules_.end() || it->first.first != address) return nullptr;
  const ir::module_frame* only = &it->second;
  return ++it != modules_.end() && it->first.first == address ? nullptr : only;
}

namespace typex::detail {
// Whether a call site is in typex's own headers (a Sequential calling its children, export_program
// calling a model that is itself a typex::nn module): such a site is not the user's line. Matched by
// the layer folders (and the single header), so that any include path or install prefix works.
inline bool in_typex_headers(const std::source_location& loc) {
  const std::string_view f = loc.file_name();
  for (std::string_view layer : {"/typex/core/", "/typex/tree/", "/typex/tensor/", "/typex/ops/", "/typex/ir/", "/typex/trace/",
                                 "/typex/nn/", "/typex/passes/", "/typex/export/", "/typex/plan/", "/typex/backend/"})
    if (f.find(layer) != std::string_view::npos) return true;
  return f.ends_with("/typex/typex.hpp");
}
}  // namespace typex::detail

TYPEX_API auto typex::tracing_context::call(op_id target, std::vector<ir::argument> args, std::vector<ir::tensor_meta> vals,
                     std::vector<std::pair<std::string, ir::argument>> kwargs, const std::source_location* loc) -> ir::value_ref {
  // the outermost library module call made from the user's code, else the op's own line
  const std::source_location* where = loc;
  for (const std::source_location& site : call_sites_)
    if (!detail::in_typex_headers(site)) {
      where = &site;
      break;
    }
  const ir::node_id n = graph_.add_call({.target = target,
                                         .args = std::move(args),
                                         .kwargs = std::move(kwargs),
                                         .vals = std::move(vals),
                                         .name_hint = {},
                                         .nn_module_stack = stack_,
                                         .stack_trace = where ? format_location(*where) : std::string{}});
  return ir::value_ref{n};
}

TYPEX_API auto typex::tracing_context::import(const tracing_context& from, ir::value_ref v) -> ir::value_ref {
  if (&from == this) return v;
  if (parent_ == nullptr || !from.encloses(*this))
    detail::raise_message<argument_error>("typex: an op mixes values traced by two different exports");
  const ir::value_ref outer = parent_->import(from, v);  // (the value as the parent sees it)
  const ir::value_ref now = parent_->current(outer);
  if (const auto it = imported_.find(key(now)); it != imported_.end()) return it->second;
  const ir::value_ref ph{graph_.add_placeholder(parent_->graph()[now.node].name, parent_->graph().meta(now))};
  imported_.emplace(key(now), ph);
  captures_.push_back(now);
  return ph;
}

TYPEX_API auto typex::tracing_context::current(ir::value_ref v) -> ir::value_ref {
  for (;;) {
    if (const auto it = replaced_.find(key(v)); it != replaced_.end()) {
      v = it->second;
      continue;
    }
    const auto vt = views_.find(key(v));
    if (vt == views_.end() || !vt->second.write_back) return v;
    const view_record rec = vt->second;
    const ir::value_ref base = current(rec.base);
    if (base == rec.base) return v;
    // the base was written after the view was taken: the view again, of the written value
    const ir::node old = graph_[v.node];
    std::vector<ir::argument> args = old.args;
    args.front() = base;
    const ir::value_ref again{graph_.add_call({.target = old.target, .args = std::move(args), .kwargs = old.kwargs, .vals = old.vals,
                                               .name_hint = old.name, .nn_module_stack = stack_, .stack_trace = old.stack_trace})};
    views_[key(again)] = view_record{base, rec.write_back, rec.op};
    replaced_[key(v)] = again;
    return again;
  }
}

TYPEX_API auto typex::tracing_context::overwrite(ir::value_ref v, ir::value_ref w) -> void {
  const ir::value_ref now = current(v);
  if (const auto vt = views_.find(key(now)); vt != views_.end()) {
    const view_record rec = vt->second;
    if (!rec.write_back) {
      detail::raise<unsupported_error>([&](auto& o) {
        o.put("typex: an in-place write to '"); o.put(graph_[now.node].name); o.put("', the result of "); o.put(rec.op);
        if (!graph_[now.node].stack_trace.empty()) { o.put(" at "); o.put(graph_[now.node].stack_trace); }
        o.put(": in typex that op makes a copy (only reshape, view, flatten, unsqueeze and squeeze share their input's "
              "memory), so the write would not reach the tensor it was taken from, as PyTorch's would; write that tensor "
              "with typex::select_scatter or typex::slice_scatter (copy_(x, slice_scatter(x, value, dim, start, end))), "
              "or compute the new value without writing in place");
      });
    }
    // (a view sharing its base's memory: the base gets w, reshaped back; the view is taken again
    // from it when next read)
    const ir::value_ref base = current(rec.base);
    const ir::tensor_meta m = graph_.meta(base);
    const ir::value_ref back{graph_.add_call({.target = *rec.write_back, .args = {w, m.shape}, .vals = {m}, .name_hint = {},
                                              .nn_module_stack = stack_, .stack_trace = graph_[w.node].stack_trace})};
    return overwrite(rec.base, back);
  }
  const std::optional<ir::node_id> root = root_of(now);
  if (root)
    for (const auto& [storage, placeholder] : lifted_)
      if (placeholder == *root) return mutate(storage, w);
  replaced_[key(now)] = w;
  if (!root) return;
  roots_[key(w)] = *root;
  for (auto& m : input_mutations_)
    if (m.first == *root) {
      m.second = w;
      return;
    }
  input_mutations_.emplace_back(*root, w);
}
#endif  // TYPEX_HEADER_DEFINITIONS
