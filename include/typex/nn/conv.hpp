// typex/nn/conv.hpp — nn::Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, as torch.nn's.
//
//   nn::Conv2d<1, 32, 3>                                   weight [32, 1, 3, 3], bias [32]
//   nn::Conv2d<32, 64, 3, conv2d_options{.padding = {1, 1}}>
//   nn::MaxPool2d<pool2d_options{.kernel = {2, 2}}>
// Square kernels (Kernel x Kernel). Conv2d's parameters are drawn as PyTorch draws them
// (kaiming_uniform(a = sqrt(5)); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
#pragma once

#include <typex/nn/module_input.hpp>
#include <typex/ops/conv.hpp>
#include <typex/trace/context.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module_tensor.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>

namespace typex::nn {

template <index_t In, index_t Out, index_t Kernel, conv2d_options Opt = conv2d_options{}, dtype_tag_type DT = f32>
struct Conv2d {
  static_assert(Opt.groups >= 1 && In % Opt.groups == 0 && Out % Opt.groups == 0,
                "typex::nn::Conv2d: in and out channels must be divisible by groups");
  using weight_t = parameter<DT, fix<Out>, fix<In / Opt.groups>, fix<Kernel>, fix<Kernel>>;
  using bias_t = parameter<DT, fix<Out>>;
  BOOST_HANA_DEFINE_STRUCT(Conv2d, (weight_t, weight), (bias_t, bias));
  static constexpr nn::input_rule input_rule{.module = "nn::Conv2d", .parameter = "in_channels", .dim = -3, .extent = In,
                                             .layout = "[N, #, H, W]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(typex::conv2d<Opt>(in, weight, bias));
    });
  }
  void reset_parameters(init::generator& g) const {
    init::kaiming_uniform_(weight, std::sqrt(5.0), g);
    const double fan_in = static_cast<double>(In / Opt.groups * Kernel * Kernel);
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(fan_in) : 0.0;
    init::uniform_(bias, -bound, bound, g);
  }
};

template <pool2d_options Opt>
struct MaxPool2d {
  BOOST_HANA_DEFINE_STRUCT(MaxPool2d);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::max_pool2d<Opt>(x));
  }
};

template <pool2d_options Opt>
struct AvgPool2d {
  BOOST_HANA_DEFINE_STRUCT(AvgPool2d);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::avg_pool2d<Opt>(x));
  }
};

template <index_t OH, index_t OW = OH>
struct AdaptiveAvgPool2d {
  BOOST_HANA_DEFINE_STRUCT(AdaptiveAvgPool2d);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::adaptive_avg_pool2d<OH, OW>(x));
  }
};

}  // namespace typex::nn
