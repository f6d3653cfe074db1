// typex/nn/normalization.hpp — nn::LayerNorm<D>, nn::BatchNorm2d<C>, nn::GroupNorm<G, C>,
// nn::InstanceNorm2d<C>, nn::RMSNorm<D>, as torch.nn's.
//
// LayerNorm: weight (ones), bias (zeros) over the last dim, eps 1e-5.
// BatchNorm2d: weight, bias, buffers running_mean (zeros), running_var (ones) and
// num_batches_tracked (an i64 scalar), eps 1e-5, momentum 0.1; runs with the running statistics,
// or, with training = true, with the batch's, updating the running ones (eagerly in place; exported,
// as buffer mutations that the program's runner applies).
// GroupNorm: G groups of C channels (C % G == 0), weight (ones) and bias (zeros) per channel when
// Affine (torch's default), eps 1e-5: aten.group_norm.default.
// InstanceNorm2d: each channel of each sample over its H x W, torch's defaults (affine=False,
// track_running_stats=False): group_norm with one group per channel, no weight or bias.
// RMSNorm: x * rsqrt(mean(x^2, -1) + eps) * weight (ones), as torch.nn.RMSNorm exports (its
// composite form); eps defaults to the dtype's machine epsilon (torch's eps=None).
#pragma once

#include <typex/nn/module_input.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/mutation.hpp>
#include <typex/ops/normalization.hpp>
#include <typex/ops/reduce.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/unary.hpp>
#include <typex/trace/context.hpp>
#include <typex/trace/record.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module_tensor.hpp>

#include <boost/hana/define_struct.hpp>

#include <optional>

namespace typex::nn {

// (ElementwiseAffine = false: no weight and no bias; Bias = false: the weight alone, torch's
// LayerNorm(d, bias=False))
template <index_t D, dtype_tag_type DT = f32, bool ElementwiseAffine = true, bool Bias = true>
struct LayerNorm {
  using weight_t = std::conditional_t<ElementwiseAffine, parameter<DT, fix<D>>, absent>;
  using bias_t = std::conditional_t<ElementwiseAffine && Bias, parameter<DT, fix<D>>, absent>;
  BOOST_HANA_DEFINE_STRUCT(LayerNorm, (weight_t, weight), (bias_t, bias));
  double eps = 1e-5;
  static constexpr nn::input_rule input_rule{.module = "nn::LayerNorm", .parameter = "normalized_shape", .dim = -1,
                                             .extent = D, .layout = "[..., #]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      if constexpr (!ElementwiseAffine) return scope.returns(typex::layer_norm(in, eps));
      else if constexpr (!Bias) return scope.returns(typex::layer_norm(in, weight, nullptr, eps));
      else return scope.returns(typex::layer_norm(in, weight, bias, eps));
    });
  }
  void reset_parameters(init::generator&) const {
    if constexpr (ElementwiseAffine) init::ones_(weight);
    if constexpr (ElementwiseAffine && Bias) init::zeros_(bias);
  }
};

template <index_t C, dtype_tag_type DT = f32>
struct BatchNorm2d {
  using param_t = parameter<DT, fix<C>>;
  using stat_t = buffer<DT, fix<C>>;
  using count_t = buffer<i64>;
  BOOST_HANA_DEFINE_STRUCT(BatchNorm2d, (param_t, weight), (param_t, bias), (stat_t, running_mean), (stat_t, running_var),
                           (count_t, num_batches_tracked));
  double eps = 1e-5;
  double momentum = 0.1;
  bool training = false;  // as torch's module.train(): batch statistics, running statistics updated

  static constexpr nn::input_rule input_rule{.module = "nn::BatchNorm2d", .parameter = "num_features", .dim = 1,
                                             .extent = C, .layout = "[N, #, H, W]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    static_assert(X::shape_type::rank == 4, "typex::nn::BatchNorm2d: the input must be [N, C, H, W]");
    return checked_call(*this, x, [&]<class In>(const In& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      if (!training) return scope.returns(typex::batch_norm(in, weight, bias, running_mean, running_var, momentum, eps));
      if constexpr (is_traced_argument<In>::value) {
        return scope.returns(traced_training(in));
      } else {
        num_batches_tracked.data()[0] += 1;
        return scope.returns(typex::batch_norm_training(in, weight, bias, running_mean, running_var, momentum, eps));
      }
    });
  }
  // Training mode while tracing, as torch.export functionalizes it: the batch statistics are ops of
  // the program, and the running statistics and the batch count are written back with copy_, so
  // the program returns them as buffer mutations (its runner updates its buffers after each call).
  template <class X>
  auto traced_training(const X& x) const {
    const auto by_channel = reshape_to(fix<1>{}, fix<C>{}, fix<1>{}, fix<1>{});
    const auto mean = typex::mean<0, 2, 3>(x, keepdim);
    const auto biased = typex::var<0, 2, 3>(x, 0.0, keepdim);  // (what the normalization divides by)
    const auto y = (x - mean) * typex::rsqrt(biased + eps) * typex::view(as_traced(weight, x), by_channel) +
                   typex::view(as_traced(bias, x), by_channel);
    typex::copy_(running_mean, as_traced(running_mean, x) * (1.0 - momentum) +
                                   typex::view(mean, reshape_to(fix<C>{})) * momentum);
    typex::copy_(running_var, as_traced(running_var, x) * (1.0 - momentum) + typex::var<0, 2, 3>(x, 1.0) * momentum);
    typex::copy_(num_batches_tracked, as_traced(num_batches_tracked, x) + 1);
    return y;
  }

  void reset_parameters(init::generator&) const {
    init::ones_(weight);
    init::zeros_(bias);
    init::zeros_(running_mean);
    init::ones_(running_var);
    init::zeros_(num_batches_tracked);
  }
};

template <index_t G, index_t C, bool Affine = true, dtype_tag_type DT = f32>
struct GroupNorm {
  static_assert(G >= 1 && C % G == 0, "typex::nn::GroupNorm: num_channels must be divisible by num_groups");
  using param_t = parameter<DT, fix<C>>;
  BOOST_HANA_DEFINE_STRUCT(GroupNorm, (param_t, weight), (param_t, bias));
  double eps = 1e-5;
  static constexpr nn::input_rule input_rule{.module = "nn::GroupNorm", .parameter = "num_channels", .dim = 1, .extent = C,
                                             .layout = "[N, #, ...]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(typex::group_norm<G>(in, weight, bias, eps));
    });
  }
  void reset_parameters(init::generator&) const {
    init::ones_(weight);
    init::zeros_(bias);
  }
};

template <index_t G, index_t C, dtype_tag_type DT>
struct GroupNorm<G, C, false, DT> {
  static_assert(G >= 1 && C % G == 0, "typex::nn::GroupNorm: num_channels must be divisible by num_groups");
  BOOST_HANA_DEFINE_STRUCT(GroupNorm);
  double eps = 1e-5;
  static constexpr nn::input_rule input_rule{.module = "nn::GroupNorm", .parameter = "num_channels", .dim = 1, .extent = C,
                                             .layout = "[N, #, ...]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(typex::group_norm<G>(in, eps));
    });
  }
};

// (affine=True: weight and bias per channel, as GroupNorm's; running statistics are not kept)
template <index_t C, bool Affine = false, dtype_tag_type DT = f32>
struct InstanceNorm2d : GroupNorm<C, C, Affine, DT> {
  static constexpr nn::input_rule input_rule{.module = "nn::InstanceNorm2d", .parameter = "num_features", .dim = 1, .extent = C,
                                             .layout = "[N, #, H, W]"};
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    static_assert(X::shape_type::rank == 4, "typex::nn::InstanceNorm2d: the input must be [N, C, H, W]");
    return GroupNorm<C, C, Affine, DT>::operator()(x, loc);
  }
};

// torch.finfo(dtype).eps
constexpr double machine_epsilon(dtype d) noexcept {
  switch (d) {
    case dtype::f64: return 2.220446049250313e-16;
    case dtype::f16: return 0.0009765625;
    case dtype::bf16: return 0.0078125;
    default: return 1.1920928955078125e-07;
  }
}

template <index_t D, dtype_tag_type DT = f32>
struct RMSNorm {
  using param_t = parameter<DT, fix<D>>;
  BOOST_HANA_DEFINE_STRUCT(RMSNorm, (param_t, weight));
  std::optional<double> eps;  // none: the input dtype's machine epsilon (torch's eps=None)
  static constexpr nn::input_rule input_rule{.module = "nn::RMSNorm", .parameter = "normalized_shape", .dim = -1,
                                             .extent = D, .layout = "[..., #]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      using In = std::remove_cvref_t<decltype(in)>;
      const double e = eps ? *eps : machine_epsilon(In::dtype_type::value);
      const auto normed = typex::mul(in, typex::rsqrt(typex::add(typex::mean<-1>(typex::pow(in, 2.0), keepdim), e)));
      return scope.returns(typex::mul(normed, weight));
    });
  }
  void reset_parameters(init::generator&) const { init::ones_(weight); }
};

}  // namespace typex::nn
