// Exporting whole models built from typex::nn: an MLP, a CNN, a transformer encoder block, a model
// with nested pytree inputs and outputs, a model with a buffer. For each: the signature's kinds and
// FQNs, the printed program (golden), and the program run on the Eigen backend == eager.
#include "../support.hpp"
#include "round_trip.hpp"

#include <typex/backend/eigen.hpp>

#include <cmath>
#include <regex>

using namespace typex;

namespace models {
using batch = sym<"batch", 1, 1024>;

using mlp = nn::Sequential<nn::Linear<784, 512>, nn::ReLU, nn::Linear<512, 512>, nn::ReLU, nn::Linear<512, 10>>;

struct cnn {
  nn::Conv2d<1, 32, 3> conv1;
  nn::Conv2d<32, 64, 3> conv2;
  nn::MaxPool2d<pool2d_options{.kernel = {2, 2}}> pool;
  nn::Flatten<> flatten;
  nn::Linear<64 * 12 * 12, 128> fc1;
  nn::Linear<128, 10> fc2;

  template <class X>
  auto operator()(const X& x) const {
    const auto h = pool(relu(conv2(relu(conv1(x)))));
    return fc2(relu(fc1(flatten(h))));
  }
};

using encoder = nn::TransformerEncoderLayer<32, 4, 64, nn::activation::gelu, false, true>;

// Named-field inputs and outputs: a struct template over its tensor type.
template <template <class, class> class Tensor>
struct pair_inputs {
  using x_t = Tensor<f32, shape<batch, fix<4>>>;
  using ids_t = Tensor<i64, shape<batch>>;
  BOOST_HANA_DEFINE_STRUCT(pair_inputs, (x_t, x), (ids_t, ids));
};

struct tree_model {
  nn::Linear<4, 3> proj;
  nn::Embedding<10, 3> embed;

  // (inputs, (scale tensor, a number)) -> (sum, {projected, embedded})
  template <class In, class Extra>
  auto operator()(const In& in, const Extra& extra) const {
    const auto p = proj(in.x);
    const auto e = embed(in.ids);
    const auto scaled = mul(p, std::get<0>(extra));
    const auto s = add(scaled, e);
    const auto k = mul(s, std::get<1>(extra));  // the number is specialized into the graph
    return std::make_tuple(k, std::make_pair(p, e));
  }
};

struct normalizer {
  buffer<f32, fix<4>> mean;
  nonpersistent_buffer<f32, fix<4>> inv_std;
  nn::Linear<4, 2> head;

  template <class X>
  auto operator()(const X& x) const {
    const auto centered = sub(x, mean);
    const auto n = mul(centered, inv_std);
    return head(n);
  }
};

// Tied weights: `decoder.weight` is `encoder.weight` (one storage), as in a tied embedding/unembedding.
struct tied {
  nn::Linear<6, 6> encoder;
  nn::Linear<6, 6> decoder;
  template <class X>
  auto operator()(const X& x) const {
    return decoder(relu(encoder(x)));
  }
};
}  // namespace models
BOOST_HANA_ADAPT_STRUCT(models::tied, encoder, decoder);
BOOST_HANA_ADAPT_STRUCT(models::cnn, conv1, conv2, pool, flatten, fc1, fc2);
BOOST_HANA_ADAPT_STRUCT(models::tree_model, proj, embed);
BOOST_HANA_ADAPT_STRUCT(models::normalizer, mean, inv_std, head);

namespace {
// The printed program with line numbers masked (they move when this file or a header changes).
std::string printed(const exported_program& ep) {
  static const std::regex line(R"(([A-Za-z_]+\.(cpp|hpp)):[0-9]+ )");
  return std::regex_replace(ep.to_string(), line, "$1:N ");
}

template <class A, class B>
void check_close(const A& a, const B& b, double tol) {
  REQUIRE(a.numel() == b.numel());
  double worst = 0;
  for (index_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])));
  CHECK(worst <= tol);
}

template <class SpecT>
std::vector<std::string> kinds_and_targets(const SpecT& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) {
    std::string line(name(s.kind));
    line += ' ';
    line += s.target;
    out.push_back(line);
  }
  return out;
}
}  // namespace

TEST_CASE("models: an MLP (nn::Sequential) with batch dynamic exports, prints, runs == eager") {
  using namespace models;
  mlp m;
  init_module(m, 7);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<784>>>(shape<batch, fix<784>>(batch(4), {}))));
  CHECK(kinds_and_targets(ep.signature().input_specs()) ==
        std::vector<std::string>{"PARAMETER 0.weight", "PARAMETER 0.bias", "PARAMETER 2.weight", "PARAMETER 2.bias",
                                 "PARAMETER 4.weight", "PARAMETER 4.bias", "USER_INPUT "});
  CHECK(ep.signature().input_specs()[0].arg == "p_0_weight");
  // the root (the Sequential itself: it shares its last child's address, told apart by type), then
  // its five children, each with what it received and returned
  const auto& calls = ep.module_call_graph();
  REQUIRE(calls.size() == 6);
  CHECK(calls[1].fqn == "0");
  CHECK(calls[1].signature->inputs == std::vector<std::string>{"x"});
  CHECK(calls[1].signature->outputs == std::vector<std::string>{"linear"});
  CHECK(calls[4].fqn == "3");
  CHECK(calls[4].signature->inputs == std::vector<std::string>{"linear_1"});
  CHECK(calls[4].signature->outputs == std::vector<std::string>{"relu_1"});
  CHECK(calls[5].signature->outputs == calls[0].signature->outputs);
  typex_test::check_golden("export_mlp.txt", printed(ep));

  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<784>>>({32, 784}, 1);
  const auto eager = m(x);
  const auto run = ep.module();
  const auto exported = run(x);
  static_assert(std::is_same_v<decltype(exported), const tensor<f32, batch, fix<10>>>);
  check_close(exported, eager, 0.0);
  // the type-erased view checks its inputs at run time and names them
  const auto erased = static_cast<const exported_program&>(ep).module();
  const any_tensor wrong(dtype::f32, {32, 780});
  CHECK(typex_test::message_of<shape_error>([&] { (void)erased({wrong}); }) ==
        "typex: input 'x' is f32[32, 780], expected f32[batch, 784]: dim 1 is 780, expected 784");
  const any_tensor too_big(dtype::f32, {2048, 784});
  CHECK(typex_test::message_of<constraint_violation>([&] { (void)erased({too_big}); }) ==
        "typex: input 'x' (dim 0) binds symbol 'batch' to 2048, outside its range VR[1, 1024]");
  CHECK(typex_test::message_of<argument_error>([&] { (void)erased({}); }) ==
        "typex: the exported program takes 1 tensor input (x), but 0 were given");
  CHECK(typex_test::message_of<dtype_error>([&] { (void)erased({any_tensor(dtype::f64, {2, 784})}); }) ==
        "typex: input 'x' has dtype f64, expected f32[batch, 784]");
  check_close(host_tensor<f32, shape<batch, fix<10>>>::bind(erased({x.erase()})[0]), eager, 0.0);
  typex_test::check_round_trip(ep, {x.erase()});
}

TEST_CASE("models: a CNN (conv, pool, flatten, linear) exports and runs == eager") {
  using namespace models;
  cnn m;
  init_module(m, 3);
  using in_t = shape<batch, fix<1>, fix<28>, fix<28>>;
  const auto ep = export_program(m, input<"image">(tensor_spec<f32, in_t>(in_t(batch(2), {}, {}, {}))));
  CHECK(kinds_and_targets(ep.signature().input_specs()) ==
        std::vector<std::string>{"PARAMETER conv1.weight", "PARAMETER conv1.bias", "PARAMETER conv2.weight",
                                 "PARAMETER conv2.bias", "PARAMETER fc1.weight", "PARAMETER fc1.bias",
                                 "PARAMETER fc2.weight", "PARAMETER fc2.bias", "USER_INPUT "});
  typex_test::check_golden("export_cnn.txt", printed(ep));
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<1>, fix<28>, fix<28>>>({3, 1, 28, 28}, 2);
  check_close(ep.module()(x), m(x), 0.0);
  typex_test::check_round_trip(ep, {x.erase()});
}

TEST_CASE("models: a transformer encoder block (attention, layer norm, GELU, residuals) exports and runs == eager") {
  using namespace models;
  using seq = sym<"seq", 1, 128>;
  encoder m;
  init_module(m, 11);
  using in_t = shape<batch, seq, fix<32>>;
  const auto ep = export_program(m, input<"src">(tensor_spec<f32, in_t>(in_t(batch(2), seq(5), {}))));
  CHECK(kinds_and_targets(ep.signature().input_specs()) ==
        std::vector<std::string>{"PARAMETER self_attn.in_proj_weight", "PARAMETER self_attn.in_proj_bias",
                                 "PARAMETER self_attn.out_proj.weight", "PARAMETER self_attn.out_proj.bias",
                                 "PARAMETER linear1.weight", "PARAMETER linear1.bias", "PARAMETER linear2.weight",
                                 "PARAMETER linear2.bias", "PARAMETER norm1.weight", "PARAMETER norm1.bias",
                                 "PARAMETER norm2.weight", "PARAMETER norm2.bias", "USER_INPUT "});
  typex_test::check_golden("export_transformer.txt", printed(ep));
  std::vector<std::string> fqns;
  for (const auto& c : ep.module_call_graph()) fqns.push_back(c.fqn);
  CHECK(fqns == std::vector<std::string>{"", "self_attn", "self_attn.out_proj", "dropout1", "norm1", "linear1", "dropout",
                                         "linear2", "dropout2", "norm2"});
  const auto& attn = *ep.module_call_graph()[1].signature;
  CHECK(attn.inputs == std::vector<std::string>{"src", "src", "src"});  // (query, key, value): self-attention
  CHECK(attn.in_spec.to_string() == "TreeSpec(tuple, None, [*, *, *])");
  const auto& drop = *ep.module_call_graph()[3].signature;  // an identity: what it returns is what it got
  CHECK(drop.inputs == attn.outputs);
  CHECK(drop.outputs == attn.outputs);
  const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<32>>>({3, 7, 32}, 4);
  check_close(ep.module()(x), m(x), 0.0);
  typex_test::check_round_trip(ep, {x.erase()});
}

// torch.export specializes a dim whose example value is 0 or 1 (pytorch issue 133653); here 1 is an
// ordinary member of batch's [1, 1024]: exported from a batch-1 (and seq-1) example, each program
// keeps its symbols and runs every size in range, equal to eager.
TEST_CASE("models: exported from an example batch of 1 (and seq of 1), the programs run every size in range") {
  using namespace models;
  {
    mlp m;
    init_module(m, 7);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<784>>>(shape<batch, fix<784>>(batch(1), {}))));
    CHECK(ep.ranges().to_string() == "{batch: VR[1, 1024]}");
    for (index_t n : {1, 2, 5}) {
      const auto x = typex_test::random_tensor<tensor<f32, batch, fix<784>>>({n, 784}, 1);
      check_close(ep.module()(x), m(x), 0.0);
    }
  }
  {
    cnn m;
    init_module(m, 3);
    using in_t = shape<batch, fix<1>, fix<28>, fix<28>>;
    const auto ep = export_program(m, input<"image">(tensor_spec<f32, in_t>(in_t(batch(1), {}, {}, {}))));
    for (index_t n : {1, 3}) {
      const auto x = typex_test::random_tensor<tensor<f32, batch, fix<1>, fix<28>, fix<28>>>({n, 1, 28, 28}, 2);
      check_close(ep.module()(x), m(x), 0.0);
    }
  }
  {
    using seq = sym<"seq", 1, 128>;
    encoder m;
    init_module(m, 11);
    using in_t = shape<batch, seq, fix<32>>;
    const auto ep = export_program(m, input<"src">(tensor_spec<f32, in_t>(in_t(batch(1), seq(1), {}))));
    CHECK(ep.ranges().to_string() == "{batch: VR[1, 1024], seq: VR[1, 128]}");
    for (const auto& [n, l] : {std::pair<index_t, index_t>{1, 1}, {1, 9}, {4, 1}, {3, 7}}) {
      const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<32>>>({n, l, 32}, 4);
      check_close(ep.module()(x), m(x), 0.0);
    }
  }
}

TEST_CASE("models: nested pytree inputs and outputs, numbers specialized into the graph") {
  using namespace models;
  tree_model m;
  init_module(m, 5);
  using ids_t = tensor<i64, batch>;
  using in_t = pair_inputs<tensor_spec>;
  const in_t in{in_t::x_t(shape<batch, fix<4>>(batch(2), {})), in_t::ids_t(shape<batch>(batch(2)))};
  const auto extra = std::make_tuple(tensor_spec<f32, shape<fix<3>>>(), 0.5);
  const auto ep = export_program(m, input<"inputs">(in), input<"extra">(extra));
  std::vector<std::string> names;
  for (const auto& s : ep.signature().input_specs()) names.push_back(s.arg);
  CHECK(names == std::vector<std::string>{"p_proj_weight", "p_proj_bias", "p_embed_weight", "inputs_x", "inputs_ids", "extra_0"});
  CHECK(ep.in_spec().to_string().find("pair_inputs") != std::string::npos);
  typex_test::check_golden("export_pytree.txt", printed(ep));

  pair_inputs<host_tensor> real{typex_test::random_tensor<tensor<f32, batch, fix<4>>>({3, 4}, 6), ids_t({3})};
  real.ids(0) = 1;
  real.ids(1) = 9;
  real.ids(2) = 4;
  const auto scale = typex_test::random_tensor<tensor<f32, fix<3>>>({3}, 8);
  const auto run = ep.module();
  const auto out = run(real, std::make_tuple(scale, 0.5));
  const auto eager = m(real, std::make_tuple(scale, 0.5));
  check_close(std::get<0>(out), std::get<0>(eager), 0.0);
  check_close(std::get<1>(out).first, std::get<1>(eager).first, 0.0);
  check_close(std::get<1>(out).second, std::get<1>(eager).second, 0.0);
  CHECK(typex_test::message_of<argument_error>([&] { (void)run(real, std::make_tuple(scale, 2.0)); }).find(
            "but the program was exported with 0.5") != std::string::npos);
  typex_test::check_round_trip(ep, {real.x.erase(), real.ids.erase(), scale.erase()});
  real.ids(1) = 10;  // out of the embedding's range: named, not read out of bounds
  CHECK(typex_test::message_of<argument_error>([&] { (void)run(real, std::make_tuple(scale, 0.5)); }) ==
        "aten.embedding.default: index 10 is out of range for 10 embeddings");
}

TEST_CASE("models: buffers (persistent and not) are lifted with their kinds, runs == eager") {
  using namespace models;
  normalizer m;
  init_module(m, 9);
  init::generator g(1, "buffers");
  init::uniform_(m.mean, -1.0, 1.0, g);
  init::uniform_(m.inv_std, 0.5, 2.0, g);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<4>>>(shape<batch, fix<4>>(batch(2), {}))));
  const auto& ins = ep.signature().input_specs();
  CHECK(kinds_and_targets(ins) == std::vector<std::string>{"PARAMETER head.weight", "PARAMETER head.bias", "BUFFER mean",
                                                           "BUFFER inv_std", "USER_INPUT "});
  CHECK(ins[2].arg == "b_mean");
  CHECK(ins[2].persistent);
  CHECK_FALSE(ins[3].persistent);
  CHECK(ep.state_dict().find("mean") != nullptr);
  CHECK(ep.state_dict().find("inv_std") == nullptr);
  CHECK(ep.constants().find("inv_std") != nullptr);
  typex_test::check_golden("export_buffer.txt", printed(ep));
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<4>>>({5, 4}, 3);
  check_close(ep.module()(x), m(x), 0.0);
  typex_test::check_round_trip(ep, {x.erase()});
}

TEST_CASE("models: tied weights are lifted once and read by both modules, runs == eager") {
  using namespace models;
  tied m;
  init_module(m, 13);
  m.decoder.weight = decltype(m.decoder.weight)(m.encoder.weight.tensor());  // share the storage
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<6>>>(shape<batch, fix<6>>(batch(2), {}))));
  CHECK(kinds_and_targets(ep.signature().input_specs()) ==
        std::vector<std::string>{"PARAMETER encoder.weight", "PARAMETER encoder.bias", "PARAMETER decoder.bias", "USER_INPUT "});
  // lifted under its first name only; the state dict has every name, as torch's
  REQUIRE(ep.state_dict().find("decoder.weight") != nullptr);
  CHECK(ep.state_dict().find("decoder.weight")->raw_data() == ep.state_dict().find("encoder.weight")->raw_data());
  typex_test::check_golden("export_tied.txt", printed(ep));
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<6>>>({4, 6}, 12);
  check_close(ep.module()(x), m(x), 0.0);
  typex_test::check_round_trip(ep, {x.erase()});
}
