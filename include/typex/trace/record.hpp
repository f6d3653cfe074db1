// typex/trace/record.hpp — the trace-mode runner: an op call on traced values records a node.
//
// The result's dtype and shape come from the op's rule (so static mistakes are compile errors and
// run-time facts are checked on the example extents and recorded); its arguments become graph
// values (traced values directly, host and module tensors by storage, lifted if new) or constants
// (scalars). The node carries the module stack and the user's source location.
#pragma once

#include <typex/ir/op_arguments.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>
#include <typex/trace/traced.hpp>

#include <string>
#include <tuple>
#include <vector>

namespace typex {

template <class DT, class S>
struct is_traced_argument<traced<DT, S>> : std::true_type {};

namespace detail {
// The context an op on these arguments records into: the innermost of their traced values'
// contexts (inside a branch of typex::cond, an op on a branch value and a captured outer value
// records into the branch; the outer value becomes the branch's input).
template <class A>
void innermost_context(tracing_context*& best, const A& a) {
  if constexpr (is_tensor_list_v<A>) {
    std::apply([&](const auto&... t) { (innermost_context(best, t), ...); }, a.items);
  } else if constexpr (traced_type<A>) {
    if (best == nullptr || a.context().depth() > best->depth()) best = &a.context();
  }
}
template <class... A>
tracing_context& context_of(const A&... args) {
  tracing_context* best = nullptr;
  (innermost_context(best, args), ...);
  return recording_context(best);  // (the trace-mode runner runs only with a traced argument)
}

template <class T>
ir::argument to_ir_argument(tracing_context& ctx, const T& a);

template <class... T>
ir::argument to_ir_argument(tracing_context& ctx, const tensor_list<T...>& l) {
  return std::apply([&](const auto&... t) {
    return std::vector<ir::value_ref>{std::get<ir::value_ref>(to_ir_argument(ctx, t))...};
  }, l.items);
}

template <class T>
ir::argument to_ir_argument(tracing_context& ctx, const T& a) {
  if constexpr (traced_type<T>) {
    // (a value of an enclosing context, read inside a branch or loop body: captured as its input;
    // after an in-place write to it: the value written)
    return ctx.current(&a.context() == &ctx ? a.value() : ctx.import(a.context(), a.value()));
  } else if constexpr (std::is_null_pointer_v<T>) {
    return ir::none_t{};
  } else if constexpr (std::is_same_v<T, bool>) {
    return a;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<std::int64_t>(a);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(a);
  } else {
    return ctx.value_of_tensor(a);
  }
}

// Records a call of `op` on `args` (traced values, host and module tensors, numbers) into `ctx`
// and returns its value and result spec: the trace-mode runner's body, and what the eager runner
// does while a model is traced when an op reads the module's state (a parameter, buffer or tensor
// member, or a value computed from them), so that such an op is a node of the program reading
// the lifted placeholders rather than a constant frozen at export.
template <class Op, class... A>
auto record_op(tracing_context& ctx, const Op& op, const std::source_location* loc, const A&... args) {
  const std::size_t facts = ctx.requirements().size();
  const auto spec = op.result(detail::spec_of_argument(args)...);
  using R = std::remove_cvref_t<decltype(spec)>;
  std::vector<ir::argument> ir_args =
      ir::op_arguments(op, &ctx.namer(), [&](const auto& a) { return detail::to_ir_argument(ctx, a); }, args...);
  const ir::value_ref v = ctx.call(op_id_of<Op>, std::move(ir_args),
                                   {ctx.meta_of_type<typename R::dtype_type, typename R::shape_type>()}, {}, loc);
  ctx.attribute_requirements(facts, v);  // (the facts the rule needed: their node and source line)
  if constexpr (detail::view_op_type<Op>) {  // (an in-place write to it is a write to its input)
    const ir::argument& self = ctx.graph()[v.node].args.front();
    if (const auto* base = std::get_if<ir::value_ref>(&self))
      ctx.note_view(v, *base, detail::shares_memory(Op::target) ? std::optional<op_id>(op_id_of<aten::reshape>) : std::nullopt, Op::target);
  }
  if constexpr (requires { Op::data_dependent; }) {  // dim 0 of the result is a data-dependent size
    using N = typename R::shape_type::template dim_t<0>;
    std::string name = "typex::";  // aten.nonzero.default -> typex::nonzero
    name += Op::target.substr(5, Op::target.find('.', 5) - 5);
    ctx.add_unbacked({std::string(N::name.view()), N::lo, N::hi, std::move(name), ctx.graph()[v.node].name});
  }
  return std::pair<ir::value_ref, R>(v, spec);
}

// Whether an op on these (non-traced) arguments reads a tensor the trace follows: a lifted module
// tensor, or the result of an op recorded from them.
template <class... A>
bool reads_traced_state([[maybe_unused]] const tracing_context& ctx, const A&... args) {
  [[maybe_unused]] const auto one = [&](const auto& a) {
    using T = std::remove_cvref_t<decltype(a)>;
    if constexpr (is_tensor_list_v<T>)
      return std::apply([&](const auto&... t) { return (ctx.follows_storage(t.get_storage().data()) || ...); }, a.items);
    else if constexpr (requires { a.get_storage(); }) return ctx.follows_storage(a.get_storage().data());  // (an enclosing context's too)
    else return false;
  };
  return (one(args) || ... || false);
}
}  // namespace detail

template <>
struct op_runner<trace_mode> {
  template <class Op, class... A>
  static auto run(const Op& op, const std::source_location* loc, const A&... args) {
    return record(detail::context_of(args...), op, loc, args...);
  }

  // A factory (no tensor argument) recorded into the graph that `like` is traced in.
  template <class Op, class Like>
  static auto run_factory(const Op& op, const std::source_location* loc, const Like& like) {
    if constexpr (!Op::traceable) {
      // (arange with number bounds: a length known only as a number, which the ops after it could
      // not follow in the graph)
      typex::detail::raise<argument_error>([&](auto& w) {
        w.put(Op::target);
        w.put(": traced with number bounds, its length is a run-time number (dyn) that the graph cannot follow "
              "through later ops; pass the bounds as static dims (0_c, 8_c, 2_c) or symbolic ones");
      });
    }
    return record(like.context(), op, loc);
  }

 private:
  template <class Op, class... A>
  static auto record(tracing_context& ctx, const Op& op, const std::source_location* loc, const A&... args) {
    const auto [v, spec] = detail::record_op(ctx, op, loc, args...);
    using R = std::remove_cvref_t<decltype(spec)>;
    return traced<typename R::dtype_type, typename R::shape_type>(ctx, v, spec.shape);
  }
};

// A tensor that is not traced (a module's parameter or buffer), seen as `like` sees it: while
// tracing (like is a traced value), the graph value that tensor is lifted to, so that ops on it
// alone (slicing a packed weight) are recorded rather than run; eagerly, the tensor itself.
template <class T, class Like>
auto as_traced(const T& t, const Like& like) {
  if constexpr (traced_type<Like> && !traced_type<T>) {
    tracing_context& ctx = like.context();
    return traced<typename T::dtype_type, typename T::shape_type>(ctx, ctx.value_of_tensor(t), t.shape());
  } else {
    return t;
  }
}

}  // namespace typex
