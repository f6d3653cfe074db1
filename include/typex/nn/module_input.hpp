// typex/nn/module_input.hpp — a module's static check of its input, in the module's own terms.
//
// A Linear<512, 10> fed [batch, 256] would otherwise fail inside the op it calls ("typex::linear:
// inner extents differ (lhs [batch, 256], rhs [512, 10])"), which names neither the module nor
// what to change. A module whose input must have one extent says so with
//
//   static constexpr nn::input_rule input_rule{.module = "nn::Linear", .parameter = "in_features",
//                                              .dim = -1, .extent = In, .layout = "[..., #]"};
//
// and calls through `nn::checked_call(*this, x, body)`: when the input's extent at `dim` is static
// and differs, the first error line is
//
//   typex::nn::Linear (in_features = 512) takes [..., 512]; its input is [batch, 256]: dim 1 is 256, not 512
//
// and, inside a Sequential, names the element: "typex::nn::Sequential: element [5], nn::Conv2d
// (in_channels = 32), takes [N, 32, H, W]; element [4] gives it [batch, 64, 12, 12] ...". The call
// then has the type it would have had with a fitting input, so nothing after it fails (one
// mistake, one error). Symbolic and run-time extents are left to the op, which checks their
// ranges at compile time and their values at export and run time.
#pragma once

#include <typex/core/rules/slice.hpp>
#include <typex/core/shape.hpp>
#include <typex/core/sentence.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/trace/traced.hpp>

#include <concepts>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <utility>

namespace typex::nn {
// A member a module's configuration leaves out (torch's bias=False, elementwise_affine=False): an
// empty type that reflection skips (not a tensor, not a module), so the state dict has no key for it.
struct absent {};
}  // namespace typex::nn

namespace typex::nn {

// What a module takes: its input's dim `dim` (negative: from the end) is `extent`, the value of the
// module's `parameter`. `layout` shows such an input, '#' standing for the extent.
struct input_rule {
  std::string_view module;
  std::string_view parameter;
  long long dim = -1;
  index_t extent = 0;
  std::string_view layout;
};

}  // namespace typex::nn

// (In typex::detail, as nn code spells typex's own helpers detail::...)
namespace typex::detail {

template <class M>
concept has_input_rule = requires {
  { M::input_rule } -> std::convertible_to<const nn::input_rule&>;
};

// X with shape S: the tensor kind a module is called with (host tensors eagerly, traced values
// while exporting); none for other kinds, which the op checks instead.
template <class X, class S> struct refit {};
template <class DT, class S0, class S> struct refit<host_tensor<DT, S0>, S> { using type = host_tensor<DT, S>; };
template <class DT, class S0, class S> struct refit<traced<DT, S0>, S> { using type = traced<DT, S>; };

// The rule's dim in X's shape, or -1 when X's rank does not reach it.
template <class M, class X>
consteval long long rule_position() {
  constexpr nn::input_rule R = M::input_rule;
  constexpr long long rank = static_cast<long long>(X::shape_type::rank);
  constexpr long long p = R.dim < 0 ? R.dim + rank : R.dim;
  return p >= 0 && p < rank ? p : -1;
}

// Whether X's static extent at the rule's dim refutes the rule (nothing else does here).
template <class M, class X>
consteval bool refutes() {
  constexpr long long p = rule_position<M, X>();
  if constexpr (p < 0 || !requires { typename refit<std::remove_cvref_t<X>, typename X::shape_type>::type; }) {
    return false;
  } else {
    using D = typename X::shape_type::template dim_t<static_cast<std::size_t>(p)>;
    if constexpr (is_static_dim_v<D>) return D::value != M::input_rule.extent;
    else return false;
  }
}

// X with the rule's extent put at its dim, or with the shape M::fitted_input<S> gives where M has
// one that is not void: a Linear fed an input whose dims after the first hold In elements (a
// forgotten flatten) gets [N, In], the shape meant.
template <class M, class S>
using replaced_shape_t = decltype(replace_dim<static_cast<std::size_t>(rule_position<M, tensor_spec<f32, S>>())>(
    std::declval<const S&>(), fix<M::input_rule.extent>{}));
template <class M, class S>
struct fitted_shape {
  using type = replaced_shape_t<M, S>;
  static constexpr bool flattened = false;
};
template <class M, class S>
  requires(!std::is_void_v<typename M::template fitted_input<S>>)
struct fitted_shape<M, S> {
  using type = typename M::template fitted_input<S>;
  static constexpr bool flattened = true;
};
template <class M, class X>
using fitted_t = typename refit<std::remove_cvref_t<X>, typename fitted_shape<M, typename X::shape_type>::type>::type;

template <class M, bool Comma, class W>
constexpr void put_takes(W& w) {
  constexpr nn::input_rule R = M::input_rule;
  w.put(R.module); w.put(" ("); w.put(R.parameter); w.put(" = "); w.put_int(R.extent);
  w.put(Comma ? "), takes " : ") takes ");
  for (const char c : R.layout) {
    if (c == '#') w.put_int(R.extent);
    else w.put(c);
  }
}

template <class M, class X, class W>
constexpr void put_refuted(W& w) {
  constexpr auto p = static_cast<std::size_t>(rule_position<M, X>());
  using D = typename X::shape_type::template dim_t<p>;
  w.put(": dim "); w.put_int(static_cast<long long>(p)); w.put(" is "); w.put_int(D::value); w.put(", not ");
  w.put_int(M::input_rule.extent);
}

// "flatten them first" where M fits a forgotten flatten (fitted_shape above); whether it did.
template <class M, class X, class W>
constexpr bool put_flatten_hint(W& w) {
  if constexpr (fitted_shape<M, typename X::shape_type>::flattened) {
    w.put("; its dims after the first hold "); w.put_int(M::input_rule.extent);
    w.put(" elements: flatten them first (nn::Flatten before this layer, or typex::flatten<1>(x))");
    return true;
  } else {
    return false;
  }
}

// An error here means: a module was called with an input whose static extent it cannot take.
template <class M, class X>  // (X: a tensor_spec, so that eager and traced calls share one error)
constexpr auto fail_module_input() {
  TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
    constexpr nn::input_rule R = M::input_rule;
    w.put("typex::"); put_takes<M, false>(w); w.put("; its input is "); X::shape_type::write_type(w);
    put_refuted<M, X>(w);
    if (!put_flatten_hint<M, X>(w)) {
      w.put(" (make "); w.put(R.parameter); w.put(' ');
      w.put_int(X::shape_type::template dim_t<static_cast<std::size_t>(rule_position<M, X>())>::value);
      w.put(", or give the module inputs that fit)");
    }
  });
  return 0;
}

// An error here means: element I of a Sequential cannot take what element I - 1 gives it.
template <std::size_t I, class M, class X>  // (X: a tensor_spec, as above)
constexpr auto fail_sequential_input() {
  TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
    constexpr nn::input_rule R = M::input_rule;
    constexpr index_t given = X::shape_type::template dim_t<static_cast<std::size_t>(rule_position<M, X>())>::value;
    w.put("typex::nn::Sequential: element ["); w.put_int(static_cast<long long>(I)); w.put("], "); put_takes<M, true>(w);
    w.put("; ");
    if constexpr (I == 0) w.put("the Sequential's input is ");
    else { w.put("element ["); w.put_int(static_cast<long long>(I - 1)); w.put("] gives it "); }
    X::shape_type::write_type(w);
    put_refuted<M, X>(w);
    if (!put_flatten_hint<M, X>(w)) {
      w.put(" (make "); w.put(R.parameter); w.put(' '); w.put_int(given);
      if constexpr (I > 0) { w.put(", or element ["); w.put_int(static_cast<long long>(I - 1)); w.put("] give "); w.put_int(R.extent); }
      w.put(')');
    }
  });
  return 0;
}

// What a call returns after its static failure: never produced (the unit does not compile); it only
// gives the call the type it would have had, so nothing after it fails too.
template <class R>
[[noreturn]] R not_reached() {
  std::abort();
}

}  // namespace typex::detail

namespace typex::nn {

// body(x) when M takes X; otherwise the sentence above, and a call of the type body would have
// given for a fitting input.
template <class M, class X, class Body>
auto checked_call(const M&, const X& x, Body&& body) {
  if constexpr (detail::has_input_rule<M>) {
    if constexpr (detail::refutes<M, X>()) {
      detail::fail_module_input<M, tensor_spec<typename X::dtype_type, typename X::shape_type>>();
      return detail::not_reached<decltype(body(std::declval<const detail::fitted_t<M, X>&>()))>();
    } else {
      return body(x);
    }
  } else {
    return body(x);
  }
}

}  // namespace typex::nn
