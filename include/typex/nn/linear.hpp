// typex/nn/linear.hpp — nn::Linear<In, Out, Bias, DT>: torch.nn.Linear (weight [Out, In], bias [Out]).
//
// Parameters `weight` and `bias` (PyTorch's names); reset_parameters draws them as PyTorch does
// (kaiming_uniform(a = sqrt(5)) for the weight, U(-1/sqrt(in), 1/sqrt(in)) for the bias).
#pragma once

#include <typex/ops/linear.hpp>
#include <typex/trace/context.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module_tensor.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>

namespace typex::nn {

template <index_t In, index_t Out, bool Bias = true, dtype_tag_type DT = f32>
struct Linear {
  using weight_t = parameter<DT, fix<Out>, fix<In>>;
  using bias_t = parameter<DT, fix<Out>>;
  BOOST_HANA_DEFINE_STRUCT(Linear, (weight_t, weight), (bias_t, bias));

  static constexpr index_t in_features = In;
  static constexpr index_t out_features = Out;

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
const module_scope scope(*this, x);
    return scope.returns(typex::linear(x, weight, bias));
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

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
const module_scope scope(*this, x);
    return scope.returns(typex::linear(x, weight));
  }
  void reset_parameters(init::generator& g) const { init::kaiming_uniform_(weight, std::sqrt(5.0), g); }
};

}  // namespace typex::nn
