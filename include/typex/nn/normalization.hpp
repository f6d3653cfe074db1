// typex/nn/normalization.hpp — nn::LayerNorm<D> and nn::BatchNorm2d<C>, as torch.nn's.
//
// LayerNorm: weight (ones), bias (zeros) over the last dim, eps 1e-5.
// BatchNorm2d: weight, bias, buffers running_mean (zeros), running_var (ones) and
// num_batches_tracked (an i64 scalar), eps 1e-5, momentum 0.1; runs with the running statistics,
// or, with training = true, with the batch's, updating the running ones (eagerly in place; exported,
// as buffer mutations that the program's runner applies).
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

namespace typex::nn {

template <index_t D, dtype_tag_type DT = f32>
struct LayerNorm {
  using param_t = parameter<DT, fix<D>>;
  BOOST_HANA_DEFINE_STRUCT(LayerNorm, (param_t, weight), (param_t, bias));
  double eps = 1e-5;
  static constexpr nn::input_rule input_rule{.module = "nn::LayerNorm", .parameter = "normalized_shape", .dim = -1,
                                             .extent = D, .layout = "[..., #]"};

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& in) {
      const library_call site(loc);
      const module_scope scope(*this, in);
      return scope.returns(typex::layer_norm(in, weight, bias, eps));
    });
  }
  void reset_parameters(init::generator&) const {
    init::ones_(weight);
    init::zeros_(bias);
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

}  // namespace typex::nn
