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

#include <source_location>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace typex {

// Where the user's code recorded an op: "model.cpp:21 in forward" (torch.export's stack_trace).
inline std::string format_location(const std::source_location& loc) {
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

class tracing_context final : public requirement_recorder {
 public:
  ir::graph& graph() noexcept { return graph_; }
  const ir::graph& graph() const noexcept { return graph_; }
  ir::symbol_namer& namer() noexcept { return namer_; }

  // -- shape facts --------------------------------------------------------------------------------
  void record(shape_requirement r) override { requirements_.push_back(std::move(r)); }
  const std::vector<shape_requirement>& requirements() const noexcept { return requirements_; }

  // -- module scopes (nn_module_stack) ------------------------------------------------------------
  void push_module(std::string path, std::string type) { stack_.push_back({std::move(path), std::move(type)}); }
  void pop_module() { stack_.pop_back(); }
  const std::vector<ir::module_frame>& module_stack() const noexcept { return stack_; }

  // -- tensors by storage ---------------------------------------------------------------------------
  void bind_storage(const void* storage, ir::value_ref v) { by_storage_[storage] = v; }
  const ir::value_ref* find_storage(const void* storage) const {
    const auto it = by_storage_.find(storage);
    return it == by_storage_.end() ? nullptr : &it->second;
  }

  // The graph value of an eager tensor met while tracing: its placeholder if it was lifted (or an
  // op recorded it), otherwise a new constant placeholder holding it.
  template <class DT, class S>
  ir::value_ref value_of(const host_tensor<DT, S>& t) {
    const void* id = t.get_storage().data();
    if (const ir::value_ref* v = find_storage(id)) return *v;
    const std::string name = detail::with_number("lifted_tensor_", static_cast<long long>(lifted_constants_.size()));
    std::string placeholder = "c_";
    placeholder += name;
    const ir::node_id ph = graph_.add_placeholder(placeholder, meta_of(t));
    lifted_constants_.emplace_back(name, t.erase());
    const ir::value_ref v{ph};
    bind_storage(id, v);
    return v;
  }
  // Constants lifted while tracing, as (FQN, tensor), in order of discovery.
  const std::vector<std::pair<std::string, any_tensor>>& lifted_constants() const noexcept { return lifted_constants_; }

  // -- modules ----------------------------------------------------------------------------------------
  // Remembers a module object's FQN and type (export registers the whole tree before tracing).
  void register_module(const void* address, std::string fqn, std::string type) {
    modules_[address] = ir::module_frame{std::move(fqn), std::move(type)};
  }
  const ir::module_frame* find_module(const void* address) const {
    const auto it = modules_.find(address);
    return it == modules_.end() ? nullptr : &it->second;
  }
  // FQNs of the submodule calls seen, in call order (the module call graph's entries).
  std::vector<std::string>& module_calls() noexcept { return module_calls_; }

  // Records a call and returns its (first) value. `loc` may be null (operators have no location).
  ir::value_ref call(std::string target, std::vector<ir::argument> args, std::vector<ir::tensor_meta> vals,
                     std::vector<std::pair<std::string, ir::argument>> kwargs, const std::source_location* loc) {
    const ir::node_id n = graph_.add_call({.target = std::move(target),
                                           .args = std::move(args),
                                           .kwargs = std::move(kwargs),
                                           .vals = std::move(vals),
                                           .name_hint = {},
                                           .nn_module_stack = stack_,
                                           .stack_trace = loc ? format_location(*loc) : std::string{}});
    return ir::value_ref{n};
  }

  // The metadata of a typed tensor: its dims as symbolic expressions (anonymous dims get fresh
  // symbols s0, s1, ...).
  template <class T>
  ir::tensor_meta meta_of(const T&) {
    return meta_of_type<typename T::dtype_type, typename T::shape_type>();
  }
  template <class DT, class S>
  ir::tensor_meta meta_of_type() {
    ir::tensor_meta m{DT::value, {}};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (m.shape.push_back(ir::to_sym_expr<typename S::template dim_t<I>>(namer_)), ...);
    }(std::make_index_sequence<S::rank>{});
    return m;
  }

 private:
  ir::graph graph_;
  ir::symbol_namer namer_;
  std::vector<shape_requirement> requirements_;
  std::vector<ir::module_frame> stack_;
  std::unordered_map<const void*, ir::value_ref> by_storage_;
  std::vector<std::pair<std::string, any_tensor>> lifted_constants_;
  std::unordered_map<const void*, ir::module_frame> modules_;
  std::vector<std::string> module_calls_;
};

namespace detail {
inline tracing_context*& current_tracing_context_slot() noexcept {
  thread_local tracing_context* c = nullptr;
  return c;
}
}  // namespace detail

// The context tracing on this thread, or nullptr.
inline tracing_context* current_tracing_context() noexcept { return detail::current_tracing_context_slot(); }

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

// Marks a module's forward: while tracing, the ops recorded inside carry the module in their
// nn_module_stack and the call joins the module call graph. Eagerly it does nothing. A module's
// call operator starts with `const typex::module_scope scope(*this);`.
class module_scope {
 public:
  template <class M>
  explicit module_scope(const M& m) {
    tracing_context* ctx = current_tracing_context();
    if (ctx == nullptr) return;
    const ir::module_frame* f = ctx->find_module(&m);
    if (f == nullptr || f->path.empty()) return;  // the root is not a frame; unregistered: not a module of the export
    ctx->push_module(f->path, f->type);
    ctx->module_calls().push_back(f->path);
    ctx_ = ctx;
  }
  ~module_scope() {
    if (ctx_ != nullptr) ctx_->pop_module();
  }
  module_scope(const module_scope&) = delete;
  module_scope& operator=(const module_scope&) = delete;

 private:
  tracing_context* ctx_ = nullptr;
};

}  // namespace typex
