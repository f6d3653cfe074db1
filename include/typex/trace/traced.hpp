// typex/trace/traced.hpp — traced values: what a functor computes with while it is exported.
//
// traced<f32, shape<batch, fix<784>>> carries its dtype and shape in its type, like a host_tensor,
// but no data: it names a value of the graph being recorded. Its shape's symbolic dims hold the
// example inputs' values, so shape rules check them and record the facts they need.
#pragma once

#include <typex/core/sentence.hpp>
#include <typex/tensor/tensor_spec.hpp>
#include <typex/trace/context.hpp>

namespace typex {

template <dtype_tag_type DT, shape_type S>
class traced {
 public:
  using dtype_type = DT;
  using shape_type = S;
  static constexpr dtype scalar_type = DT::value;
  static constexpr std::size_t rank = S::rank;
  static constexpr bool is_pytree_leaf = true;

  traced(tracing_context& ctx, ir::value_ref v, const S& s) : ctx_(&ctx), value_(v), shape_(s) {}

  const S& shape() const noexcept { return shape_; }
  ir::value_ref value() const noexcept { return value_; }
  tracing_context& context() const noexcept { return *ctx_; }
  tensor_spec<DT, S> spec() const noexcept { return tensor_spec<DT, S>(shape_); }
  const std::string& name() const { return ctx_->graph()[value_.node].name; }

  template <class W>
  static constexpr void write_type(W& w) {
    w.put("traced<");
    tensor_spec<DT, S>::write_type(w);
    w.put('>');
  }
  // An error here means: the model branches (`if`, `while`, `?:`, `&&`) on a traced value, which
  // has no value while the program is recorded: the branch taken would be baked into the program.
  // typex::where picks between two values; typex::cond and typex::while_loop (trace/control_flow.hpp)
  // record the branch or the loop itself.
  template <int = 0>
  explicit operator bool() const {
    TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
      w.put("typex: a branch (if, while, ?:, &&) on a traced value ("); write_type(w);
      w.put("): its value is not known while the model is recorded, so the program would keep one branch; "
            "compute both and pick with typex::where(condition, a, b), branch with typex::cond(pred, true_fn, false_fn, "
            "operands...), or loop with typex::while_loop(cond_fn, body_fn, carried...)");
    });
    return false;
  }

  std::string to_string() const {
    std::string s = "traced ";  // (not "traced " + ...: g++ 12's bogus -Wrestrict, GCC bug 105329)
    s += spec().to_string();
    return s;
  }

 private:
  tracing_context* ctx_;
  ir::value_ref value_;
  S shape_;
};

namespace detail {
template <class T> struct is_traced : std::false_type {};
template <class DT, class S> struct is_traced<traced<DT, S>> : std::true_type {};
}  // namespace detail

template <class T>
concept traced_type = detail::is_traced<std::remove_cvref_t<T>>::value;

}  // namespace typex
