// typex::optim against torch.optim, step for step: SGD (momentum, dampening, weight decay, Nesterov,
// maximize), Adam (weight decay, AMSGrad, maximize), AdamW, and clip_grad_norm_ (2-norm and
// inf-norm), on an nn::Sequential<Linear<4, 3>, Linear<3, 2>> whose FQNs are torch's
// ("0.weight", ...). Reference: tests/data/optim_reference.inc (tools/optim_reference.py, torch 2.15).
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/nn/optim.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {
#include "../../data/optim_reference.inc"

using net = typex::nn::Sequential<typex::nn::Linear<4, 3>, typex::nn::Linear<3, 2>>;

// The model with torch's initial parameters.
net reference_model() {
  net m;
  std::size_t k = 0;
  for (const auto& [name, p] : typex::named_parameters(m))
    for (typex::index_t i = 0; i < p.numel(); ++i) p.data<float>()[i] = reference_initial.at(k++);
  REQUIRE(k == reference_initial.size());
  return m;
}

// Step s's gradients, by FQN.
typex::named_tensors reference_gradients(const net& m, int s) {
  typex::named_tensors g;
  std::size_t k = 0;
  for (const auto& [name, p] : typex::named_parameters(m)) {
    typex::any_tensor t(typex::dtype::f32, p.extents());
    for (typex::index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = reference_grads.at(s).at(k++);
    g.insert(name, std::move(t));
  }
  return g;
}

std::vector<float> flat_parameters(const net& m) {
  std::vector<float> v;
  for (const auto& [name, p] : typex::named_parameters(m))
    for (typex::index_t i = 0; i < p.numel(); ++i) v.push_back(p.data<float>()[i]);
  return v;
}

// Step 0's gradient of 0.weight.
typex::any_tensor g0(const net& m) { return reference_gradients(m, 0).at("0.weight"); }

// "lr=0.05 momentum=0.9 nesterov" -> the fields
template <class Options>
Options parse(const std::string& text) {
  Options o{};
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    const std::string key = tok.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : tok.substr(eq + 1);
    if (key == "lr") o.lr = std::stod(val);
    else if (key == "weight_decay") o.weight_decay = std::stod(val);
    else if (key == "maximize") o.maximize = true;
    else if constexpr (std::is_same_v<Options, typex::optim::sgd_options>) {
      if (key == "momentum") o.momentum = std::stod(val);
      else if (key == "dampening") o.dampening = std::stod(val);
      else if (key == "nesterov") o.nesterov = true;
      else FAIL("unknown sgd option " << key);
    } else {
      if (key == "betas") {
        o.beta1 = std::stod(val.substr(1));
        o.beta2 = std::stod(val.substr(val.find(',') + 1));
      } else if (key == "eps") o.eps = std::stod(val);
      else if (key == "amsgrad") o.amsgrad = true;
      else FAIL("unknown adam option " << key);
    }
  }
  return o;
}

// One reference run: the optimizer stepped reference_steps times, parameters compared after each.
template <class Opt, class Options>
void check_run(const reference_run& r, Options o) {
  INFO(r.optimizer << " " << r.options << (r.max_norm > 0 ? " with clip_grad_norm_" : ""));
  net m = reference_model();
  Opt opt(m, o);
  for (int s = 0; s < reference_steps; ++s) {
    typex::named_tensors g = reference_gradients(m, s);
    if (r.max_norm > 0) {
      const double total = typex::optim::clip_grad_norm_(g, r.max_norm, r.norm_type);
      CHECK(total == doctest::Approx(r.norms.at(s)).epsilon(1e-6));
    }
    opt.step(g);
    const std::vector<float> got = flat_parameters(m);
    const std::vector<float>& want = r.after.at(s);
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(double(got[i]) - double(want[i])) / (1e-6 + std::abs(double(want[i]))));
    INFO("step " << s + 1 << ": worst relative difference " << worst);
    CHECK(worst < 2e-5);  // (f32 rounding; torch vectorizes and fuses some of these operations)
  }
}

void run_reference(const reference_run& r) {
  const std::string which = r.optimizer;
  if (which == "sgd") check_run<typex::optim::sgd>(r, parse<typex::optim::sgd_options>(r.options));
  else if (which == "adam") check_run<typex::optim::adam>(r, parse<typex::optim::adam_options>(r.options));
  else if (which == "adamw") check_run<typex::optim::adamw>(r, parse<typex::optim::adamw_options>(r.options));
  else FAIL("unknown optimizer " << which);
}

}  // namespace

TEST_CASE("optim: SGD, Adam and AdamW match torch.optim step for step (torch 2.15 reference)") {
  REQUIRE(reference_runs.size() == 13);
  for (const reference_run& r : reference_runs) run_reference(r);
}

TEST_CASE("optim: the module itself is updated (the optimizer shares its parameters' storage)") {
  net m = reference_model();
  const float before = m.get<0>().weight.data()[0];
  typex::optim::sgd opt(m, {.lr = 0.5});
  opt.step(reference_gradients(m, 0));
  CHECK(m.get<0>().weight.data()[0] == doctest::Approx(before - 0.5f * reference_grads[0][0]));
  // an exported program made from the module afterwards sees the new weights
  using batch = typex::sym<"batch", 1, 8>;
  using xs = typex::shape<batch, typex::fix<4>>;
  const auto program = typex::export_program(m, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), {}))));
  typex::tensor<typex::f32, batch, typex::fix<4>> x({2, 4}, "x");
  for (int i = 0; i < 8; ++i) x.data()[i] = 0.25f * float(i);
  const auto eager = m(x);
  const auto exported = program.module()(x);
  CHECK(exported(1, 1) == doctest::Approx(eager(1, 1)));
}

TEST_CASE("optim: a state dict round trip continues the run exactly") {
  for (const bool use_adam : {false, true}) {
    CAPTURE(use_adam);
    net a = reference_model(), b = reference_model();
    auto run = [&](auto& opt_a, auto make_b) {
      for (int s = 0; s < 3; ++s) opt_a.step(reference_gradients(a, s));
      // b: copy a's parameters and optimizer state into fresh objects, then both go on
      typex::load_state_dict(b, typex::state_dict(a));
      auto opt_b = make_b();
      opt_b.load_state_dict(opt_a.state_dict());
      for (int s = 3; s < reference_steps; ++s) {
        opt_a.step(reference_gradients(a, s));
        opt_b.step(reference_gradients(b, s));
      }
      CHECK(flat_parameters(a) == flat_parameters(b));  // bit for bit
    };
    if (use_adam) {
      typex::optim::adam opt(a, {.lr = 0.01, .amsgrad = true});
      run(opt, [&] { return typex::optim::adam(b, {.lr = 0.01, .amsgrad = true}); });
      const typex::named_tensors sd = opt.state_dict();
      CHECK(sd.contains("0.weight.exp_avg"));
      CHECK(sd.contains("1.bias.max_exp_avg_sq"));
      CHECK(*sd.at("0.bias.step").data<float>() == float(reference_steps));
    } else {
      typex::optim::sgd opt(a, {.lr = 0.05, .momentum = 0.9});
      run(opt, [&] { return typex::optim::sgd(b, {.lr = 0.05, .momentum = 0.9}); });
      CHECK(opt.state_dict().size() == 4);
    }
  }
}

TEST_CASE("optim: the state dict is a copy, and a parameter without a gradient is skipped") {
  net m = reference_model();
  typex::optim::sgd opt(m, {.lr = 0.1, .momentum = 0.9});
  typex::named_tensors g = reference_gradients(m, 0);
  typex::named_tensors only_bias;
  only_bias.insert("1.bias", typex::any_tensor(g.at("1.bias")));
  const std::vector<float> before = flat_parameters(m);
  opt.step(only_bias);
  const std::vector<float> after = flat_parameters(m);
  CHECK(std::equal(before.begin(), before.end() - 2, after.begin()));  // everything but 1.bias unchanged
  CHECK(after[after.size() - 1] != before[before.size() - 1]);
  typex::named_tensors sd = opt.state_dict();
  CHECK(sd.size() == 1);
  sd.at("1.bias.momentum_buffer").data<float>()[0] = 1e9f;  // (the optimizer keeps its own)
  CHECK(opt.state_dict().at("1.bias.momentum_buffer").data<float>()[0] != 1e9f);
}

TEST_CASE("optim: bad input is a typed error naming what is wrong, and changes nothing") {
  net m = reference_model();
  typex::optim::adam opt(m, {.lr = 0.01});
  const std::vector<float> before = flat_parameters(m);
  typex::named_tensors typo = reference_gradients(m, 0);
  typo.insert("0.wieght", typex::any_tensor(typex::dtype::f32, {3, 4}));
  CHECK_THROWS_WITH_AS(opt.step(typo), doctest::Contains("'0.wieght'"), typex::argument_error);
  typex::named_tensors late;  // (the last parameter's gradient is the bad one: none before it may move)
  for (const auto& [name, t] : reference_gradients(m, 0))
    if (name != "1.bias") late.insert(name, t);
  late.insert("1.bias", typex::any_tensor(typex::dtype::f32, {3}));
  CHECK_THROWS_WITH_AS(opt.step(late), doctest::Contains("the gradient of '1.bias' is f32[3]"), typex::shape_error);
  typex::named_tensors wrong_dtype;
  wrong_dtype.insert("0.weight", typex::any_tensor(g0(m)));
  wrong_dtype.insert("0.bias", typex::any_tensor(typex::dtype::f64, {3}));
  CHECK_THROWS_AS(opt.step(wrong_dtype), typex::dtype_error);
  CHECK(flat_parameters(m) == before);
  CHECK_THROWS_WITH_AS(typex::optim::sgd(m, {.lr = 0.1, .nesterov = true}), doctest::Contains("Nesterov"), typex::argument_error);
  CHECK_THROWS_AS(typex::optim::sgd(m, {.lr = -1}), typex::argument_error);
  CHECK_THROWS_AS(typex::optim::adam(m, {.beta2 = 1.0}), typex::argument_error);
  typex::named_tensors stray;
  stray.insert("0.weight.momentum", typex::any_tensor(typex::dtype::f32, {3, 4}));
  typex::optim::sgd plain(m);
  CHECK_THROWS_WITH_AS(plain.load_state_dict(stray), doctest::Contains("'0.weight.momentum'"), typex::argument_error);
  typex::named_tensors nonfinite = reference_gradients(m, 0);
  nonfinite.at("0.bias").data<float>()[1] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(typex::optim::clip_grad_norm_(nonfinite, 1.0, 2.0, true), typex::argument_error);
}

TEST_CASE("optim: independent optimizers on independent models, in parallel threads") {
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      net m = reference_model();
      typex::optim::adamw opt(m, {.lr = 0.01, .weight_decay = 0.1, .amsgrad = true});
      for (int s = 0; s < reference_steps; ++s) opt.step(reference_gradients(m, s));
      results[t] = flat_parameters(m);
    });
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) CHECK(results[t] == results[0]);
}
