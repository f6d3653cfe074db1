// Tests for typex/trace/module.hpp and typex/trace/init.hpp.
#include "../support.hpp"

#include <cstring>

#include <typex/trace/init.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cmath>

using namespace typex;

namespace mods {
struct linear_like {
  parameter<f32, fix<4>, fix<3>> weight;
  parameter<f32, fix<4>> bias;
  int in_features = 3;  // configuration: not a tensor, skipped

  void reset_parameters(init::generator& g) {
    init::kaiming_uniform_(weight, std::sqrt(5.0), g);
    const double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in(weight)));
    init::uniform_(bias, -bound, bound, g);
  }
};
struct norm_like {
  parameter<f32, fix<4>> weight;
  parameter<f32, fix<4>> bias;
  buffer<f32, fix<4>> running_mean;
  buffer<i64> num_batches_tracked;
  nonpersistent_buffer<f32, fix<4>> scratch;

  void reset_parameters(init::generator&) {
    init::ones_(weight);
    init::zeros_(bias);
  }
};
struct block {
  linear_like fc;
  norm_like bn;
};
struct net {
  std::array<block, 2> layers;
  linear_like head;
  constant<f32, fix<4>> scale;
  host_tensor<f32, shape<fix<2>>> plain;  // a tensor attribute: a constant, as torch.export lifts it
};
}  // namespace mods
BOOST_HANA_ADAPT_STRUCT(mods::linear_like, weight, bias, in_features);
BOOST_HANA_ADAPT_STRUCT(mods::norm_like, weight, bias, running_mean, num_batches_tracked, scratch);
BOOST_HANA_ADAPT_STRUCT(mods::block, fc, bn);
BOOST_HANA_ADAPT_STRUCT(mods::net, layers, head, scale, plain);

namespace {
std::vector<std::string> names_of(const std::vector<std::pair<std::string, any_tensor>>& v) {
  std::vector<std::string> out;
  for (const auto& [n, t] : v) out.push_back(n);
  return out;
}
}  // namespace

TEST_CASE("fully-qualified names: members, submodules, numbered arrays") {
  const mods::net n;
  CHECK(names_of(named_parameters(n)) ==
        std::vector<std::string>{"layers.0.fc.weight", "layers.0.fc.bias", "layers.0.bn.weight", "layers.0.bn.bias",
                                 "layers.1.fc.weight", "layers.1.fc.bias", "layers.1.bn.weight", "layers.1.bn.bias",
                                 "head.weight", "head.bias"});
  CHECK(names_of(named_buffers(n)) ==
        std::vector<std::string>{"layers.0.bn.running_mean", "layers.0.bn.num_batches_tracked", "layers.0.bn.scratch",
                                 "layers.1.bn.running_mean", "layers.1.bn.num_batches_tracked", "layers.1.bn.scratch"});
  CHECK(names_of(named_constants(n)) == std::vector<std::string>{"scale", "plain"});
  std::vector<std::string> modules;
  for_each_submodule(n, [&](const std::string& fqn, const auto&) { modules.push_back(fqn); });
  CHECK(modules == std::vector<std::string>{"", "layers.0", "layers.0.fc", "layers.0.bn", "layers.1", "layers.1.fc",
                                            "layers.1.bn", "head"});
}

TEST_CASE("the state dict: parameters and persistent buffers, tied weights under both names") {
  mods::net n;
  n.head.weight = n.layers[0].fc.weight;  // tie: one storage, two names
  const named_tensors sd = state_dict(n);
  CHECK(sd.size() == 10 + 4);  // 10 parameter names + 2 x (running_mean, num_batches_tracked)
  CHECK_FALSE(sd.contains("layers.0.bn.scratch"));
  CHECK(sd.at("head.weight").raw_data() == sd.at("layers.0.fc.weight").raw_data());
  const auto params = named_parameters(n);
  CHECK(params.size() == 9);  // the tied weight once, under its first name
  CHECK(named_parameters(n, false).size() == 10);
  CHECK(sd.at("layers.1.bn.num_batches_tracked").to_string() == "i64[]");
}

TEST_CASE("load_state_dict copies values in and checks names, dtypes and shapes") {
  mods::net a, b;
  init_module(a, 1);
  load_state_dict(b, state_dict(a));
  CHECK(b.layers[1].fc.weight(2, 1) == a.layers[1].fc.weight(2, 1));
  CHECK(b.layers[1].fc.weight.data() != a.layers[1].fc.weight.data());  // copied, not shared

  named_tensors wrong;
  for (const auto& [name, t] : state_dict(a)) wrong.insert(name, name == "head.bias" ? any_tensor(dtype::f32, {5}) : t);
  CHECK(typex_test::message_of<shape_error>([&] { load_state_dict(b, wrong); }) ==
        "typex::load_state_dict: 1 problem, nothing was loaded: size mismatch: 'head.bias' is f32[4] in the module but f32[5] in the state dict");

  named_tensors partial;
  partial.insert("head.weight", state_dict(a).at("head.weight"));
  partial.insert("tail.weight", any_tensor(dtype::f32, {1}));
  const std::string msg = typex_test::message_of<argument_error>([&] { load_state_dict(b, partial); });
  CHECK(msg.find("typex::load_state_dict: ") == 0);
  CHECK(msg.find(" problems, nothing was loaded: missing keys: 'layers.0.fc.weight', ") != std::string::npos);
  CHECK(msg.find("; unexpected keys: 'tail.weight'") != std::string::npos);
  // not strict (torch's strict=False): loads what matches, returns the missing and unexpected keys
  const load_result r = load_state_dict(b, partial, false);
  CHECK(r.unexpected_keys == std::vector<std::string>{"tail.weight"});
  CHECK(r.missing_keys.size() + 1 == state_dict(b).size());
  CHECK(std::memcmp(state_dict(b).at("head.weight").raw_data(), state_dict(a).at("head.weight").raw_data(),
                    state_dict(a).at("head.weight").nbytes()) == 0);
}

TEST_CASE("init: deterministic per seed and FQN, PyTorch's bounds") {
  mods::net a, b, c;
  init_module(a, 7);
  init_module(b, 7);
  init_module(c, 8);
  CHECK(a.layers[0].fc.weight(1, 2) == b.layers[0].fc.weight(1, 2));
  CHECK(a.layers[0].fc.weight(1, 2) != c.layers[0].fc.weight(1, 2));
  CHECK(a.layers[0].fc.weight(1, 2) != a.layers[1].fc.weight(1, 2));  // another FQN, another stream
  const double bound = 1.0 / std::sqrt(3.0);  // kaiming_uniform_(a = sqrt(5)) on fan_in 3
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) CHECK(std::abs(a.head.weight(i, j)) <= bound);
  CHECK(a.layers[0].bn.weight(2) == 1.0f);
  CHECK(a.layers[0].bn.bias(2) == 0.0f);
}

TEST_CASE("init: the distributions have the right moments") {
  const host_tensor<f32, shape<fix<256>, fix<64>>> w;
  init::generator g(42, "w");
  init::uniform_(w, -0.5, 0.5, g);
  double sum = 0, sq = 0;
  for (index_t i = 0; i < w.numel(); ++i) {
    sum += w.data()[i];
    sq += double(w.data()[i]) * w.data()[i];
  }
  const double n = static_cast<double>(w.numel());
  CHECK(std::abs(sum / n) < 0.01);
  CHECK(sq / n == doctest::Approx(1.0 / 12).epsilon(0.05));  // var of U(-0.5, 0.5)
  init::normal_(w, 0.0, 2.0, g);
  sum = sq = 0;
  for (index_t i = 0; i < w.numel(); ++i) {
    sum += w.data()[i];
    sq += double(w.data()[i]) * w.data()[i];
  }
  CHECK(std::abs(sum / n) < 0.05);
  CHECK(sq / n == doctest::Approx(4.0).epsilon(0.05));
}
