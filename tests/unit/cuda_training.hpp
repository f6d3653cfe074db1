// Training on the CUDA backend, shared by the emulated tests (unit/cuda/training.cpp) and the GPU's
// (unit/cuda_gpu/programs.cpp): the reference models with their losses, and train_both, which runs
// a joint program's training steps on the Eigen backend and on a CUDA device side by side.
#pragma once

#include "cuda_patterns.hpp"
#include "model_cases.hpp"
#include "support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/nn/optim.hpp>
#include <typex/passes/decompose.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace cuda_training_tests {
using namespace typex;
template <class Net>
struct classify {
  Net net;
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return cross_entropy(net(x), y);
  }
};
template <class Net>
struct regress {
  Net net;
  template <class X, class T>
  auto operator()(const X& x, const T& t) const {
    return mse_loss(net(x), t);
  }
};
using mlp_step = classify<parity_models::mlp>;
using cnn_step = classify<parity_models::cnn>;
using block_step = regress<parity_models::transformer>;

// Causal attention through typex::scaled_dot_product_attention (its derivative: typex's backward
// ops, which the CUDA backend fuses), then a regression loss.
struct attention_step {
  nn::Linear<16, 16> q, k, v;
  template <class X, class T>
  auto operator()(const X& x, const T& t) const {
    return mse_loss(scaled_dot_product_attention(q(x), k(x), v(x), nullptr, {.is_causal = true}), t);
  }
};

// A step counter and a running total written by every call (BUFFER_MUTATION), and a parameter.
struct counting {
  buffer<i64> steps;
  buffer<f32, fix<8>> total;
  parameter<f32, fix<8>> w;
  template <class X>
  auto operator()(const X& x) const {
    add_(steps, 1);
    copy_(total, add(total, mul(w, w)));
    return sum(mul(x, total));
  }
};
}  // namespace cuda_training_tests
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::mlp_step, net);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::cnn_step, net);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::block_step, net);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::counting, steps, total, w);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::attention_step, q, k, v);

namespace cuda_training {
using namespace typex;

using typex_test::pattern;
inline any_tensor labels(index_t n, index_t classes) {
  any_tensor t(dtype::i64, {n});
  for (index_t i = 0; i < n; ++i) t.data<std::int64_t>()[i] = (7 * i + 3) % classes;
  return t;
}

// The largest |a - b| over two tensors of one dtype and shape (either may be on the device).
inline double worst(const any_tensor& a, const any_tensor& b) {
  const any_tensor ha = host_copy(a, "test"), hb = host_copy(b, "test");
  REQUIRE(ha.scalar_type() == hb.scalar_type());
  REQUIRE(ha.extents() == hb.extents());
  if (ha.scalar_type() == dtype::i64) {  // (a counter: num_batches_tracked)
    double w = 0;
    for (index_t i = 0; i < ha.numel(); ++i)
      w = std::max(w, std::abs(static_cast<double>(ha.data<std::int64_t>()[i] - hb.data<std::int64_t>()[i])));
    return w;
  }
  return typex_test::worst_abs_error(ha, hb);
}

// `steps` training steps of `ep`'s joint program on the Eigen backend and on device `gpu`,
// each optimizer made by make_opt from the module's parameters: every step's loss and gradients, and
// the parameters after it, agree to `tol`; the CUDA module's parameters stay on the device.
template <class MakeOpt>
void train_both(const std::shared_ptr<cuda::device_runtime>& gpu, const exported_program& ep, const std::vector<any_tensor>& inputs,
                int steps, double tol, MakeOpt make_opt, bool graphs = true) {
  const exported_program joint = make_joint(ep);
  program_module<eigen_backend> cpu(joint);
  program_module<cuda_backend> dev(joint, {.device = gpu, .graphs = graphs});
  auto cpu_opt = make_opt(cpu.parameters());
  auto dev_opt = make_opt(dev.parameters());
  REQUIRE(!dev.parameters().empty());
  for (const auto& [fqn, p] : dev.parameters()) REQUIRE(p.device() == gpu->where());
  std::vector<any_tensor> dev_inputs;
  for (const any_tensor& t : inputs) dev_inputs.push_back(cuda::to_device(t, gpu));
  for (int s = 0; s < steps; ++s) {
    INFO("step " << s);
    const auto want = cpu(inputs);
    const auto got = dev(dev_inputs);
    const joint_outputs w = read_joint_outputs(joint, want), g = read_joint_outputs(joint, got);
    CHECK(worst(g.loss, w.loss) <= tol);
    REQUIRE(g.gradients.size() == w.gradients.size());
    for (const auto& [fqn, grad] : w.gradients) {
      INFO("gradient of " << fqn);
      REQUIRE(g.gradients.contains(fqn));
      CHECK(g.gradients.at(fqn).device() == gpu->where());
      CHECK(worst(g.gradients.at(fqn), grad) <= tol);
    }
    cpu_opt.step(w.gradients);
    dev_opt.step(g.gradients);
    const named_tensors cs = cpu.state_dict(), ds = dev.state_dict();
    for (const auto& [fqn, t] : cs) {
      INFO("parameter " << fqn);
      CHECK(ds.at(fqn).device().is_host());  // (state_dict: host copies of the device's parameters)
      CHECK(worst(ds.at(fqn), t) <= tol);
    }
  }
  // the trained parameters changed (the optimizer stepped the module's own device copies)
  CHECK(worst(dev.state_dict().at(dev.parameters().front().first), joint.state_dict().at(dev.parameters().front().first)) > 0);
}

// The reference models' training steps (MLP and CNN with SGD and momentum, the transformer block
// with AdamW and AMSGrad, causal attention with SGD), 3 each, on `gpu` against the Eigen backend; `tol` for the MLP and CNN,
// 2.5 x for the block.
inline void train_reference_models(const std::shared_ptr<cuda::device_runtime>& gpu, double tol, bool graphs) {
  using namespace cuda_training_tests;
  const auto models = parity_models::read_models();
  const auto sgd = [](const optim::param_list& p) { return optim::sgd(p, {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3}); };
  // (eps 1e-4: the keys' part of in_proj_bias has no gradient in exact arithmetic, softmax being
  // blind to a shift of every score; each backend leaves rounding noise of ~1e-9 there, which Adam
  // with eps 1e-8 would normalize into steps of the order of lr, different on each side)
  const auto adamw = [](const optim::param_list& p) { return optim::adamw(p, {.lr = 1e-2, .eps = 1e-4, .amsgrad = true}); };
  {
    INFO("MLP, SGD with momentum");
    mlp_step m;
    load_state_dict(m.net, models.at("mlp").state);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<6>, fix<32>>>()), input<"y">(tensor_spec<i64, shape<fix<6>>>()));
    train_both(gpu, ep, {pattern({6, 32}, 1), labels(6, 10)}, 3, tol, sgd, graphs);
  }
  {
    INFO("CNN, SGD with momentum");
    cnn_step m;
    load_state_dict(m.net, models.at("cnn").state);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, fix<1>, fix<12>, fix<12>>>()),
                                   input<"y">(tensor_spec<i64, shape<fix<3>>>()));
    train_both(gpu, ep, {pattern({3, 1, 12, 12}, 2), labels(3, 4)}, 3, tol, sgd, graphs);
  }
  {
    INFO("transformer block, AdamW with AMSGrad");
    block_step m;
    load_state_dict(m.net, models.at("transformer").state);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<5>, fix<16>>>()),
                                   input<"t">(tensor_spec<f32, shape<fix<2>, fix<5>, fix<16>>>()));
    train_both(gpu, ep, {pattern({2, 5, 16}, 3), pattern({2, 5, 16}, 4, 0.5)}, 3, 2.5 * tol, adamw, graphs);
  }
  {
    INFO("causal attention (the fused backward on CUDA, the math path on the Eigen backend), SGD");
    attention_step m;
    init_module(m, 7);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, fix<37>, fix<16>>>()),
                                   input<"t">(tensor_spec<f32, shape<fix<3>, fix<37>, fix<16>>>()));
    train_both(gpu, ep, {pattern({3, 37, 16}, 5), pattern({3, 37, 16}, 6, 0.5)}, 3, tol, sgd, graphs);
  }
}

// The optimizers' device updates against the host loop, bit for bit (every variant of SGD and Adam,
// f32 and f64, a parameter skipping a step), state_dict round trips, clip_grad_norm_ on device
// gradients, on device `gpu`.
inline void check_optimizers_bitwise(const std::shared_ptr<cuda::device_runtime>& gpu) {
  for (const dtype dt : {dtype::f32, dtype::f64}) {
    INFO("dtype " << name(dt));
    const auto make = [&](std::uint64_t seed) {
      const any_tensor f = pattern({5, 7}, seed);
      if (dt == dtype::f32) return f;
      any_tensor d(dtype::f64, f.extents());
      for (index_t i = 0; i < f.numel(); ++i) d.data<double>()[i] = static_cast<double>(f.data<float>()[i]) * 1.000000123;
      return d;
    };
    // host parameters and their device copies, the same gradients on each side
    const any_tensor p0 = make(10), p1 = make(11);
    const optim::param_list host = {{"a", p0.clone()}, {"b", p1.clone()}};
    const optim::param_list dev = {{"a", cuda::to_device(p0, gpu)}, {"b", cuda::to_device(p1, gpu)}};
    const auto grads = [&](int s, bool on_device) {
      named_tensors g;
      g.insert("a", on_device ? cuda::to_device(make(20 + s), gpu) : make(20 + s));
      if (s != 1) g.insert("b", on_device ? cuda::to_device(make(40 + s), gpu) : make(40 + s));  // (b skips a step)
      return g;
    };
    const auto same = [&](const optim::param_list& h, const optim::param_list& d) {
      for (std::size_t i = 0; i < h.size(); ++i) {
        const any_tensor got = cuda::to_host(d[i].second);
        CHECK(std::memcmp(got.raw_data(), h[i].second.raw_data(), got.nbytes()) == 0);
      }
    };
    {  // sgd: momentum, dampening, weight decay, maximize; then Nesterov
      for (const optim::sgd_options o : {optim::sgd_options{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01, .maximize = true},
                                         optim::sgd_options{.lr = 0.05, .momentum = 0.8, .nesterov = true}, optim::sgd_options{.lr = 0.2}}) {
        optim::sgd h(host, o), d(dev, o);
        for (int s = 0; s < 3; ++s) {
          h.step(grads(s, false));
          d.step(grads(s, true));
          same(host, dev);
        }
        const named_tensors hs = h.state_dict(), ds = d.state_dict();
        REQUIRE(hs.size() == ds.size());
        for (const auto& [k, t] : hs) CHECK(std::memcmp(ds.at(k).raw_data(), t.raw_data(), t.nbytes()) == 0);
        optim::sgd d2(dev, o);  // (loading puts the momentum on the device: the next steps agree)
        d2.load_state_dict(ds);
        h.step(grads(3, false));
        d2.step(grads(3, true));
        same(host, dev);
      }
    }
    {  // adam with weight decay and AMSGrad, adamw, maximize
      for (const optim::adam_options o : {optim::adam_options{.lr = 0.01, .weight_decay = 0.1, .amsgrad = true},
                                          optim::adamw_options{.lr = 0.02, .maximize = true}.as_adam(),
                                          optim::adam_options{.lr = 0.3, .beta1 = 0.2}}) {
        optim::adam h(host, o), d(dev, o);
        for (int s = 0; s < 3; ++s) {
          h.step(grads(s, false));
          d.step(grads(s, true));
          same(host, dev);
        }
        const named_tensors ds = d.state_dict();
        for (const auto& [k, t] : ds) CHECK(t.device().is_host());
        optim::adam d2(dev, o);
        d2.load_state_dict(ds);
        h.step(grads(3, false));
        d2.step(grads(3, true));
        same(host, dev);
      }
    }
    {  // clip_grad_norm_ scales device gradients as host ones
      named_tensors h = grads(0, false), d = grads(0, true);
      const double th = optim::clip_grad_norm_(h, 0.5), td = optim::clip_grad_norm_(d, 0.5);
      CHECK(th == td);
      for (const auto& [k, t] : h) {
        const any_tensor got = cuda::to_host(d.at(k));
        CHECK(std::memcmp(got.raw_data(), t.raw_data(), t.nbytes()) == 0);
      }
    }
    // clip_grad_norm_ over gradients of several chunks (power_sum_chunk = 1024 elements: 5 chunks, the
    // last partial, and one): the norm computed on the device, chunk by chunk in the host's order,
    // the same bits for the 1-, 2- and inf-norms; p = 3 (pow on each side) within rounding; a NaN
    // makes the norm NaN under every norm type
    for (const double norm_type : {2.0, 1.0, std::numeric_limits<double>::infinity(), 3.0}) {
      INFO("norm_type " << norm_type);
      const auto big = [&](std::uint64_t seed, index_t n) {
        const any_tensor f = pattern({n}, seed);
        if (dt == dtype::f32) return f;
        any_tensor d64(dtype::f64, f.extents());
        for (index_t i = 0; i < f.numel(); ++i) d64.data<double>()[i] = static_cast<double>(f.data<float>()[i]) / 3.0;
        return d64;
      };
      named_tensors h, d;
      h.insert("w", big(50, 4500)), h.insert("v", big(51, 700));
      for (const auto& [k, t] : h) d.insert(k, cuda::to_device(t, gpu));
      // the chunks' sums themselves (doubles: an order or a fused product that differed would show
      // in their last bits, which the f32 result of clip_grad_norm_ rounds away)
      for (const auto& [k, t] : h) {
        std::vector<double> hs(static_cast<std::size_t>((t.numel() + power_sum_chunk - 1) / power_sum_chunk)), ds(hs.size());
        if (dt == dtype::f32) host_power_sums(t.data<float>(), t.numel(), norm_type, hs);
        else host_power_sums(t.data<double>(), t.numel(), norm_type, hs);
        const power_sum_request r{&d.at(k), ds};
        device_ops_for(d.at(k).device(), "test").power_sums({&r, 1}, norm_type);
        if (norm_type == 3.0) {
          for (std::size_t c = 0; c < hs.size(); ++c) CHECK(ds[c] == doctest::Approx(hs[c]).epsilon(1e-13));
        } else {
          CHECK(std::memcmp(hs.data(), ds.data(), hs.size() * sizeof(double)) == 0);
        }
      }
      const double th = optim::clip_grad_norm_(h, 0.25, norm_type), td = optim::clip_grad_norm_(d, 0.25, norm_type);
      if (norm_type == 3.0) CHECK(td == doctest::Approx(th).epsilon(1e-12));
      else CHECK(th == td);
      for (const auto& [k, t] : h) {
        const any_tensor got = cuda::to_host(d.at(k));
        if (norm_type != 3.0) CHECK(std::memcmp(got.raw_data(), t.raw_data(), t.nbytes()) == 0);
      }
      named_tensors n;
      any_tensor with_nan = big(52, 3000);
      if (dt == dtype::f32) with_nan.data<float>()[2500] = std::numeric_limits<float>::quiet_NaN();
      else with_nan.data<double>()[2500] = std::numeric_limits<double>::quiet_NaN();
      n.insert("w", cuda::to_device(with_nan, gpu));
      CHECK(std::isnan(optim::clip_grad_norm_(n, 1.0, norm_type)));
      if (dt == dtype::f32) with_nan.data<float>()[0] = std::numeric_limits<float>::quiet_NaN(), with_nan.data<float>()[2500] = 1;
      else with_nan.data<double>()[0] = std::numeric_limits<double>::quiet_NaN(), with_nan.data<double>()[2500] = 1;
      named_tensors first;
      first.insert("w", cuda::to_device(with_nan, gpu));
      CHECK(std::isnan(optim::clip_grad_norm_(first, 1.0, norm_type)));  // (a NaN first in its chunk)
      named_tensors empty;
      empty.insert("e", cuda::to_device(any_tensor(dt, {0}), gpu));
      CHECK(optim::clip_grad_norm_(empty, 1.0, norm_type) == 0.0);
    }
    {  // a large finite norm type is not infinity, on the device as on the host; -inf is refused on both
      named_tensors h, d;
      h.insert("w", make(60));
      d.insert("w", cuda::to_device(h.at("w"), gpu));
      CHECK(optim::clip_grad_norm_(h, 1.0, 1e300) == optim::clip_grad_norm_(d, 1.0, 1e300));
      CHECK_THROWS_AS(optim::clip_grad_norm_(h, 1.0, -std::numeric_limits<double>::infinity()), argument_error);
      CHECK_THROWS_AS(optim::clip_grad_norm_(d, 1.0, -std::numeric_limits<double>::infinity()), argument_error);
    }
  }
}

}  // namespace cuda_training
