// Training on the CUDA backend, on the emulated device: the joint programs (make_joint) of the
// reference MLP, CNN and transformer block run on the device with their trained parameters kept
// there, the optimizers step them there, and every step's loss, gradients and parameters equal the
// Eigen backend's; the partitioned halves; buffers a program writes, written back on the device;
// the module's copies, state_dict and load_state_dict; the device optimizer kernels against the host
// loop bit for bit (the emulator does not contract products and sums), clip_grad_norm_ on device
// gradients; and the errors: a gradient on the host for a device parameter.
#include "../cuda_training.hpp"

#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/export/partitioned_module.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using namespace typex;

using namespace cuda_training;

namespace cuda_training_tests {
struct bump {  // x.add_(1); return x * 2 (USER_INPUT_MUTATION)
  template <class X>
  auto operator()(const X& x) const {
    add_(x, 1.0);
    return mul(x, 2.0);
  }
};
// training-mode batch norm (batch statistics; running statistics written each call), which the
// CUDA backend runs through batch_norm's decomposition
struct bn_net {
  nn::Conv2d<2, 6, 3> conv;
  nn::BatchNorm2d<6> bn;
  nn::Linear<6 * 4 * 4, 3> fc;
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return cross_entropy(fc(flatten<1>(relu(bn(conv(x))))), y);
  }
};
// addmm (no CUDA kernel: it reaches the backend as its decomposition, a product and a sum)
struct with_addmm {
  template <class B, class X, class W>
  auto operator()(const B& b, const X& x, const W& w) const {
    return relu(addmm(b, x, w, 0.5, 2.0));
  }
};
// two linear layers with a GELU between them (hidden 64: DGELU's aux rows are a multiple of 8)
template <gelu_approximation A>
struct gelu_mlp {
  nn::Linear<32, 64> fc1;
  nn::GELU act;
  nn::Linear<64, 10> fc2;
  gelu_mlp() { act.approximate = A; }
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return cross_entropy(fc2(act(fc1(x))), y);
  }
};
using tanh_gelu_mlp = gelu_mlp<gelu_approximation::tanh>;
using erf_gelu_mlp = gelu_mlp<gelu_approximation::none>;
}  // namespace cuda_training_tests
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::tanh_gelu_mlp, fc1, act, fc2);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::erf_gelu_mlp, fc1, act, fc2);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::bump);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::with_addmm);
BOOST_HANA_ADAPT_STRUCT(cuda_training_tests::bn_net, conv, bn, fc);

TEST_CASE("cuda training: a training step of the MLP, CNN and transformer block on the emulated device equals the Eigen backend, step after step") {
  train_reference_models(cuda::make_emulated_device(), 2e-5, true);
}

// A joint program on one emulated device twice: with f32 products (`fused`: the gradient epilogues
// where they apply) and with TF32 ones (`apart`: without them); each called once to plan, then once
// more, counting that call's launches (`got`: fused's outputs).
struct fused_and_apart {
  decltype(cuda::make_emulated_device()) gpu = cuda::make_emulated_device();
  program_module<cuda_backend> fused, apart;
  std::size_t launches = 0, launches_apart = 0;
  std::vector<any_tensor> got;
  fused_and_apart(const exported_program& joint, const std::vector<any_tensor>& in)
      : fused(joint, {.device = gpu}), apart(joint, {.device = gpu, .matmul_precision = cuda::matmul_precision::tf32}) {
    auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
    std::vector<any_tensor> dev_in;
    for (const any_tensor& t : in) dev_in.push_back(cuda::to_device(t, gpu));
    (void)apart(dev_in);
    (void)fused(dev_in);
    std::size_t before = emu->launches();
    (void)apart(dev_in);
    launches_apart = emu->launches() - before;
    before = emu->launches();
    got = fused(dev_in);
    launches = emu->launches() - before;
  }
};

TEST_CASE("cuda training: each linear layer's bias gradient is written by its weight gradient's product (cuBLASLt's BGRADB), one step fewer per layer") {
  using namespace cuda_training_tests;
  const auto models = parity_models::read_models();
  mlp_step m;
  load_state_dict(m.net, models.at("mlp").state);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<6>, fix<32>>>()), input<"y">(tensor_spec<i64, shape<fix<6>>>()));
  const exported_program joint = make_joint(ep);
  // (TF32 products take no bias-gradient epilogue: the same program, the sums as kernels of their own)
  const std::vector<any_tensor> in = {pattern({6, 32}, 1), labels(6, 10)};
  fused_and_apart run(joint, in);
  program_module<cuda_backend>& fused = run.fused;
  program_module<cuda_backend>& apart = run.apart;
  const std::size_t launches = run.launches, launches_apart = run.launches_apart;
  const auto& got = run.got;
  program_module<eigen_backend> cpu(joint);
  std::size_t biases = 0;
  for (const auto& [fqn, p] : fused.parameters()) biases += fqn.ends_with(".bias") ? 1 : 0;
  REQUIRE(biases == 3);
  CHECK(apart.report().steps - fused.report().steps == biases);
  CHECK(fused.report().fused - apart.report().fused == biases);
  CHECK(launches_apart - launches == biases);
  // the gradients, the bias gradients among them, equal the Eigen backend's
  const joint_outputs w = read_joint_outputs(joint, cpu(in)), g = read_joint_outputs(joint, got);
  for (const auto& [fqn, t] : w.gradients) {
    INFO("gradient of " << fqn);
    CHECK(worst(g.gradients.at(fqn), t) <= 2e-5);
  }
  // a device whose cuBLASLt has no algorithm for the epilogues: the sums stay kernels of their own
  const auto refusing = cuda::make_emulated_device();
  static_cast<cuda::emulated_device*>(refusing.get())->refuse_epilogue(cuda::epilogue::bgrad_a);
  static_cast<cuda::emulated_device*>(refusing.get())->refuse_epilogue(cuda::epilogue::bgrad_b);
  program_module<cuda_backend> fallback(joint, {.device = refusing});
  const joint_outputs f = read_joint_outputs(joint, fallback({cuda::to_device(in[0], refusing), cuda::to_device(in[1], refusing)}));
  CHECK(fallback.report().steps == apart.report().steps);
  for (const auto& [fqn, t] : w.gradients) {
    INFO("gradient of " << fqn << " without the epilogue");
    CHECK(worst(f.gradients.at(fqn), t) <= 2e-5);
  }
}

// gelu's derivative is torch's aten.gelu_backward (one op); of the tanh form, after the product
// that gives its gradient (the second layer's input gradient), it is that product's DGELU epilogue,
// and the forward's GELU is the first layer's GELU_AUX_BIAS epilogue (which keeps its input, the
// value gelu_backward reads, as the aux matrix).
template <class Model>
void check_gelu_gradient_epilogue(bool tanh_form) {
  Model m;
  init_module(m, 7);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<6>, fix<32>>>()), input<"y">(tensor_spec<i64, shape<fix<6>>>()));
  const exported_program joint = make_joint(ep);
  std::size_t gelu_backward = 0;
  for (const ir::node& n : joint.graph().nodes()) gelu_backward += n.target == op_id_of<aten::gelu_backward> ? 1 : 0;
  CHECK(gelu_backward == 1);
  // (TF32 products take neither the bias-gradient nor the DGELU epilogue)
  const std::vector<any_tensor> in = {pattern({6, 32}, 3), labels(6, 10)};
  fused_and_apart run(joint, in);
  program_module<cuda_backend>& fused = run.fused;
  program_module<cuda_backend>& apart = run.apart;
  const std::size_t launches = run.launches, launches_apart = run.launches_apart;
  const auto& got = run.got;
  program_module<eigen_backend> cpu(joint);
  // (the two bias gradients and, for the tanh form, DGELU: what TF32 products go without; the
  // forward's GELU_AUX_BIAS they take too, so each program has it, and the refusals below count it)
  const std::size_t epilogues = 2 + (tanh_form ? 1 : 0);
  CHECK(apart.report().steps - fused.report().steps == epilogues);
  CHECK(launches_apart - launches == epilogues);
  const joint_outputs w = read_joint_outputs(joint, cpu(in)), g = read_joint_outputs(joint, got);
  CHECK(worst(g.loss, w.loss) <= 2e-6);
  for (const auto& [fqn, t] : w.gradients) {
    INFO("gradient of " << fqn);
    CHECK(worst(g.gradients.at(fqn), t) <= 2e-5);
  }
  if (!tanh_form) return;
  // a device whose cuBLASLt has no algorithm for one of them: that GELU stays a kernel of its own
  for (const cuda::epilogue refused : {cuda::epilogue::dgelu_tanh, cuda::epilogue::gelu_tanh_aux_bias}) {
    INFO("refused: " << cuda::name(refused));
    const auto refusing = cuda::make_emulated_device();
    static_cast<cuda::emulated_device*>(refusing.get())->refuse_epilogue(refused);
    program_module<cuda_backend> fallback(joint, {.device = refusing});
    const joint_outputs f = read_joint_outputs(joint, fallback({cuda::to_device(in[0], refusing), cuda::to_device(in[1], refusing)}));
    CHECK(fallback.report().steps == fused.report().steps + 1);
    CHECK(worst(f.loss, w.loss) <= 2e-6);
    for (const auto& [fqn, t] : w.gradients) {
      INFO("gradient of " << fqn << " without the epilogue");
      CHECK(worst(f.gradients.at(fqn), t) <= 2e-5);
    }
  }
}

TEST_CASE("cuda training: the tanh GELU and its gradient are the epilogues of the products around them (cuBLASLt's GELU_AUX_BIAS and DGELU), the exact form's are kernels, and both equal the Eigen backend") {
  check_gelu_gradient_epilogue<cuda_training_tests::tanh_gelu_mlp>(true);
  check_gelu_gradient_epilogue<cuda_training_tests::erf_gelu_mlp>(false);
}

TEST_CASE("cuda training: the partitioned halves on the emulated device give the joint program's outputs and train the same parameters") {
  using namespace cuda_training_tests;
  const auto models = parity_models::read_models();
  cnn_step m;
  load_state_dict(m.net, models.at("cnn").state);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<1>, fix<12>, fix<12>>>()),
                                 input<"y">(tensor_spec<i64, shape<fix<2>>>()));
  const exported_program joint = make_joint(ep);
  const auto gpu = cuda::make_emulated_device();
  for (const bool recompute : {false, true}) {
    INFO("recompute " << recompute);
    partitioned_module<cuda_backend> split(joint, {.recompute = recompute}, {.device = gpu});
    program_module<cuda_backend> whole(joint, {.device = gpu});
    const std::vector<any_tensor> in = {cuda::to_device(pattern({2, 1, 12, 12}, 5), gpu), cuda::to_device(labels(2, 4), gpu)};
    optim::sgd a(split.parameters(), {.lr = 0.1}), b(whole.parameters(), {.lr = 0.1});
    for (int s = 0; s < 2; ++s) {
      std::vector<any_tensor> saved;
      const auto loss = split.forward(in, saved);
      const auto grads = split.backward(saved);
      const auto want = whole(in);
      const joint_outputs w = read_joint_outputs(joint, want);
      CHECK(worst(loss.front(), w.loss) == 0);  // (the same kernels on the same values)
      const named_tensors g = split.gradients(grads);
      for (const auto& [fqn, t] : w.gradients) CHECK(worst(g.at(fqn), t) == 0);
      a.step(g);
      b.step(w.gradients);
    }
    const named_tensors sa = split.state_dict(), sb = whole.state_dict();
    for (const auto& [fqn, t] : sb) CHECK(worst(sa.at(fqn), t) == 0);
  }
}

TEST_CASE("cuda training: buffers a program writes are written back on the device each call, copies keep their own, state_dict and load_state_dict") {
  using namespace cuda_training_tests;
  counting m;
  std::memset(m.steps.erase().raw_data(), 0, 8);
  for (int i = 0; i < 8; ++i) {
    m.total.erase().data<float>()[i] = 0.5f * static_cast<float>(i);
    m.w.erase().data<float>()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  }
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<8>>>()));
  const auto gpu = cuda::make_emulated_device();
  program_module<eigen_backend> cpu(ep);
  program_module<cuda_backend> dev(ep, {.device = gpu});
  const any_tensor x = pattern({8}, 6);
  const any_tensor xd = cuda::to_device(x, gpu);
  CHECK(dev.buffer("steps").device() == gpu->where());
  for (int s = 0; s < 3; ++s) {
    const auto want = cpu({x});
    const auto got = dev({xd});
    CHECK(worst(got.front(), want.front()) <= 1e-5);
  }
  named_tensors sd = dev.state_dict();
  CHECK(sd.at("steps").device().is_host());
  CHECK(sd.at("steps").data<std::int64_t>()[0] == 3);
  CHECK(worst(sd.at("total"), cpu.state_dict().at("total")) <= 1e-5);
  // a copy has buffers of its own: calling it leaves the original's alone
  const program_module<cuda_backend> copy = dev;
  (void)copy({xd});
  CHECK(host_copy(copy.buffer("steps"), "t").data<std::int64_t>()[0] == 4);
  CHECK(host_copy(dev.buffer("steps"), "t").data<std::int64_t>()[0] == 3);
  // load_state_dict puts the loaded values on the device
  sd.at("steps").data<std::int64_t>()[0] = 100;
  dev.load_state_dict(sd);
  (void)dev({xd});
  CHECK(host_copy(dev.buffer("steps"), "t").data<std::int64_t>()[0] == 101);
}

TEST_CASE("cuda training: the optimizers' device updates equal the host loop bit for bit on the emulator, state_dict round trips, clip_grad_norm_") {
  check_optimizers_bitwise(cuda::make_emulated_device());
}

TEST_CASE("cuda training: an optimizer step is one launch per dtype over all its parameters, across block edges, bit for bit the host loop's, clip_grad_norm_'s sums in one launch and one synchronization, overlapping updates one by one") {
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  // f32 parameters across the fused launch's 1024-element blocks (below, at, past an edge, several
  // blocks), f64 ones beside them
  const auto make = [](dtype dt, index_t n, std::uint64_t seed) {
    const any_tensor f = pattern({n}, seed);
    if (dt == dtype::f32) return f;
    any_tensor d(dtype::f64, {n});
    for (index_t i = 0; i < n; ++i) d.data<double>()[i] = static_cast<double>(f.data<float>()[i]) * 1.000000123;
    return d;
  };
  const std::vector<std::tuple<std::string, dtype, index_t>> shapes = {
      {"a", dtype::f32, 1}, {"b", dtype::f32, 1023}, {"c", dtype::f64, 1024}, {"d", dtype::f32, 1025},
      {"e", dtype::f32, 5000}, {"f", dtype::f64, 3}, {"g", dtype::f32, 1024}};
  optim::param_list host, dev;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, dt, n] = shapes[i];
    const any_tensor p = make(dt, n, 100 + i);
    host.emplace_back(name, p.clone());
    dev.emplace_back(name, cuda::to_device(p, gpu));
  }
  const auto grads = [&](int s, bool on_device) {
    named_tensors g;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto& [name, dt, n] = shapes[i];
      const any_tensor t = make(dt, n, 200 + 10 * static_cast<std::uint64_t>(s) + i);
      g.insert(name, on_device ? cuda::to_device(t, gpu) : t);
    }
    return g;
  };
  const auto same = [&]() {
    for (std::size_t i = 0; i < host.size(); ++i) {
      INFO(host[i].first);
      const any_tensor got = cuda::to_host(dev[i].second);
      CHECK(std::memcmp(got.raw_data(), host[i].second.raw_data(), got.nbytes()) == 0);
    }
  };
  for (const optim::adam_options o : {optim::adam_options{.lr = 0.01, .weight_decay = 0.1, .amsgrad = true},
                                      optim::adamw_options{.lr = 0.02, .maximize = true}.as_adam()}) {
    optim::adam h(host, o), d(dev, o);
    for (int s = 0; s < 3; ++s) {
      h.step(grads(s, false));
      const named_tensors g = grads(s, true);
      const std::size_t before = emu->launches();
      d.step(g);
      CHECK(emu->launches() - before == 2);  // (one for the f32 parameters, one for the f64 ones)
      same();
    }
  }
  {  // sgd with momentum, and clip_grad_norm_'s scaling of the gradients, fused too
    const optim::sgd_options o{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01, .nesterov = false};
    optim::sgd h(host, o), d(dev, o);
    for (int s = 0; s < 2; ++s) {
      named_tensors hg = grads(s, false), dg = grads(s, true);
      const double clipped = optim::clip_grad_norm_(hg, 0.5);
      const std::size_t syncs = emu->synchronizations(), launches = emu->launches();
      CHECK(optim::clip_grad_norm_(dg, 0.5) == clipped);
      // (the 7 gradients' chunk sums: one launch per dtype, one synchronization; their scaling: one
      // launch per dtype, one synchronization)
      CHECK(emu->synchronizations() - syncs == 2);
      CHECK(emu->launches() - launches == 2 + 2);
      h.step(hg);
      const std::size_t before = emu->launches();
      d.step(dg);
      CHECK(emu->launches() - before == 2);
      same();
    }
  }
  {  // the same device gradient for two parameters of one size: overlapping reads, launched one by one
    optim::param_list h2 = {{"x", make(dtype::f32, 1500, 1)}, {"y", make(dtype::f32, 1500, 2)}};
    optim::param_list d2 = {{"x", cuda::to_device(h2[0].second, gpu)}, {"y", cuda::to_device(h2[1].second, gpu)}};
    const any_tensor gh = make(dtype::f32, 1500, 3), gd = cuda::to_device(gh, gpu);
    named_tensors hg, dg;
    hg.insert("x", gh), hg.insert("y", gh);
    dg.insert("x", gd), dg.insert("y", gd);
    optim::sgd h(h2, {.lr = 0.1}), d(d2, {.lr = 0.1});
    h.step(hg);
    const std::size_t before = emu->launches();
    d.step(dg);
    CHECK(emu->launches() - before == 2);
    for (std::size_t i = 0; i < 2; ++i) CHECK(std::memcmp(cuda::to_host(d2[i].second).raw_data(), h2[i].second.raw_data(), 1500 * 4) == 0);
  }
  {  // one device gradient under two names: clip_grad_norm_ scales it twice, the two updates writing
     // the same memory, so one launch each, in order
    const any_tensor gh = make(dtype::f32, 1500, 4), gd = cuda::to_device(gh, gpu);
    named_tensors hg, dg;
    hg.insert("x", gh), hg.insert("y", gh);
    dg.insert("x", gd), dg.insert("y", gd);
    const double th = optim::clip_grad_norm_(hg, 0.1);
    const std::size_t before = emu->launches();
    CHECK(optim::clip_grad_norm_(dg, 0.1) == th);
    CHECK(emu->launches() - before == 1 + 2);  // (the sums in one launch: they only read; two scalings)
    CHECK(std::memcmp(cuda::to_host(gd).raw_data(), gh.raw_data(), gh.nbytes()) == 0);
  }
}

TEST_CASE("cuda training: a fused optimizer step or clip_grad_norm_ with no room for its table launches one by one, and steps every parameter") {
  // 2 parameters and 2 gradients of 64 floats (256 bytes each), and room for two chunk sums (16
  // bytes) more: a table (two updates' parameters) cannot be allocated
  const std::size_t t = 64 * sizeof(float);
  const auto gpu = cuda::make_emulated_device(4 * t + 16);
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  const any_tensor a0 = pattern({64}, 61), b0 = pattern({64}, 62), ga = pattern({64}, 63), gb = pattern({64}, 64);
  const optim::param_list dev = {{"a", cuda::to_device(a0, gpu)}, {"b", cuda::to_device(b0, gpu)}};
  const optim::param_list host = {{"a", a0.clone()}, {"b", b0.clone()}};
  optim::sgd d(dev, {.lr = 0.1}), h(host, {.lr = 0.1});
  named_tensors g, hg;
  g.insert("a", cuda::to_device(ga, gpu)), g.insert("b", cuda::to_device(gb, gpu));
  hg.insert("a", ga), hg.insert("b", gb);
  const std::size_t before = emu->launches();
  d.step(g);
  h.step(hg);
  CHECK(emu->launches() - before == 2);
  for (std::size_t i = 0; i < 2; ++i) CHECK(std::memcmp(cuda::to_host(dev[i].second).raw_data(), host[i].second.raw_data(), t) == 0);
  CHECK(emu->bytes_in_use() == 4 * t);
  // clip_grad_norm_: the sums one gradient at a time (8 bytes each), the scalings one by one
  const double th = optim::clip_grad_norm_(hg, 0.01);
  const std::size_t launches = emu->launches();
  CHECK(optim::clip_grad_norm_(g, 0.01) == th);
  CHECK(emu->launches() - launches == 2 + 2);
  CHECK(std::memcmp(cuda::to_host(g.at("a")).raw_data(), hg.at("a").raw_data(), t) == 0);
  CHECK(std::memcmp(cuda::to_host(g.at("b")).raw_data(), hg.at("b").raw_data(), t) == 0);
  CHECK(emu->bytes_in_use() == 4 * t);
}

TEST_CASE("cuda training: an optimizer step that fails for want of device memory steps nothing and changes no state: the retry is the first step") {
  // 2 parameters and 2 gradients of 35 floats, and room for 3 more such tensors: Adam's first step
  // makes 2 state tensors a parameter, so the fourth fails
  const std::size_t t = 35 * sizeof(float);
  const auto gpu = cuda::make_emulated_device(7 * t);
  const any_tensor a0 = pattern({5, 7}, 51), b0 = pattern({5, 7}, 52), ga = pattern({5, 7}, 53), gb = pattern({5, 7}, 54);
  const optim::param_list dev = {{"a", cuda::to_device(a0, gpu)}, {"b", cuda::to_device(b0, gpu)}};
  optim::adam opt(dev, {.lr = 0.1});
  {
    named_tensors g;
    g.insert("a", cuda::to_device(ga, gpu));
    g.insert("b", cuda::to_device(gb, gpu));
    CHECK_THROWS_AS(opt.step(g), device_error);
  }
  CHECK(opt.state_dict().size() == 0);  // (no parameter has state: a's was dropped with the failure)
  CHECK(std::memcmp(cuda::to_host(dev[0].second).raw_data(), a0.raw_data(), t) == 0);
  CHECK(std::memcmp(cuda::to_host(dev[1].second).raw_data(), b0.raw_data(), t) == 0);
  // the gradients gone, a retry for `a` alone fits, and is the first step (bias corrections of step 1)
  named_tensors g;
  g.insert("a", cuda::to_device(ga, gpu));
  opt.step(g);
  const optim::param_list host = {{"a", a0.clone()}, {"b", b0.clone()}};
  optim::adam want(host, {.lr = 0.1});
  named_tensors hg;
  hg.insert("a", ga);
  want.step(hg);
  CHECK(std::memcmp(cuda::to_host(dev[0].second).raw_data(), host[0].second.raw_data(), t) == 0);
  CHECK(opt.state_dict().at("a.step").data<float>()[0] == 1.0f);
}

TEST_CASE("cuda training: a host gradient for a device parameter is a device_error naming it, and nothing is stepped") {
  const auto gpu = cuda::make_emulated_device();
  const any_tensor p = pattern({4}, 1);
  const optim::param_list params = {{"w", cuda::to_device(p, gpu)}};
  optim::sgd opt(params, {.lr = 0.1});
  named_tensors g;
  g.insert("w", pattern({4}, 2));
  CHECK_THROWS_WITH_AS(opt.step(g), doctest::Contains("the gradient of 'w' is on cpu, the parameter on cuda:0"), device_error);
  const any_tensor after = cuda::to_host(params.front().second);
  CHECK(std::memcmp(after.raw_data(), p.raw_data(), p.nbytes()) == 0);
}

TEST_CASE("cuda training: an input the program writes (USER_INPUT_MUTATION) is written back into the caller's device tensor") {
  cuda_training_tests::bump m;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<5>>>()));
  const auto gpu = cuda::make_emulated_device();
  const program_module<cuda_backend> run(ep, {.device = gpu});
  const any_tensor x = pattern({5}, 7);
  const any_tensor xd = cuda::to_device(x, gpu);
  for (int call = 1; call <= 2; ++call) {
    const auto out = run({xd});
    REQUIRE(out.size() == 1);
    const any_tensor now = cuda::to_host(xd), y = cuda::to_host(out.front());
    for (index_t i = 0; i < 5; ++i) {
      CHECK(now.data<float>()[i] == x.data<float>()[i] + static_cast<float>(call));
      CHECK(y.data<float>()[i] == 2.0f * now.data<float>()[i]);
    }
  }
}

TEST_CASE("cuda training: a model with training-mode batch norm: running statistics written on the device, training steps equal the Eigen backend") {
  cuda_training_tests::bn_net m;
  init_module(m, 9);
  const auto ep = export_program(train(m), input<"x">(tensor_spec<f32, shape<fix<4>, fix<2>, fix<6>, fix<6>>>()),
                                 input<"y">(tensor_spec<i64, shape<fix<4>>>()));
  train_both(cuda::make_emulated_device(), ep, {pattern({4, 2, 6, 6}, 31), labels(4, 3)}, 3, 2e-5,
             [](const optim::param_list& p) { return optim::sgd(p, {.lr = 0.1, .momentum = 0.5}); });
  // the forward alone writes the running statistics each call, as on the CPU
  const auto gpu = cuda::make_emulated_device();
  program_module<eigen_backend> cpu(ep);
  program_module<cuda_backend> dev(ep, {.device = gpu});
  const std::vector<any_tensor> in = {pattern({4, 2, 6, 6}, 32), labels(4, 3)};
  const std::vector<any_tensor> din = {cuda::to_device(in[0], gpu), cuda::to_device(in[1], gpu)};
  for (int call = 0; call < 2; ++call) {
    CHECK(worst(dev(din).front(), cpu(in).front()) <= 2e-5);
    for (const char* fqn : {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}) {
      INFO(fqn);
      CHECK(worst(dev.state_dict().at(fqn), cpu.state_dict().at(fqn)) <= 2e-6);
    }
  }
  CHECK(host_copy(dev.buffer("bn.num_batches_tracked"), "t").data<std::int64_t>()[0] == 2);
}

TEST_CASE("cuda training: an op without a CUDA kernel but with a decomposition runs decomposed (addmm), what the module compiles says so") {
  cuda_training_tests::with_addmm f;
  const auto ep = export_program(f, input<"b">(tensor_spec<f32, shape<fix<5>>>()), input<"x">(tensor_spec<f32, shape<fix<3>, fix<4>>>()),
                                 input<"w">(tensor_spec<f32, shape<fix<4>, fix<5>>>()));
  const ir::graph& g = ep.graph();
  bool refused = false;
  for (const ir::node& n : g.nodes()) refused = refused || (n.op == ir::node_op::call_function && !cuda::supports(g, n));
  REQUIRE(refused);  // (addmm itself has no CUDA kernel)
  CHECK(cuda::fallback_decompositions(g).decomposes(op_id_of<addmm_op>));
  const auto gpu = cuda::make_emulated_device();
  const program_module<cuda_backend> dev(ep, {.device = gpu});
  for (const ir::node& n : dev.program().graph().nodes()) CHECK(n.target != op_id_of<addmm_op>);  // (program(): what it compiled)
  const program_module<eigen_backend> cpu(ep);
  const std::vector<any_tensor> in = {pattern({5}, 41), pattern({3, 4}, 42), pattern({4, 5}, 43)};
  std::vector<any_tensor> din;
  for (const any_tensor& t : in) din.push_back(cuda::to_device(t, gpu));
  CHECK(worst(dev(din).front(), cpu(in).front()) <= 1e-5);
}
