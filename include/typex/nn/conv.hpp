// typex/nn/conv.hpp — nn::Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, as torch.nn's.
//
//   nn::Conv2d<1, 32, 3>                                   weight [32, 1, 3, 3], bias [32]
//   nn::Conv2d<32, 64, 3, conv2d_options{.padding = {1, 1}}>
//   nn::Conv2d<3, 64, 7, conv2d_options{.stride = {2, 2}, .padding = {3, 3}, .bias = false}>   weight only
//   nn::MaxPool2d<pool2d_options{.kernel = {2, 2}}>
//   nn::Conv1d<1, 8, 9, conv1d_options{.stride = 2, .padding = 4}>        weight [8, 1, 9], bias [8]
//   nn::ConvTranspose2d<32, 16, 2, conv_transpose2d_options{.stride = 2}>  weight [32, 16, 2, 2], bias [16]
// Square kernels (Kernel x Kernel). Conv2d's parameters are drawn as PyTorch draws them
// (kaiming_uniform(a = sqrt(5)); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
#pragma once

#include <typex/nn/module_input.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/concat.hpp>
#include <typex/ops/conv.hpp>
#include <typex/ops/factory.hpp>
#include <typex/ops/indexing.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/trace/context.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module_tensor.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace typex::nn {

namespace impl {
// The options the op records (bias is the module's business: one op type either way).
constexpr conv2d_options op_options(conv2d_options o) {
  o.bias = true;
  return o;
}
}  // namespace impl

// (Bias: Opt.bias, torch's bias=...; a parameter of its own so that the bias-free module is a
// specialization without the member)
template <index_t In, index_t Out, index_t Kernel, conv2d_options Opt = conv2d_options{}, dtype_tag_type DT = f32,
          bool Bias = Opt.bias>
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
      return scope.returns(typex::conv2d<impl::op_options(Opt)>(in, weight, bias));
    });
  }
  void reset_parameters(init::generator& g) const {
    init::kaiming_uniform_(weight, std::sqrt(5.0), g);
    const double fan_in = static_cast<double>(In / Opt.groups * Kernel * Kernel);
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(fan_in) : 0.0;
    init::uniform_(bias, -bound, bound, g);
  }
};

// nn::Conv2d<In, Out, K, {..., .bias = false}>: the weight alone.
template <index_t In, index_t Out, index_t Kernel, conv2d_options Opt, dtype_tag_type DT>
struct Conv2d<In, Out, Kernel, Opt, DT, false> {
  static_assert(Opt.groups >= 1 && In % Opt.groups == 0 && Out % Opt.groups == 0,
                "typex::nn::Conv2d: in and out channels must be divisible by groups");
  using weight_t = parameter<DT, fix<Out>, fix<In / Opt.groups>, fix<Kernel>, fix<Kernel>>;
  BOOST_HANA_DEFINE_STRUCT(Conv2d, (weight_t, weight));
  static constexpr nn::input_rule input_rule{.module = "nn::Conv2d", .parameter = "in_channels", .dim = -3, .extent = In,
                                             .layout = "[N, #, H, W]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(typex::conv2d<impl::op_options(Opt)>(in, weight));
    });
  }
  void reset_parameters(init::generator& g) const { init::kaiming_uniform_(weight, std::sqrt(5.0), g); }
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

namespace impl {
constexpr conv2d_options as_conv2d(conv1d_options o) {
  return conv2d_options{.stride = {1, o.stride}, .padding = {0, o.padding}, .dilation = {1, o.dilation}, .groups = o.groups};
}
// [N, C, L] convolved as [N, C, 1, L] by a [Out, C/G, 1, K] kernel (torch's conv1d, computed by
// the conv2d kernels: the program reads unsqueeze, reshape of the weight, conv2d, squeeze).
template <index_t Out, index_t InG, index_t K, conv1d_options Opt, class X, class W, class B>
auto conv1d(const X& x, const W& w, const B& b) {
  const auto x4 = typex::unsqueeze<2>(x);
  const auto w4 = typex::reshape(w, reshape_to(fix<Out>{}, fix<InG>{}, fix<1>{}, fix<K>{}));
  if constexpr (std::is_null_pointer_v<B>) return typex::squeeze<2>(typex::conv2d<as_conv2d(Opt)>(x4, w4));
  else return typex::squeeze<2>(typex::conv2d<as_conv2d(Opt)>(x4, w4, b));
}
}  // namespace impl

template <index_t In, index_t Out, index_t Kernel, conv1d_options Opt = conv1d_options{}, dtype_tag_type DT = f32,
          bool Bias = Opt.bias>
struct Conv1d {
  static_assert(Opt.groups >= 1 && In % Opt.groups == 0 && Out % Opt.groups == 0,
                "typex::nn::Conv1d: in and out channels must be divisible by groups");
  using weight_t = parameter<DT, fix<Out>, fix<In / Opt.groups>, fix<Kernel>>;
  using bias_t = parameter<DT, fix<Out>>;
  BOOST_HANA_DEFINE_STRUCT(Conv1d, (weight_t, weight), (bias_t, bias));
  static constexpr nn::input_rule input_rule{.module = "nn::Conv1d", .parameter = "in_channels", .dim = -2, .extent = In,
                                             .layout = "[N, #, L]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    static_assert(X::shape_type::rank == 3, "typex::nn::Conv1d: the input must be [N, C, L] (unbatched [C, L]: unsqueeze<0> it)");
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(impl::conv1d<Out, In / Opt.groups, Kernel, Opt>(in, weight, bias));
    });
  }
  void reset_parameters(init::generator& g) const {
    init::kaiming_uniform_(weight, std::sqrt(5.0), g);
    const double fan_in = static_cast<double>(In / Opt.groups * Kernel);
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(fan_in) : 0.0;
    init::uniform_(bias, -bound, bound, g);
  }
};

template <index_t In, index_t Out, index_t Kernel, conv1d_options Opt, dtype_tag_type DT>
struct Conv1d<In, Out, Kernel, Opt, DT, false> {
  static_assert(Opt.groups >= 1 && In % Opt.groups == 0 && Out % Opt.groups == 0,
                "typex::nn::Conv1d: in and out channels must be divisible by groups");
  using weight_t = parameter<DT, fix<Out>, fix<In / Opt.groups>, fix<Kernel>>;
  BOOST_HANA_DEFINE_STRUCT(Conv1d, (weight_t, weight));
  static constexpr nn::input_rule input_rule{.module = "nn::Conv1d", .parameter = "in_channels", .dim = -2, .extent = In,
                                             .layout = "[N, #, L]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    static_assert(X::shape_type::rank == 3, "typex::nn::Conv1d: the input must be [N, C, L] (unbatched [C, L]: unsqueeze<0> it)");
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(impl::conv1d<Out, In / Opt.groups, Kernel, Opt>(in, weight, nullptr));
    });
  }
  void reset_parameters(init::generator& g) const { init::kaiming_uniform_(weight, std::sqrt(5.0), g); }
};

namespace impl {
// x [N, C, H, W] with S - 1 zeros after each element along dim D (2 or 3), the trailing ones cut:
// [(H - 1) S + 1] along D.
template <long long D, index_t S, class X>
auto dilate(const X& x) {
  if constexpr (S == 1) {
    return x;
  } else {
    const auto& sh = x.shape();
    const auto u = typex::unsqueeze<D + 1>(x);  // [.., H, 1, ..] (D = 2) or [.., W, 1] (D = 3)
    const auto target = [&] {
      if constexpr (D == 2) return reshape_to(sh.template get<0>(), sh.template get<1>(), sh.template get<2>(), fix<S - 1>{}, sh.template get<3>());
      else return reshape_to(sh.template get<0>(), sh.template get<1>(), sh.template get<2>(), sh.template get<3>(), fix<S - 1>{});
    }();
    const auto zeros = typex::zeros_like(typex::expand(typex::slice<D + 1, 0, 1>(u), target));
    const auto spread = typex::cat<D + 1>(tensors(u, zeros));  // [.., H, S, ..]
    const auto flat = [&] {
      if constexpr (D == 2) return typex::reshape(spread, reshape_to(sh.template get<0>(), sh.template get<1>(), sh.template get<2>() * fix<S>{}, sh.template get<3>()));
      else return typex::reshape(spread, reshape_to(sh.template get<0>(), sh.template get<1>(), sh.template get<2>(), sh.template get<3>() * fix<S>{}));
    }();
    return typex::slice<D>(flat, fix<0>{}, sh.template get<D>() * fix<S>{} - fix<S - 1>{});
  }
}

// x [N, C, H, W] with P zero rows after the last along dim D.
template <long long D, index_t P, class X>
auto pad_end(const X& x) {
  if constexpr (P == 0) {
    return x;
  } else {
    const auto zeros = typex::zeros_like(typex::slice<D, 0, P>(x));
    return typex::cat<D>(tensors(x, zeros));
  }
}

// torch's conv_transpose2d (groups 1, dilation 1) from ops typex has: where the kernel tiles the
// output (stride == kernel, no padding: UNet's up-convolutions) one matmul and a pixel shuffle;
// otherwise the input spread by the stride, padded by kernel - 1 - padding, and convolved with the
// kernel flipped and its channels swapped (the gradient of conv2d with respect to its input).
template <index_t In, index_t Out, index_t K, conv_transpose2d_options Opt, class X, class W>
auto conv_transpose2d(const X& x, const W& w) {
  constexpr index_t s = Opt.stride, p = Opt.padding, op = Opt.output_padding;
  static_assert(s >= 1, "typex::nn::ConvTranspose2d: the stride must be at least 1");
  static_assert(p >= 0 && p <= K - 1,
                "typex::nn::ConvTranspose2d: padding must be in [0, kernel_size - 1] (a larger padding crops more than the "
                "kernel adds; crop the result with typex::slice instead)");
  static_assert(op >= 0 && op < s, "typex::nn::ConvTranspose2d: output_padding must be smaller than the stride (torch's rule)");
  if constexpr (s == K && p == 0 && op == 0) {
    const auto xt = typex::permute<0, 2, 3, 1>(x);  // [N, H, W, In]
    const auto& sh = xt.shape();
    const auto wm = typex::reshape(w, reshape_to(fix<In>{}, fix<Out * K * K>{}));
    const auto y = typex::matmul(xt, wm);  // [N, H, W, Out K K]
    const auto y6 = typex::reshape(y, reshape_to(sh.template get<0>(), sh.template get<1>(), sh.template get<2>(), fix<Out>{}, fix<K>{}, fix<K>{}));
    const auto yp = typex::permute<0, 3, 1, 4, 2, 5>(y6);  // [N, Out, H, K, W, K]
    return typex::reshape(yp, reshape_to(sh.template get<0>(), fix<Out>{}, sh.template get<1>() * fix<K>{}, sh.template get<2>() * fix<K>{}));
  } else {
    const auto spread = pad_end<3, op>(pad_end<2, op>(dilate<3, s>(dilate<2, s>(x))));
    // the kernel flipped in both spatial dims, [In, Out] swapped to [Out, In]
    std::vector<std::int64_t> reversed(static_cast<std::size_t>(K));
    for (index_t i = 0; i < K; ++i) reversed[static_cast<std::size_t>(i)] = K - 1 - i;
    const auto index = host_tensor<i64, shape<fix<K>>>::from_values(shape<fix<K>>{}, reversed);
    const auto flipped = typex::index_select<3>(typex::index_select<2>(typex::transpose<0, 1>(w), index), index);
    return typex::conv2d<conv2d_options{.padding = {K - 1 - p, K - 1 - p}}>(spread, flipped);
  }
}
}  // namespace impl

template <index_t In, index_t Out, index_t Kernel, conv_transpose2d_options Opt = conv_transpose2d_options{},
          dtype_tag_type DT = f32, bool Bias = Opt.bias>
struct ConvTranspose2d {
  using weight_t = parameter<DT, fix<In>, fix<Out>, fix<Kernel>, fix<Kernel>>;
  using bias_t = parameter<DT, fix<Out>>;
  BOOST_HANA_DEFINE_STRUCT(ConvTranspose2d, (weight_t, weight), (bias_t, bias));
  static constexpr nn::input_rule input_rule{.module = "nn::ConvTranspose2d", .parameter = "in_channels", .dim = -3,
                                             .extent = In, .layout = "[N, #, H, W]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    static_assert(X::shape_type::rank == 4, "typex::nn::ConvTranspose2d: the input must be [N, C, H, W]");
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      const auto y = impl::conv_transpose2d<In, Out, Kernel, Opt>(in, weight);
      return scope.returns(typex::add(y, typex::reshape(bias, reshape_to(fix<Out>{}, fix<1>{}, fix<1>{}))));
    });
  }
  // torch's: kaiming_uniform(a = sqrt(5)) with fan_in = weight.size(1) * K * K (its weight is [In, Out, K, K])
  void reset_parameters(init::generator& g) const {
    init::kaiming_uniform_(weight, std::sqrt(5.0), g);
    const double fan_in = static_cast<double>(Out * Kernel * Kernel);
    init::uniform_(bias, -1.0 / std::sqrt(fan_in), 1.0 / std::sqrt(fan_in), g);
  }
};

template <index_t In, index_t Out, index_t Kernel, conv_transpose2d_options Opt, dtype_tag_type DT>
struct ConvTranspose2d<In, Out, Kernel, Opt, DT, false> {
  using weight_t = parameter<DT, fix<In>, fix<Out>, fix<Kernel>, fix<Kernel>>;
  BOOST_HANA_DEFINE_STRUCT(ConvTranspose2d, (weight_t, weight));
  static constexpr nn::input_rule input_rule{.module = "nn::ConvTranspose2d", .parameter = "in_channels", .dim = -3,
                                             .extent = In, .layout = "[N, #, H, W]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    static_assert(X::shape_type::rank == 4, "typex::nn::ConvTranspose2d: the input must be [N, C, H, W]");
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(impl::conv_transpose2d<In, Out, Kernel, Opt>(in, weight));
    });
  }
  void reset_parameters(init::generator& g) const { init::kaiming_uniform_(weight, std::sqrt(5.0), g); }
};

}  // namespace typex::nn
