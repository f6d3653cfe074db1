// typex/nn/linear.hpp — nn::Linear<In, Out, Bias, DT>: torch.nn.Linear (weight [Out, In], bias [Out]).
//
// Parameters `weight` and `bias` (PyTorch's names); reset_parameters draws them as PyTorch does
// (kaiming_uniform(a = sqrt(5)) for the weight, U(-1/sqrt(in), 1/sqrt(in)) for the bias).
#pragma once

#include <typex/nn/module_input.hpp>
#include <typex/ops/linear.hpp>
#include <typex/trace/context.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module_tensor.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>

namespace typex::detail {
// What Linear<In, ...> takes, and what a call that fails gets instead: [N, In] for an input whose
// dims after the first hold In elements (a forgotten flatten: the shape meant).
template <index_t In>
inline constexpr nn::input_rule linear_input{.module = "nn::Linear", .parameter = "in_features", .dim = -1, .extent = In,
                                         .layout = "[..., #]"};
template <index_t In, class S>
using linear_fitted_input = std::conditional_t<unflattened_input<S, fix<In>>(),
                                               shape<typename S::template dim_t<0>, fix<In>>, void>;
}  // namespace typex::detail

namespace typex::nn {


template <index_t In, index_t Out, bool Bias = true, dtype_tag_type DT = f32>
struct Linear {
  using weight_t = parameter<DT, fix<Out>, fix<In>>;
  using bias_t = parameter<DT, fix<Out>>;
  BOOST_HANA_DEFINE_STRUCT(Linear, (weight_t, weight), (bias_t, bias));

  static constexpr index_t in_features = In;
  static constexpr index_t out_features = Out;
  static constexpr nn::input_rule input_rule = detail::linear_input<In>;
  template <class S> using fitted_input = detail::linear_fitted_input<In, S>;

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(typex::linear(in, weight, bias));
    });
  }
  void reset_parameters(init::generator& g) const {
    init::kaiming_uniform_(weight, std::sqrt(5.0), g);
    const double bound = In > 0 ? 1.0 / std::sqrt(static_cast<double>(In)) : 0.0;
    init::uniform_(bias, -bound, bound, g);
  }
};

template <index_t In, index_t Out, dtype_tag_type DT>
struct Linear<In, Out, false, DT> {
  using weight_t = parameter<DT, fix<Out>, fix<In>>;
  BOOST_HANA_DEFINE_STRUCT(Linear, (weight_t, weight));

  static constexpr index_t in_features = In;
  static constexpr index_t out_features = Out;
  static constexpr nn::input_rule input_rule = detail::linear_input<In>;
  template <class S> using fitted_input = detail::linear_fitted_input<In, S>;

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(typex::linear(in, weight));
    });
  }
  void reset_parameters(init::generator& g) const { init::kaiming_uniform_(weight, std::sqrt(5.0), g); }
};

}  // namespace typex::nn
