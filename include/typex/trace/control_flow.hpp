// typex/trace/control_flow.hpp — branches and loops that depend on data: typex::cond, while_loop,
// map and scan (torch.cond, torch.while_loop, torch.map, scan).
//
//   auto y = typex::cond(typex::gt(typex::mean(x), 0.0),
//                        [&](const auto& v) { return big(v); },     // the true branch
//                        [&](const auto& v) { return small(v); },   // the false branch
//                        x);                                         // the operands
//   auto [x_final, it] = typex::while_loop(typex::max_iterations{50}, cond_fn, body_fn, x0, it0);
//   auto ys = typex::map([&](const auto& x) { return fc(x); }, xs);      // over xs's dim 0
//   auto [h, hs] = typex::scan([&](const auto& h, const auto& x) { return std::pair{cell(x, h), cell(x, h)}; }, h0, xs);
//
// Called with tensors, each runs as plain C++ control flow. Called with traced values, each records
// one higher-order call (ir/control_flow.hpp) whose branches and bodies are traced into subgraphs:
//   - a value, parameter or buffer a branch reads from outside becomes an input of the subgraph
//     (lifted into the call once, as torch.export lifts it);
//   - the branches must return the same type: a static mismatch is a compile error naming both
//     types; a symbolic one (one branch [n], the other [m]) an export error naming both shapes;
//   - the shape facts a branch or body needs stay in its subgraph (run-time assertions there,
//     checked when it runs), not the whole program's guards;
//   - a buffer written inside a branch or loop body is functionalized as outside: a cond returns
//     its new value from both branches, a while_loop and a scan carry it; the program writes it
//     back as a BUFFER_MUTATION. A write inside map (whose iterations are independent) is refused.
// Carried values keep their type: a body that changes a dtype or a static extent is a compile
// error, a symbolic extent that changes an export error.
#pragma once

#include <typex/core/error.hpp>
#include <typex/core/sentence.hpp>
#include <typex/core/type_name.hpp>
#include <typex/ir/control_flow.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/trace/traced.hpp>
#include <typex/tree/flatten.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace typex {

// A while_loop's declared bound: at most this many iterations (past it, running is a
// state_error); it makes the loop differentiable (passes::differentiate).
struct max_iterations {
  std::int64_t value;
};

namespace detail {

// -- types ------------------------------------------------------------------------------------------
template <class T> inline constexpr bool is_cf_tensor_v = traced_type<T> || is_host_tensor<T>::value;
template <class T> struct is_std_tuple : std::false_type {};
template <class... T> struct is_std_tuple<std::tuple<T...>> : std::true_type {};
template <class A, class B> struct is_std_tuple<std::pair<A, B>> : std::true_type {};

// A tensor type with dim N in front (map's and scan's stacked results), element-wise over tuples.
template <class N, class T> struct stacked;
template <class N, class DT, class... D> struct stacked<N, traced<DT, shape<D...>>> { using type = traced<DT, shape<N, D...>>; };
template <class N, class DT, class... D> struct stacked<N, host_tensor<DT, shape<D...>>> { using type = host_tensor<DT, shape<N, D...>>; };
template <class N, class... T> struct stacked<N, std::tuple<T...>> { using type = std::tuple<typename stacked<N, T>::type...>; };
template <class N, class T> using stacked_t = typename stacked<N, T>::type;

// A tensor type without its dim 0 (the slices map and scan hand their bodies).
template <class T> struct sliced;
template <class DT, class D0, class... D> struct sliced<traced<DT, shape<D0, D...>>> { using type = traced<DT, shape<D...>>; using lead = D0; };
template <class DT, class D0, class... D> struct sliced<host_tensor<DT, shape<D0, D...>>> { using type = host_tensor<DT, shape<D...>>; using lead = D0; };
template <class T> using sliced_t = typename sliced<T>::type;

template <class D0, class... D>
shape<D0, D...> prepend_dim(const D0& d0, const shape<D...>& s) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return shape<D0, D...>(d0, s.template get<I>()...); }(std::index_sequence_for<D...>{});
}
template <class D0, class... D>
shape<D...> drop_dim(const shape<D0, D...>& s) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return shape<D...>(s.template get<I + 1>()...); }(std::index_sequence_for<D...>{});
}

// Whether a pytree holds a traced value (decided by its leaves' types; a structure whose shape is
// known only at run time is looked at by value).
template <class T>
bool holds_traced(const T& tree) {
  bool any = false;
  for_each_leaf(tree, [&](const auto& leaf) { any = any || traced_type<std::remove_cvref_t<decltype(leaf)>>; });
  return any;
}
template <class T>
constexpr bool holds_traced_type() {
  if constexpr (is_std_tuple<T>::value)
    return []<std::size_t... I>(std::index_sequence<I...>) { return (traced_type<std::tuple_element_t<I, T>> || ...); }(std::make_index_sequence<std::tuple_size_v<T>>{});
  else return traced_type<T>;
}
template <class T>
tracing_context* context_in(const T& tree) {
  tracing_context* best = nullptr;
  for_each_leaf(tree, [&](const auto& leaf) {
    if constexpr (traced_type<std::remove_cvref_t<decltype(leaf)>>)
      if (best == nullptr || leaf.context().depth() > best->depth()) best = &leaf.context();
  });
  return best;
}

// -- eager ------------------------------------------------------------------------------------------
// The value of a one-element bool tensor (or a bool).
template <class P>
bool predicate_value(const P& p, std::string_view who) {
  if constexpr (std::is_same_v<P, bool>) {
    return p;
  } else {
    static_assert(is_host_tensor<P>::value && std::is_same_v<typename P::dtype_type, b8>,
                  "typex::cond / while_loop: the predicate must be a bool tensor with one element (typex::gt(x, 0.0), ...) or a bool");
    if (p.numel() != 1) {
      raise<argument_error>([&](auto& w) {
        w.put(who); w.put(": the predicate has "); w.put_int(p.numel()); w.put(" elements "); p.shape().write_values(w);
        w.put("; it must have one (reduce it: typex::any, typex::all, or a comparison of a sum or mean)");
      });
    }
    return p.data()[0];
  }
}

// Slice i of a host tensor along dim 0 (a copy).
template <class T>
sliced_t<T> host_slice(const T& x, index_t i) {
  sliced_t<T> out(drop_dim(x.shape()));
  const std::size_t n = static_cast<std::size_t>(out.numel()) * sizeof(typename T::value_type);
  if (n != 0) std::memcpy(out.data(), x.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(out.numel()), n);
  return out;
}
template <class T>
void host_put(const T& dst, index_t i, const sliced_t<T>& y) {
  const std::size_t n = static_cast<std::size_t>(y.numel()) * sizeof(typename T::value_type);
  if (n != 0) std::memcpy(dst.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(y.numel()), y.data(), n);
}

// -- tracing ----------------------------------------------------------------------------------------
// The traced leaves of a pytree as values of `ctx` (a value of an enclosing context is captured; a
// tensor that is not traced, a parameter returned as is, is looked up by its storage).
template <class T>
std::vector<ir::value_ref> traced_values(tracing_context& ctx, const T& tree, std::string_view who) {
  std::vector<ir::value_ref> out;
  for_each_leaf(tree, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (traced_type<L>) out.push_back(ctx.current(ctx.import(leaf.context(), leaf.value())));
    else if constexpr (requires { leaf.get_storage(); })
      detail::raise_message<argument_error>(std::string(who) + ": a branch or body returns a tensor that is not traced (a parameter or "
                                            "buffer as is); return a value computed from it (typex::as_traced(t, x), or an op's result)");
    else detail::raise_message<argument_error>(std::string(who) + ": a branch or body returns a number; control flow returns tensors only");
  });
  return out;
}

// The tree `like` with its traced leaves replaced by values of `ctx`, in order from `values`.
template <class T>
T rebind_leaves(const T& like, tracing_context& ctx, const std::vector<ir::value_ref>& values, std::size_t first = 0) {
  T out = like;
  std::size_t k = first;
  for_each_leaf(out, [&](auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (traced_type<L>) {
      leaf = L(ctx, values.at(k++), leaf.shape());
    }
  });
  return out;
}

// A subgraph being traced: the child context, its inputs' placeholders and what it returned.
struct subgraph_trace {
  std::unique_ptr<tracing_context> ctx;
  std::size_t inputs = 0;                 // its own placeholders (the first ones)
  std::vector<ir::value_ref> outputs;     // (ctx's values)
};

// The operand tree `ops` with each traced leaf a new placeholder of `child` (named as the value it
// stands for, with its metadata: the subgraph shares the program's symbols).
template <class T>
T as_placeholders(tracing_context& child, const tracing_context& parent, const T& ops, std::size_t& count) {
  T out = ops;
  for_each_leaf(out, [&](auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (traced_type<L>) {
      tracing_context& from = leaf.context();
      const ir::value_ref now = from.current(leaf.value());
      const std::string name = &from == &parent ? from.graph()[now.node].name : std::string("arg");
      const ir::value_ref ph{child.graph().add_placeholder(name, from.graph().meta(now))};
      leaf = L(child, ph, leaf.shape());
      ++count;
    }
  });
  return out;
}

// The traced leaves of an operand tree as values of `parent` (the call's operands; a tensor that
// is not traced is captured where the subgraph reads it instead).
template <class T>
std::vector<ir::value_ref> operand_values(tracing_context& parent, const T& tree) {
  std::vector<ir::value_ref> out;
  for_each_leaf(tree, [&](const auto& leaf) {
    if constexpr (traced_type<std::remove_cvref_t<decltype(leaf)>>) out.push_back(parent.current(parent.import(leaf.context(), leaf.value())));
  });
  return out;
}

// The facts a subgraph's ops needed, as run-time assertions in it (they stay the subgraph's: a
// branch's needs do not constrain the whole program).
TYPEX_API void add_scoped_assertions(tracing_context& child, std::string_view where);

// Closes a subgraph: the placeholders of the captured values `captures` (the union over the
// subgraphs of one call, in order: each gets all) after its own inputs, then its outputs and
// assertions. Returns the graph.
TYPEX_API ir::graph close_subgraph(subgraph_trace& t, const std::vector<ir::value_ref>& captures, std::string_view where);

// The union of the captures of several subgraphs, in order of first appearance.
TYPEX_API std::vector<ir::value_ref> union_captures(std::initializer_list<const subgraph_trace*> ts);

// The module tensors written inside a subgraph (their storages, in order), refusing writes to
// anything else (an operand, a captured intermediate, a user input: torch forbids them too).
TYPEX_API std::vector<const void*> written_state(const tracing_context& child, std::string_view where);

// The current value of the module tensor with storage `s`, as a value of `ctx` (captured from an
// enclosing context if need be).
TYPEX_API ir::value_ref state_value(tracing_context& ctx, const void* s);

// Records the higher-order call into `parent` and returns its node.
TYPEX_API ir::node_id record_control_call(tracing_context& parent, const ir::control_call& c, std::vector<ir::tensor_meta> vals,
                                          std::string_view name);

// Two subgraphs that return differently shaped values (symbolic dims that differ).
[[noreturn]] TYPEX_API void branch_shapes_differ(std::string_view who, const std::vector<ir::tensor_meta>& a,
                                                 const std::vector<ir::tensor_meta>& b, std::string_view first, std::string_view second);

// A subgraph traced from f(ops...), with what f returned (its leaves the subgraph's values).
template <class R>
struct traced_subgraph : subgraph_trace {
  std::optional<R> result;
};

template <class F, class Ops>
auto trace_subgraph(tracing_context& parent, F& f, const Ops& ops, std::string_view who) {
  using R = std::remove_cvref_t<decltype(std::apply(f, ops))>;
  traced_subgraph<R> t;
  t.ctx = std::make_unique<tracing_context>(parent);
  const Ops inner = as_placeholders(*t.ctx, parent, ops, t.inputs);
  const scoped_tracing scope(*t.ctx);
  t.result.emplace(std::apply(f, inner));
  t.outputs = traced_values(*t.ctx, *t.result, who);
  return t;
}

template <class A, class B, class W>
constexpr void write_two_types(W& w) {
  w.put("the true branch returns "); write_type_name<A>(w); w.put(", the false branch returns "); write_type_name<B>(w);
}

}  // namespace detail

// -- cond -------------------------------------------------------------------------------------------
// pred ? true_fn(operands...) : false_fn(operands...), as one higher-order call when traced.
template <class P, class TrueFn, class FalseFn, class... Ops>
auto cond(const P& pred, TrueFn&& true_fn, FalseFn&& false_fn, const Ops&... operands) {
  using RT = std::remove_cvref_t<std::invoke_result_t<TrueFn&, const Ops&...>>;
  using RF = std::remove_cvref_t<std::invoke_result_t<FalseFn&, const Ops&...>>;
  if constexpr (!std::is_same_v<RT, RF>) {
    // An error here means: the two branches of typex::cond return different types; they must
    // return the same (dtype, shape and structure), as the program has one result either way.
    TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
      w.put("typex::cond: the branches return different types: ");
      detail::write_two_types<RT, RF>(w);
      w.put("; make both return the same dtype and shape (convert with typex::to, reshape, or pad the smaller)");
    });
    return RT(true_fn(operands...));  // (the true branch's type: what follows compiles on, no second error)
  } else if constexpr (!traced_type<P>) {
    return detail::predicate_value(pred, "typex::cond") ? RT(true_fn(operands...)) : RT(false_fn(operands...));
  } else {
    static_assert(std::is_same_v<typename P::dtype_type, b8>, "typex::cond: the predicate must be a bool tensor (a comparison)");
    const std::tuple<Ops...> own(operands...);
    tracing_context* inner = &pred.context();
    if (tracing_context* o = detail::context_in(own); o != nullptr && o->depth() > inner->depth()) inner = o;
    tracing_context& parent = recording_context(inner);
    auto t = detail::trace_subgraph(parent, true_fn, own, "typex::cond");
    auto f = detail::trace_subgraph(parent, false_fn, own, "typex::cond");
    // buffers written in either branch: both return their new values
    std::vector<const void*> written = detail::written_state(*t.ctx, "typex::cond's true branch");
    for (const void* s : detail::written_state(*f.ctx, "typex::cond's false branch"))
      if (std::find(written.begin(), written.end(), s) == written.end()) written.push_back(s);
    for (detail::subgraph_trace* b : {static_cast<detail::subgraph_trace*>(&t), static_cast<detail::subgraph_trace*>(&f)})
      for (const void* s : written) b->outputs.push_back(detail::state_value(*b->ctx, s));
    const std::vector<ir::value_ref> captured = detail::union_captures({&t, &f});
    ir::graph tg = detail::close_subgraph(t, captured, "typex::cond's true branch");
    ir::graph fg = detail::close_subgraph(f, captured, "typex::cond's false branch");
    const std::vector<ir::tensor_meta> out_t = ir::output_metas(tg), out_f = ir::output_metas(fg);
    if (out_t != out_f) detail::branch_shapes_differ("typex::cond", out_t, out_f, "the true branch", "the false branch");
    ir::control_call c;
    c.kind = ir::control_kind::cond;
    c.pred = parent.current(parent.import(pred.context(), pred.value()));
    c.carried = detail::operand_values(parent, own);
    c.carried.insert(c.carried.end(), captured.begin(), captured.end());
    c.graphs = {parent.graph().add_subgraph("true_graph", std::move(tg)), parent.graph().add_subgraph("false_graph", std::move(fg))};
    const ir::node_id n = detail::record_control_call(parent, c, out_t, "cond");
    std::vector<ir::value_ref> outs;
    for (std::uint32_t k = 0; k < out_t.size(); ++k) outs.push_back({n, k});
    const std::size_t user = outs.size() - written.size();
    for (std::size_t k = 0; k < written.size(); ++k) parent.mutate(written[k], outs[user + k]);
    // (the result: the true branch's, its leaves the call's outputs; its shapes' values the example's)
    RT result = detail::rebind_leaves(*t.result, parent, outs);
    return result;
  }
}

// -- while_loop ---------------------------------------------------------------------------------------
namespace detail {
template <class T> struct as_tuple_of { using type = std::tuple<T>; };
template <class... T> struct as_tuple_of<std::tuple<T...>> { using type = std::tuple<T...>; };
template <class T>
auto to_tuple(T&& v) {
  if constexpr (is_std_tuple<std::remove_cvref_t<T>>::value) return std::forward<T>(v);
  else return std::tuple<std::remove_cvref_t<T>>(std::forward<T>(v));
}

// Placeholders for the module tensors `written` (their current values in `parent`), bound to their
// storages in `child`: inside the subgraph they are carried values.
TYPEX_API void bind_carried_state(tracing_context& child, tracing_context& parent, const std::vector<const void*>& written,
                                  std::size_t& count);
// The current value of each of `written` in `ctx` (a body's outputs for the carried state).
TYPEX_API std::vector<ir::value_ref> state_values(tracing_context& ctx, const std::vector<const void*>& written);
// A loop body's carried outputs against what it carries (a symbolic extent that changes).
TYPEX_API void check_carried(std::string_view who, const std::vector<ir::tensor_meta>& carried, const std::vector<ir::tensor_meta>& got);

template <class F, class Ops>
auto trace_loop_part(tracing_context& parent, F& f, const Ops& ops, const std::vector<const void*>& state, std::string_view who) {
  using R = std::remove_cvref_t<decltype(std::apply(f, ops))>;
  traced_subgraph<R> t;
  t.ctx = std::make_unique<tracing_context>(parent);
  const Ops inner = as_placeholders(*t.ctx, parent, ops, t.inputs);
  bind_carried_state(*t.ctx, parent, state, t.inputs);
  const scoped_tracing scope(*t.ctx);
  t.result.emplace(std::apply(f, inner));
  t.outputs = traced_values(*t.ctx, *t.result, who);
  return t;
}
}  // namespace detail

// Runs body_fn while cond_fn holds: carried = body_fn(carried...) (a tuple of the carried values'
// types, or the one value), returning the last carried values (the one value, or a tuple).
template <class CondFn, class BodyFn, class... Cs>
  requires(sizeof...(Cs) > 0)
auto while_loop(max_iterations bound, CondFn&& cond_fn, BodyFn&& body_fn, const Cs&... carried) {
  using carry_t = std::tuple<Cs...>;
  using BR = std::remove_cvref_t<std::invoke_result_t<BodyFn&, const Cs&...>>;
  using body_t = typename detail::as_tuple_of<BR>::type;
  using P = std::remove_cvref_t<std::invoke_result_t<CondFn&, const Cs&...>>;
  if constexpr (!std::is_same_v<body_t, carry_t>) {
    // An error here means: the loop body returns other types than the loop carries; a carried
    // value keeps its dtype and shape from one iteration to the next.
    TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
      w.put("typex::while_loop: the body returns "); detail::write_type_name<body_t>(w); w.put(" where the loop carries ");
      detail::write_type_name<carry_t>(w);
      w.put("; the body must return each carried value with its dtype and shape (as a std::tuple, or the one value)");
    });
    if constexpr (sizeof...(Cs) == 1) return std::get<0>(carry_t(carried...));  // (the carried values: no second error)
    else return carry_t(carried...);
  } else if constexpr (!(traced_type<Cs> || ...)) {
    if (bound.value < -1) detail::raise_message<argument_error>("typex::while_loop: max_iterations must be >= 0 (or -1: no bound)");
    carry_t cur(carried...);
    for (std::int64_t it = 0; detail::predicate_value(std::apply(cond_fn, cur), "typex::while_loop"); ++it) {
      if (bound.value >= 0 && it >= bound.value) {
        detail::raise<state_error>([&](auto& w) {
          w.put("typex::while_loop: the loop ran past its declared bound, max_iterations = "); w.put_int(bound.value);
        });
      }
      cur = detail::to_tuple(std::apply(body_fn, cur));
    }
    if constexpr (sizeof...(Cs) == 1) return std::get<0>(std::move(cur));
    else return cur;
  } else {
    static_assert(traced_type<P>, "typex::while_loop: traced, the condition must return a traced bool tensor (a comparison)");
    static_assert((traced_type<Cs> && ...), "typex::while_loop: traced, every carried value must be traced (a tensor that is not is read by the body from outside)");
    if (bound.value < -1) detail::raise_message<argument_error>("typex::while_loop: max_iterations must be >= 0 (or -1: no bound)");
    tracing_context& parent = recording_context(detail::context_in(std::tuple<const Cs&...>(carried...)));
    const carry_t own(carried...);
    auto wrapped_body = [&](const auto&... c) { return detail::to_tuple(body_fn(c...)); };
    std::vector<const void*> state;
    auto cg = detail::trace_loop_part(parent, cond_fn, own, state, "typex::while_loop");
    auto bg = detail::trace_loop_part(parent, wrapped_body, own, state, "typex::while_loop");
    if (!detail::written_state(*cg.ctx, "typex::while_loop's condition").empty())
      detail::raise_message<unsupported_error>("typex::while_loop: the condition writes a buffer; write state in the body");
    state = detail::written_state(*bg.ctx, "typex::while_loop's body");
    if (!state.empty()) {  // (the buffers the body writes are carried: traced again with them as inputs)
      cg = detail::trace_loop_part(parent, cond_fn, own, state, "typex::while_loop");
      bg = detail::trace_loop_part(parent, wrapped_body, own, state, "typex::while_loop");
      const std::vector<ir::value_ref> st = detail::state_values(*bg.ctx, state);
      bg.outputs.insert(bg.outputs.end(), st.begin(), st.end());
    }
    const std::vector<ir::value_ref> captured = detail::union_captures({&cg, &bg});
    ir::graph cgraph = detail::close_subgraph(cg, captured, "typex::while_loop's condition");
    ir::graph bgraph = detail::close_subgraph(bg, captured, "typex::while_loop's body");
    ir::control_call c;
    c.kind = ir::control_kind::while_loop;
    c.carried = detail::operand_values(parent, own);
    for (const void* s : state) c.carried.push_back(detail::state_value(parent, s));
    const std::vector<ir::tensor_meta> carried_metas = ir::value_metas(parent.graph(), c.carried);
    detail::check_carried("typex::while_loop", carried_metas, ir::output_metas(bgraph));
    c.additional = captured;
    c.max_iterations = bound.value;
    c.graphs = {parent.graph().add_subgraph("while_loop_cond_graph", std::move(cgraph)),
                parent.graph().add_subgraph("while_loop_body_graph", std::move(bgraph))};
    const ir::node_id n = detail::record_control_call(parent, c, carried_metas, "while_loop");
    std::vector<ir::value_ref> outs;
    for (std::uint32_t k = 0; k < carried_metas.size(); ++k) outs.push_back({n, k});
    for (std::size_t k = 0; k < state.size(); ++k) parent.mutate(state[k], outs[sizeof...(Cs) + k]);
    carry_t result = detail::rebind_leaves(own, parent, outs);
    if constexpr (sizeof...(Cs) == 1) return std::get<0>(std::move(result));
    else return result;
  }
}
template <class CondFn, class BodyFn, class... Cs>
  requires(sizeof...(Cs) > 0 && !std::is_same_v<std::remove_cvref_t<CondFn>, max_iterations>)
auto while_loop(CondFn&& cond_fn, BodyFn&& body_fn, const Cs&... carried) {
  return while_loop(max_iterations{-1}, std::forward<CondFn>(cond_fn), std::forward<BodyFn>(body_fn), carried...);
}

// -- map and scan -------------------------------------------------------------------------------------
namespace detail {
template <class X>
index_t lead_extent(const X& x) {
  if constexpr (is_std_tuple<X>::value) return lead_extent(std::get<0>(x));
  else return x.shape().template get<0>().get();
}
template <class X>
auto lead_dim(const X& x) {
  if constexpr (is_std_tuple<X>::value) return lead_dim(std::get<0>(x));
  else return x.shape().template get<0>();
}
template <class X>
void check_leads(const X& x, index_t n, std::string_view who) {
  if constexpr (is_std_tuple<X>::value) {
    std::apply([&](const auto&... e) { (check_leads(e, n, who), ...); }, x);
  } else if (x.shape().template get<0>().get() != n) {
    raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": the xs do not share their leading dim ("); w.put_int(n); w.put(" and "); w.put_int(x.shape().template get<0>().get());
      w.put(")");
    });
  }
}
template <class X>
auto slice_tree(const X& x, index_t i) {
  if constexpr (is_std_tuple<X>::value) return std::apply([&](const auto&... e) { return std::tuple(slice_tree(e, i)...); }, x);
  else return host_slice(x, i);
}
template <class N, class Y>
auto alloc_stacked(const N& n, const Y& y) {
  if constexpr (is_std_tuple<Y>::value) return std::apply([&](const auto&... e) { return std::tuple(alloc_stacked(n, e)...); }, y);
  else return stacked_t<N, Y>(prepend_dim(n, y.shape()));
}
template <class S, class Y>
void put_tree(const S& dst, index_t i, const Y& y) {
  if constexpr (is_std_tuple<Y>::value) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (put_tree(std::get<I>(dst), i, std::get<I>(y)), ...); }(std::make_index_sequence<std::tuple_size_v<Y>>{});
  } else {
    host_put(dst, i, y);
  }
}
// The slices of a traced tree as new placeholders of `child`.
template <class X>
auto slice_placeholders(tracing_context& child, const X& x, std::size_t& count) {
  if constexpr (is_std_tuple<X>::value) {
    return std::apply([&](const auto&... e) { return std::tuple(slice_placeholders(child, e, count)...); }, x);
  } else {
    ir::tensor_meta m = x.context().graph().meta(x.context().current(x.value()));
    m.shape.erase(m.shape.begin());
    const ir::value_ref ph{child.graph().add_placeholder(x.context().graph()[x.value().node].name + "_i", std::move(m))};
    ++count;
    return sliced_t<X>(child, ph, drop_dim(x.shape()));
  }
}
// The stacked result (the tree of `y`'s type with dim n in front), its leaves `values` from `first`.
template <class N, class Y>
auto stacked_result(tracing_context& ctx, const N& n, const Y& y, const std::vector<ir::value_ref>& values, std::size_t& k) {
  if constexpr (is_std_tuple<Y>::value) {
    return std::apply([&](const auto&... e) { return std::tuple{stacked_result(ctx, n, e, values, k)...}; }, y);
  } else {
    static_assert(traced_type<Y>, "typex::map / scan: the body returns a tensor (or a std::tuple of tensors) per slice");
    return stacked_t<N, Y>(ctx, values.at(k++), prepend_dim(n, y.shape()));
  }
}
template <class T> using stacked_of_t = decltype(alloc_stacked(std::declval<const T&>(), std::declval<const T&>()));
}  // namespace detail

// fn applied to each slice of xs along dim 0 (every xs with the same leading dim), the results
// stacked: ys[i] = fn(xs[i]...).
template <class Fn, class... Xs>
  requires(sizeof...(Xs) > 0)
auto map(Fn&& fn, const Xs&... xs) {
  static_assert(((detail::is_cf_tensor_v<Xs> && Xs::rank > 0) && ...), "typex::map: maps over tensors with a leading dim");
  if constexpr (!(traced_type<Xs> || ...)) {
    const std::tuple<const Xs&...> all(xs...);
    const index_t n = detail::lead_extent(std::get<0>(all));
    (detail::check_leads(xs, n, "typex::map"), ...);
    if (n == 0) detail::raise_message<argument_error>("typex::map: the xs' leading dim is 0; map needs a slice to know the result's shape");
    auto y0 = fn(detail::host_slice(xs, 0)...);
    auto out = detail::alloc_stacked(detail::lead_dim(std::get<0>(all)), y0);
    detail::put_tree(out, 0, y0);
    for (index_t i = 1; i < n; ++i) detail::put_tree(out, i, fn(detail::host_slice(xs, i)...));
    return out;
  } else {
    static_assert((traced_type<Xs> && ...), "typex::map: traced, every xs must be traced");
    const std::tuple<const Xs&...> all(xs...);
    tracing_context& parent = recording_context(detail::context_in(all));
    detail::subgraph_trace t;
    t.ctx = std::make_unique<tracing_context>(parent);
    const auto slices = std::tuple(detail::slice_placeholders(*t.ctx, xs, t.inputs)...);
    using Y = std::remove_cvref_t<decltype(std::apply(fn, slices))>;
    std::optional<Y> y;
    {
      const scoped_tracing scope(*t.ctx);
      y.emplace(std::apply(fn, slices));
      t.outputs = detail::traced_values(*t.ctx, *y, "typex::map");
    }
    if (!detail::written_state(*t.ctx, "typex::map's body").empty())
      detail::raise_message<unsupported_error>("typex::map: the body writes a buffer; map's iterations are independent, so the order of the writes "
                                       "is not defined: carry the state through typex::scan instead");
    const std::vector<ir::value_ref> captured = detail::union_captures({&t});
    ir::graph body = detail::close_subgraph(t, captured, "typex::map's body");
    ir::control_call c;
    c.kind = ir::control_kind::map;
    c.xs = detail::operand_values(parent, all);
    c.additional = captured;
    std::vector<ir::tensor_meta> vals = ir::output_metas(body);
    const ir::sym_expr lead = parent.graph().meta(c.xs.front()).shape.front();
    for (ir::tensor_meta& m : vals) m.shape.insert(m.shape.begin(), lead);
    c.graphs = {parent.graph().add_subgraph("body_graph", std::move(body))};
    const ir::node_id node = detail::record_control_call(parent, c, vals, "map_impl");
    std::vector<ir::value_ref> outs;
    for (std::uint32_t k = 0; k < vals.size(); ++k) outs.push_back({node, k});
    std::size_t k = 0;
    return detail::stacked_result(parent, detail::lead_dim(std::get<0>(all)), *y, outs, k);
  }
}

namespace detail {
// An error here means: a scan's body returns its new carry with another type (dtype, shape or
// structure) than the carry it was given.
template <class NC, class C>
constexpr bool scan_carry_fits() {
  if constexpr (!std::is_same_v<NC, C>) {
    TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
      w.put("typex::scan: the body returns the carry as "); detail::write_type_name<NC>(w); w.put(" where it is ");
      detail::write_type_name<C>(w); w.put("; the carry keeps its dtype and shape from one step to the next");
    });
    return false;
  } else {
    return true;
  }
}
}  // namespace detail

struct scan_options {
  bool reverse = false;  // take the slices from the last to the first (the ys keep xs's order)
};

// carry = init; for each slice x of xs along dim 0: (carry, y) = fn(carry, x); returns (the last
// carry, the ys stacked). carry and x are each a tensor or a std::tuple of tensors; fn returns a
// std::pair (or 2-tuple) of the new carry (of the carry's type) and y.
template <class Fn, class C, class X>
auto scan(Fn&& fn, const C& init, const X& xs, scan_options options = {}) {
  using carry_t = C;
  if constexpr (!detail::holds_traced_type<X>()) {
    using S = decltype(detail::slice_tree(xs, 0));
    using RR = std::remove_cvref_t<std::invoke_result_t<Fn&, const C&, const S&>>;
    static_assert(std::tuple_size_v<RR> == 2, "typex::scan: the body returns a pair (new carry, y)");
    using NC = std::remove_cvref_t<std::tuple_element_t<0, RR>>;
    if constexpr (!detail::scan_carry_fits<NC, carry_t>()) {
      return std::pair<carry_t, int>(init, 0);  // (the carry as it came: no second error)
    } else {
      const index_t n = detail::lead_extent(xs);
      detail::check_leads(xs, n, "typex::scan");
      if (n == 0) detail::raise_message<argument_error>("typex::scan: the xs' leading dim is 0; scan needs a slice to know the result's shape");
      carry_t carry = init;
      const index_t first = options.reverse ? n - 1 : 0;
      RR r0 = fn(carry, detail::slice_tree(xs, first));
      carry = std::get<0>(r0);
      auto out = detail::alloc_stacked(detail::lead_dim(xs), std::get<1>(r0));
      detail::put_tree(out, first, std::get<1>(r0));
      for (index_t s = 1; s < n; ++s) {
        const index_t i = options.reverse ? n - 1 - s : s;
        RR r = fn(carry, detail::slice_tree(xs, i));
        carry = std::get<0>(r);
        detail::put_tree(out, i, std::get<1>(r));
      }
      return std::pair<carry_t, decltype(out)>(std::move(carry), std::move(out));
    }
  } else {
    tracing_context* inner = detail::context_in(xs);
    if (tracing_context* i = detail::context_in(init); i != nullptr && (inner == nullptr || i->depth() > inner->depth())) inner = i;
    tracing_context& parent = recording_context(inner);
    const auto trace = [&](const std::vector<const void*>& state) {
      using S = decltype(detail::slice_placeholders(parent, xs, std::declval<std::size_t&>()));
      using RR = std::remove_cvref_t<std::invoke_result_t<Fn&, const C&, const S&>>;
      detail::traced_subgraph<RR> t;
      t.ctx = std::make_unique<tracing_context>(parent);
      const C inner_carry = detail::as_placeholders(*t.ctx, parent, init, t.inputs);
      detail::bind_carried_state(*t.ctx, parent, state, t.inputs);
      const S slices = detail::slice_placeholders(*t.ctx, xs, t.inputs);
      const scoped_tracing scope(*t.ctx);
      t.result.emplace(fn(inner_carry, slices));
      return t;
    };
    using RR = typename decltype(trace({}).result)::value_type;
    static_assert(std::tuple_size_v<RR> == 2, "typex::scan: the body returns a pair (new carry, y)");
    using NC = std::remove_cvref_t<std::tuple_element_t<0, RR>>;
    if constexpr (!detail::scan_carry_fits<NC, carry_t>()) {
      return std::pair<carry_t, int>(init, 0);  // (the carry as it came: no second error)
    } else {
      auto t = trace({});
      std::vector<const void*> state = detail::written_state(*t.ctx, "typex::scan's body");
      if (!state.empty()) t = trace(state);
      {
        const scoped_tracing scope(*t.ctx);
        std::vector<ir::value_ref> carry_out = detail::traced_values(*t.ctx, std::get<0>(*t.result), "typex::scan");
        const std::vector<ir::value_ref> st = detail::state_values(*t.ctx, state);
        const std::vector<ir::value_ref> ys = detail::traced_values(*t.ctx, std::get<1>(*t.result), "typex::scan");
        carry_out.insert(carry_out.end(), st.begin(), st.end());
        carry_out.insert(carry_out.end(), ys.begin(), ys.end());
        t.outputs = std::move(carry_out);
      }
      const std::vector<ir::value_ref> captured = detail::union_captures({&t});
      ir::graph body = detail::close_subgraph(t, captured, "typex::scan's body");
      ir::control_call c;
      c.kind = ir::control_kind::scan;
      c.carried = detail::operand_values(parent, init);
      const std::size_t user_carry = c.carried.size();
      for (const void* s : state) c.carried.push_back(detail::state_value(parent, s));
      c.xs = detail::operand_values(parent, xs);
      c.additional = captured;
      c.reverse = options.reverse;
      const std::vector<ir::tensor_meta> carried_metas = ir::value_metas(parent.graph(), c.carried);
      std::vector<ir::tensor_meta> body_out = ir::output_metas(body);
      detail::check_carried("typex::scan", carried_metas, std::vector<ir::tensor_meta>(body_out.begin(), body_out.begin() + static_cast<std::ptrdiff_t>(carried_metas.size())));
      const ir::sym_expr lead = parent.graph().meta(c.xs.front()).shape.front();
      for (std::size_t k = carried_metas.size(); k < body_out.size(); ++k) body_out[k].shape.insert(body_out[k].shape.begin(), lead);
      c.graphs = {parent.graph().add_subgraph("scan_combine_graph", std::move(body))};
      const ir::node_id node = detail::record_control_call(parent, c, body_out, "scan");
      std::vector<ir::value_ref> outs;
      for (std::uint32_t k = 0; k < body_out.size(); ++k) outs.push_back({node, k});
      for (std::size_t k = 0; k < state.size(); ++k) parent.mutate(state[k], outs[user_carry + k]);
      carry_t carry = detail::rebind_leaves(init, parent, outs);
      std::size_t k = carried_metas.size();
      auto ys = detail::stacked_result(parent, detail::lead_dim(xs), std::get<1>(*t.result), outs, k);
      return std::pair<carry_t, decltype(ys)>(std::move(carry), std::move(ys));
    }
  }
}

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API void typex::detail::add_scoped_assertions(tracing_context& child, std::string_view where) {
  for (const shape_requirement& r : child.requirements()) {
    std::string message = r.op;
    if (!r.node.empty()) message += " (node '" + r.node + "')";
    message += " in ";
    message += where;
    child.graph().add_call({.target = op_id_of<ir::assert_shape_op>,
                            .args = {terms_expr(r.lhs_terms), std::string(to_string(r.rel)), terms_expr(r.rhs_terms), std::move(message)},
                            .name_hint = "_assert_shape",
                            .stack_trace = r.site});
  }
}

TYPEX_API auto typex::detail::close_subgraph(subgraph_trace& t, const std::vector<ir::value_ref>& captures, std::string_view where) -> ir::graph {
  tracing_context& child = *t.ctx;
  ir::graph& g = child.graph();
  std::vector<ir::node_id> ph;
  for (ir::value_ref v : captures) ph.push_back(child.import(*child.parent(), v).node);
  // placeholders first: the subgraph's own inputs, then the captured values in the call's order
  std::vector<ir::node_id> order;
  std::vector<bool> placed(g.size(), false);
  for (ir::node_id i = 0; i < t.inputs; ++i) {
    order.push_back(i);
    placed[i] = true;
  }
  for (ir::node_id p : ph) {
    if (placed[p]) continue;
    order.push_back(p);
    placed[p] = true;
  }
  for (ir::node_id i = 0; i < g.size(); ++i) {
    if (placed[i]) continue;
    if (g[i].op == ir::node_op::placeholder) {
      raise<unsupported_error>([&](auto& w) {
        w.put("typex: "); w.put(where); w.put(" made the input '"); w.put(g[i].name);
        w.put("' that is neither an operand nor a captured value (a constant computed from module state while tracing); "
              "compute it outside the control flow and pass it in");
      });
    }
    order.push_back(i);
  }
  std::vector<ir::node_id> position(g.size());
  for (ir::node_id k = 0; k < order.size(); ++k) position[order[k]] = k;
  g.reorder(order);
  std::vector<ir::value_ref> outs;
  for (ir::value_ref v : t.outputs) outs.push_back({position[v.node], v.index});
  add_scoped_assertions(child, where);
  g.set_output(std::move(outs));
  return std::move(g);
}

TYPEX_API auto typex::detail::union_captures(std::initializer_list<const subgraph_trace*> ts) -> std::vector<ir::value_ref> {
  std::vector<ir::value_ref> out;
  for (const subgraph_trace* t : ts)
    for (ir::value_ref v : t->ctx->captures())
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

TYPEX_API auto typex::detail::written_state(const tracing_context& child, std::string_view where) -> std::vector<const void*> {
  if (!child.input_mutations().empty()) {
    const ir::node& n = child.graph()[child.input_mutations().front().first];
    raise<unsupported_error>([&](auto& w) {
      w.put("typex: "); w.put(where); w.put(" writes in place to '"); w.put(n.name);
      w.put("', one of its operands or a value it reads from outside; inside control flow only module buffers may be written "
            "(they are carried and written back); return the new value instead");
    });
  }
  std::vector<const void*> out;
  for (const auto& [storage, value] : child.mutations()) {
    if (child.is_forward_constant(storage)) continue;
    out.push_back(storage);
  }
  return out;
}

TYPEX_API auto typex::detail::state_value(tracing_context& ctx, const void* s) -> ir::value_ref {
  if (const ir::value_ref* v = ctx.find_storage(s)) return ctx.current(*v);
  if (ctx.parent() == nullptr) raise_message<state_error>("typex: control flow lost track of a written tensor (a bug in typex)");
  return ctx.import(*ctx.parent(), state_value(*ctx.parent(), s));
}

TYPEX_API void typex::detail::bind_carried_state(tracing_context& child, tracing_context& parent, const std::vector<const void*>& written,
                                                 std::size_t& count) {
  for (const void* s : written) {
    const ir::value_ref outer = state_value(parent, s);
    const ir::value_ref ph{child.graph().add_placeholder(parent.graph()[outer.node].name, parent.graph().meta(outer))};
    child.bind_storage(s, ph);
    ++count;
  }
}

TYPEX_API auto typex::detail::state_values(tracing_context& ctx, const std::vector<const void*>& written) -> std::vector<ir::value_ref> {
  std::vector<ir::value_ref> out;
  for (const void* s : written) out.push_back(state_value(ctx, s));
  return out;
}

TYPEX_API void typex::detail::check_carried(std::string_view who, const std::vector<ir::tensor_meta>& carried, const std::vector<ir::tensor_meta>& got) {
  for (std::size_t k = 0; k < carried.size() && k < got.size(); ++k) {
    if (carried[k] == got[k]) continue;
    raise<shape_error>([&](auto& w) {
      w.put(who); w.put(": carried value "); w.put_int(static_cast<long long>(k)); w.put(" enters the body as ");
      w.put(carried[k].to_string()); w.put(" and leaves it as "); w.put(got[k].to_string());
      w.put("; a carried value keeps its dtype and shape from one iteration to the next");
    });
  }
}

TYPEX_API auto typex::detail::record_control_call(tracing_context& parent, const ir::control_call& c, std::vector<ir::tensor_meta> vals,
                                                  std::string_view name) -> ir::node_id {
  const ir::value_ref v = parent.call(ir::control_op(c.kind), ir::control_call_arguments(c), std::move(vals), {}, nullptr);
  parent.graph().rename(v.node, parent.graph().unique_name(name));
  ir::check_control_flow(parent.graph(), parent.graph()[v.node]);
  return v.node;
}

TYPEX_API void typex::detail::branch_shapes_differ(std::string_view who, const std::vector<ir::tensor_meta>& a,
                                                   const std::vector<ir::tensor_meta>& b, std::string_view first, std::string_view second) {
  raise<shape_error>([&](auto& w) {
    w.put(who); w.put(": "); w.put(first); w.put(" returns "); w.put(ir::detail::metas_text(a)); w.put(" and "); w.put(second);
    w.put(" returns "); w.put(ir::detail::metas_text(b));
    w.put("; both branches must return the same shapes (a symbolic dim is the same only when it is the same expression)");
  });
}
#endif  // TYPEX_HEADER_DEFINITIONS
