// make_joint: joint forward/backward programs against PyTorch's gradients (tests/data/parity/
// gradients.txt, tools/gradient_reference.py): an MLP with cross-entropy, a transformer encoder
// block with a causal mask and mse; the signature torch.export prints for them; training through
// program_module's parameters with an optimizer; the options and the errors.
#include "../support.hpp"
#include "round_trip.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

using namespace typex;

namespace joint_models {
struct mlp {  // torch's module names: fc1, fc2, fc3 at the root
  nn::Linear<32, 24> fc1;
  nn::Linear<24, 24> fc2;
  nn::Linear<24, 10> fc3;
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    const auto logits = fc3(relu(fc2(relu(fc1(x)))));
    return std::make_tuple(cross_entropy(logits, y), logits);  // the loss, and the logits (not differentiated)
  }
};
struct cnn_bn {  // 1x10x10: conv 3x3 1->4, batch norm, relu, max-pool 2, conv 3x3 4->6, relu, linear 24->5
  nn::Conv2d<1, 4, 3> conv1;
  nn::BatchNorm2d<4> bn1;
  nn::Conv2d<4, 6, 3> conv2;
  nn::Linear<24, 5> fc;
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    const auto h = max_pool2d<pool2d_options{.kernel = {2, 2}}>(relu(bn1(conv1(x))));
    return cross_entropy(fc(flatten<1>(relu(conv2(h)))), y);
  }
};
// two parameters combined before they meet the input: recorded either way (as_traced not needed)
template <bool Traced>
struct summed {
  parameter<f32, fix<3>> a, b;
  template <class X>
  auto operator()(const X& x) const {
    if constexpr (Traced) return sum(mul(add(as_traced(a, x), b), x));
    else return sum(mul(add(a, b), x));  // (a + b reads only the module's state: recorded all the same)
  }
};
using block_t = nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, false, true>;
struct causal_block {
  block_t block;
  template <class X, class M, class T>
  auto operator()(const X& x, const M& mask, const T& target) const {
    return mse_loss(block(x, mask), target);
  }
};
// attention through typex::scaled_dot_product_attention (nn::MultiheadAttention records the math
// path): its derivative writes typex's backward ops
struct sdpa_block {
  nn::Linear<8, 8> q, k, v;
  template <class X, class T>
  auto operator()(const X& x, const T& target) const {
    return mse_loss(scaled_dot_product_attention(q(x), k(x), v(x), nullptr, {.is_causal = true}), target);
  }
};
// a learned additive mask (a position bias): the float mask wants a gradient, which takes the math path
struct sdpa_bias_block {
  nn::Linear<8, 8> q, k, v;
  parameter<f32, fix<6>, fix<6>> bias;
  template <class X, class T>
  auto operator()(const X& x, const T& target) const {
    return mse_loss(scaled_dot_product_attention(q(x), k(x), v(x), bias), target);
  }
};
}  // namespace joint_models
BOOST_HANA_ADAPT_STRUCT(joint_models::sdpa_block, q, k, v);
BOOST_HANA_ADAPT_STRUCT(joint_models::sdpa_bias_block, q, k, v, bias);
BOOST_HANA_ADAPT_STRUCT(joint_models::mlp, fc1, fc2, fc3);
BOOST_HANA_ADAPT_STRUCT(joint_models::causal_block, block);
BOOST_HANA_ADAPT_STRUCT(joint_models::cnn_bn, conv1, bn1, conv2, fc);
BOOST_HANA_ADAPT_STRUCT(joint_models::summed<false>, a, b);
BOOST_HANA_ADAPT_STRUCT(joint_models::summed<true>, a, b);

namespace {
struct reference {
  named_tensors state;
  std::map<std::string, any_tensor> inputs;
  double loss = 0;
  named_tensors grads;
  named_tensors after;  // the state dict after `steps` SGD steps
  int steps = 0;
  double lr = 0;
};

any_tensor read_tensor(std::istringstream& in) {
  std::string dt;
  std::size_t rank = 0;
  in >> dt >> rank;
  std::vector<index_t> e(rank);
  for (auto& v : e) in >> v;
  any_tensor t(dt == "i64" ? dtype::i64 : dtype::f32, e);
  for (index_t i = 0; i < t.numel(); ++i) {
    std::string v;
    in >> v;
    if (dt == "i64") t.data<std::int64_t>()[i] = std::stoll(v);
    else t.data<float>()[i] = std::stof(v);
  }
  REQUIRE_MESSAGE(static_cast<bool>(in), "gradients.txt: a tensor is cut short");
  return t;
}

std::map<std::string, reference> read_references() {
  const std::string path = std::string(TYPEX_TEST_SOURCE_DIR) + "/data/parity/gradients.txt";
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.good(), "cannot open " << path);
  std::map<std::string, reference> out;
  std::string line, current, name;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string word;
    in >> word;
    reference& r = out[current];
    if (word == "model") in >> current;
    else if (word == "tensor") { in >> name; r.state.insert(name, read_tensor(in)); }
    else if (word == "input") { in >> name; r.inputs[name] = read_tensor(in); }
    else if (word == "loss") in >> r.loss;
    else if (word == "grad") { in >> name; r.grads.insert(name, read_tensor(in)); }
    else if (word == "steps") in >> r.steps >> r.lr;
    else if (word == "step") { int k = 0; in >> k >> name; r.after.insert(name, read_tensor(in)); }
    else if (word != "end") FAIL("gradients.txt: unexpected line " << line);
  }
  out.erase("");
  return out;
}

// max |got - want| / (atol + rtol |want|) over the elements: <= 1 passes
double worst_ratio(const any_tensor& got, const any_tensor& want, double atol, double rtol) {
  REQUIRE(got.extents() == want.extents());
  double worst = 0;
  for (index_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    worst = std::max(worst, std::abs(g - w) / (atol + rtol * std::abs(w)));
  }
  return worst;
}

void check_gradients(const joint_outputs& got, const reference& ref, double atol, double rtol) {
  CHECK(std::abs(got.loss.data<float>()[0] - ref.loss) <= atol + rtol * std::abs(ref.loss));
  CHECK(got.gradients.size() == ref.grads.size());
  for (const auto& [fqn, want] : ref.grads) {
    const any_tensor* g = got.gradients.find(fqn);
    REQUIRE_MESSAGE(g != nullptr, "no gradient for " << fqn);
    CHECK_MESSAGE(worst_ratio(*g, want, atol, rtol) <= 1.0, fqn << ": " << worst_ratio(*g, want, atol, rtol));
  }
}
}  // namespace

TEST_CASE("joint: an MLP's gradients under cross-entropy match PyTorch's, and the logits come out too") {
  const reference ref = read_references().at("mlp");
  joint_models::mlp m;
  load_state_dict(m, ref.state);
  using batch = sym<"batch", 1, 64>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<32>>>()), input<"y">(tensor_spec<i64, shape<batch>>()));
  const exported_program joint = make_joint(ep);

  // the signature: the loss, the logits as a user output, a gradient per parameter by FQN
  const auto& outs = joint.signature().output_specs();
  REQUIRE(outs.size() == 2 + 6);
  CHECK(outs[0].kind == output_kind::loss_output);
  CHECK(outs[1].kind == output_kind::user_output);
  const char* fqns[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
  for (std::size_t k = 0; k < 6; ++k) {
    CHECK(outs[2 + k].kind == output_kind::gradient_to_parameter);
    CHECK(outs[2 + k].target == fqns[k]);
  }
  const std::string printed = joint.to_string();
  CHECK(printed.find(": LOSS_OUTPUT") != std::string::npos);
  CHECK(printed.find(": GRADIENT_TO_PARAMETER target='fc1.weight'") != std::string::npos);
  CHECK(printed.find(": GRADIENT_TO_PARAMETER target='fc3.bias'") != std::string::npos);

  auto step = program_module<eigen_backend>(joint);
  const std::vector<any_tensor> out = step({ref.inputs.at("x"), ref.inputs.at("y")});
  const joint_outputs r = read_joint_outputs(joint, out);
  check_gradients(r, ref, 1e-6, 1e-4);
  REQUIRE(r.user_outputs.size() == 1);
  CHECK(r.user_outputs[0].extents() == std::vector<index_t>{6, 10});
  // the logits are the forward program's
  const auto fwd = program_module<eigen_backend>(ep)({ref.inputs.at("x"), ref.inputs.at("y")});
  for (index_t i = 0; i < 60; ++i) CHECK(r.user_outputs[0].data<float>()[i] == doctest::Approx(fwd[1].data<float>()[i]).epsilon(1e-6));
  // another batch size: the program is symbolic in batch
  any_tensor x3(dtype::f32, {3, 32}), y3(dtype::i64, {3});
  std::copy_n(ref.inputs.at("x").data<float>(), 96, x3.data<float>());
  std::copy_n(ref.inputs.at("y").data<std::int64_t>(), 3, y3.data<std::int64_t>());
  const auto out3 = step({x3, y3});
  CHECK(out3.at(2).extents() == std::vector<index_t>{24, 32});
  typex_test::check_round_trip(joint, {x3, y3});
}

TEST_CASE("joint: a CNN with training-mode batch norm: gradients, and the state after SGD steps, match PyTorch's") {
  const reference ref = read_references().at("cnn_bn");
  joint_models::cnn_bn m;
  load_state_dict(m, ref.state);
  m.bn1.training = true;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<4>, fix<1>, fix<10>, fix<10>>>()),
                                 input<"y">(tensor_spec<i64, shape<fix<4>>>()));
  const exported_program joint = make_joint(ep);
  // the running statistics' updates stay first: BUFFER_MUTATION outputs, written back by each call
  const auto& outs = joint.signature().output_specs();
  REQUIRE(outs.size() == 3 + 1 + 8);
  CHECK(outs[0].kind == output_kind::buffer_mutation);
  CHECK(outs[3].kind == output_kind::loss_output);
  auto step = program_module<eigen_backend>(joint);
  const std::vector<any_tensor> in = {ref.inputs.at("x"), ref.inputs.at("y")};
  optim::sgd opt(step.parameters(), {.lr = ref.lr});
  for (int k = 0; k < ref.steps; ++k) {
    const joint_outputs r = read_joint_outputs(joint, step(in));
    // (two convolutions have a kernel larger than their output, each one GEMM over the batch,
    // checked against PyTorch here: conv1's weight gradient, whose kernel is the output gradient
    // (8 x 8) and whose output the weight's 3 x 3, and conv2 itself, 3 x 3 on a 4 x 4 input)
    if (k == 0) CHECK(step.report().large_kernel == 2);
    if (k == 0) check_gradients(r, ref, 1e-6, 1e-4);
    opt.step(r.gradients);
  }
  const named_tensors after = step.state_dict();
  CHECK(after.size() == ref.after.size());
  for (const auto& [fqn, want] : ref.after) {
    const any_tensor* got = after.find(fqn);
    REQUIRE_MESSAGE(got != nullptr, fqn);
    if (want.scalar_type() == dtype::i64) {
      CHECK_MESSAGE(got->data<std::int64_t>()[0] == want.data<std::int64_t>()[0], fqn);
    } else {
      CHECK_MESSAGE(worst_ratio(*got, want, 1e-6, 1e-4) <= 1.0, fqn << ": " << worst_ratio(*got, want, 1e-6, 1e-4));
    }
  }
  typex_test::check_round_trip(joint, in);
}

TEST_CASE("joint: a transformer encoder block with a causal mask matches PyTorch's gradients") {
  const reference ref = read_references().at("transformer_causal");
  joint_models::causal_block m;
  named_tensors prefixed;
  for (const auto& [k, v] : ref.state) prefixed.insert("block." + k, v);
  load_state_dict(m, prefixed);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, fix<5>, fix<16>>>()),
                                 input<"mask">(tensor_spec<b8, shape<fix<5>, fix<5>>>()),
                                 input<"t">(tensor_spec<f32, shape<fix<3>, fix<5>, fix<16>>>()));
  const exported_program joint = make_joint(ep, {.input_gradients = {"x"}});
  any_tensor causal(dtype::b8, {5, 5});
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 5; ++j) causal.data<bool>()[i * 5 + j] = j > i;  // true: may not attend
  const auto out = program_module<eigen_backend>(joint)({ref.inputs.at("x"), causal, ref.inputs.at("t")});
  joint_outputs r = read_joint_outputs(joint, out);
  named_tensors unprefixed;
  for (const auto& [k, v] : r.gradients) unprefixed.insert(k.substr(6), v);
  r.gradients = unprefixed;
  check_gradients(r, ref, 1e-6, 1e-4);
  // the input's gradient: shaped as the input, and it moves the loss as finite differences say
  const any_tensor* dx = r.input_gradients.find("x");
  REQUIRE(dx != nullptr);
  CHECK(dx->extents() == std::vector<index_t>{3, 5, 16});
  auto forward = program_module<eigen_backend>(ep);
  any_tensor x = ref.inputs.at("x").clone();
  const index_t e = 37;
  const float h = 1e-2f;
  x.data<float>()[e] += h;
  const double up = forward({x, causal, ref.inputs.at("t")})[0].data<float>()[0];
  x.data<float>()[e] -= 2 * h;
  const double down = forward({x, causal, ref.inputs.at("t")})[0].data<float>()[0];
  CHECK(dx->data<float>()[e] == doctest::Approx((up - down) / (2 * h)).epsilon(2e-2));
  typex_test::check_round_trip(joint, {ref.inputs.at("x"), causal, ref.inputs.at("t")});
}

namespace {
// The loss of `ep` moves with x as the joint program's input gradient `dx` says, at a few elements
// (central differences; x [2, 6, 8] and a target t)
void check_input_gradient(const exported_program& ep, const any_tensor& dx, const any_tensor& x, const any_tensor& t,
                          std::initializer_list<index_t> elements) {
  auto forward = program_module<eigen_backend>(ep);
  for (const index_t e : elements) {
    INFO("element " << e);
    any_tensor xe = x.clone();
    const float h = 1e-2f;
    xe.data<float>()[e] += h;
    const double up = forward({xe, t})[0].data<float>()[0];
    xe.data<float>()[e] -= 2 * h;
    const double down = forward({xe, t})[0].data<float>()[0];
    CHECK(dx.data<float>()[e] == doctest::Approx((up - down) / (2 * h)).epsilon(2e-2).scale(1e-3));
  }
}
// x and t for the attention blocks: smooth, distinct values
std::pair<any_tensor, any_tensor> attention_inputs(double fx, double ft) {
  any_tensor x(dtype::f32, {2, 6, 8}), t(dtype::f32, {2, 6, 8});
  for (index_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = static_cast<float>(std::sin(fx * static_cast<double>(i)));
    t.data<float>()[i] = static_cast<float>(std::cos(ft * static_cast<double>(i)));
  }
  return {x, t};
}
}  // namespace

TEST_CASE("joint: attention's derivative writes its backward ops, the CPU runs them as the math path with the scores once, and the gradients match finite differences") {
  joint_models::sdpa_block m;
  init_module(m, 3);
  using xs = shape<fix<2>, fix<6>, fix<8>>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, xs>()), input<"t">(tensor_spec<f32, xs>()));
  const exported_program joint = make_joint(ep, {.input_gradients = {"x"}});
  const auto count = [](const exported_program& p, op_id op) {
    std::size_t n = 0;
    for (const ir::node& node : p.graph().nodes()) n += node.op == ir::node_op::call_function && node.target == op ? 1 : 0;
    return n;
  };
  // one statistics node and a gradient for each of the query, the key and the value (a backend may
  // fuse them: the CUDA backend's kernels)
  CHECK(count(joint, op_id_of<attention_stats_op>) == 1);
  CHECK(count(joint, op_id_of<attention_backward_op>) == 3);
  // the Eigen backend's form: the math path with the scores computed once, five products more than
  // the joint program (the scores again, dv, dp, dq, dk), not eight (each gradient its own scores)
  const exported_program cpu = eigen_backend::prepare(joint);
  CHECK(count(cpu, op_id_of<attention_stats_op>) == 0);
  CHECK(count(cpu, op_id_of<attention_backward_op>) == 0);
  CHECK(count(cpu, op_id_of<matmul_op>) == count(joint, op_id_of<matmul_op>) + 5);
  const auto [x, t] = attention_inputs(0.37, 0.21);
  const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x, t}));
  const any_tensor* dx = r.input_gradients.find("x");
  REQUIRE(dx != nullptr);
  check_input_gradient(ep, *dx, x, t, {0, 13, 50, 95});
}

TEST_CASE("joint: attention with a learned float mask takes the math path, its scores and weights once, and its gradients match finite differences") {
  joint_models::sdpa_bias_block m;
  init_module(m, 4);
  using xs = shape<fix<2>, fix<6>, fix<8>>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, xs>()), input<"t">(tensor_spec<f32, xs>()));
  const exported_program joint = make_joint(ep, {.input_gradients = {"x"}});
  std::size_t stats = 0, backward = 0, softmaxes = 0, products = 0;
  for (const ir::node& n : joint.graph().nodes()) {
    if (n.op != ir::node_op::call_function) continue;
    stats += n.target == op_id_of<attention_stats_op> ? 1 : 0;
    backward += n.target == op_id_of<attention_backward_op> ? 1 : 0;
    softmaxes += n.target == op_id_of<aten::softmax_int> ? 1 : 0;
    products += n.target == op_id_of<matmul_op> ? 1 : 0;
  }
  CHECK(stats == 0);
  CHECK(backward == 0);
  CHECK(softmaxes == 1);  // (the backward's weights, computed once for the four gradients)
  CHECK(products == 8);   // (the attention's five: the scores, dv, dp, dq, dk; the three layers' input gradients)
  const auto [x, t] = attention_inputs(0.29, 0.17);
  const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x, t}));
  REQUIRE(r.gradients.find("bias") != nullptr);
  const any_tensor* dx = r.input_gradients.find("x");
  REQUIRE(dx != nullptr);
  check_input_gradient(ep, *dx, x, t, {3, 40, 77});
}

TEST_CASE("joint: training through the module's own parameters with an optimizer lowers the loss") {
  const reference ref = read_references().at("mlp");
  joint_models::mlp m;
  load_state_dict(m, ref.state);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<6>, fix<32>>>()), input<"y">(tensor_spec<i64, shape<fix<6>>>()));
  const exported_program joint = make_joint(ep);
  auto step = program_module<eigen_backend>(joint);
  REQUIRE(step.parameters().size() == 6);
  optim::sgd opt(step.parameters(), {.lr = 0.5});
  const std::vector<any_tensor> in = {ref.inputs.at("x"), ref.inputs.at("y")};
  double first = 0, last = 0;
  for (int k = 0; k < 30; ++k) {
    const auto out = step(in);
    const joint_outputs r = read_joint_outputs(joint, out);
    if (k == 0) first = r.loss.data<float>()[0];
    last = r.loss.data<float>()[0];
    opt.step(r.gradients);
  }
  CHECK(first == doctest::Approx(ref.loss).epsilon(1e-5));
  CHECK(last < 0.05 * first);  // six examples: memorized
  // the module's state dict has the trained weights; the model and the program are untouched
  const named_tensors trained = step.state_dict();
  CHECK(trained.at("fc1.weight").data<float>()[0] != ref.state.at("fc1.weight").data<float>()[0]);
  CHECK(m.fc1.weight.data()[0] == ref.state.at("fc1.weight").data<float>()[0]);
  load_state_dict(m, trained);
  const double now = read_joint_outputs(joint, step(in)).loss.data<float>()[0];  // (after the last step)
  const auto loss_and_logits = program_module<eigen_backend>(ep)(in);
  CHECK(loss_and_logits[0].data<float>()[0] == doctest::Approx(now).epsilon(1e-5));
  // a copy of the module trains its own parameters
  auto copy = step;
  optim::sgd opt2(copy.parameters(), {.lr = 0.5});
  opt2.step(read_joint_outputs(joint, copy(in)).gradients);
  CHECK(copy.state_dict().at("fc1.weight").data<float>()[0] != step.state_dict().at("fc1.weight").data<float>()[0]);
}

TEST_CASE("joint: frozen parameters get no gradient, and asking for what is not there is an error") {
  joint_models::mlp m;
  init_module(m, 1);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<4>, fix<32>>>()), input<"y">(tensor_spec<i64, shape<fix<4>>>()));
  const exported_program frozen = make_joint(ep, {.frozen = {"fc1", "fc3.bias"}});
  std::vector<std::string> trained;
  for (const auto& o : frozen.signature().output_specs())
    if (o.kind == output_kind::gradient_to_parameter) trained.push_back(o.target);
  CHECK(trained == std::vector<std::string>{"fc2.weight", "fc2.bias", "fc3.weight"});
  CHECK(program_module<eigen_backend>(frozen).parameters().size() == 3);

  CHECK_THROWS_WITH_AS(make_joint(ep, {.loss = 1}), doctest::Contains("floating-point scalar"), argument_error);
  CHECK_THROWS_WITH_AS(make_joint(ep, {.loss = 2}), doctest::Contains("the program has 2 user outputs"), argument_error);
  CHECK_THROWS_WITH_AS(make_joint(ep, {.input_gradients = {"z"}}), doctest::Contains("user input 'z', which the program does not have (its user inputs: x, y)"),
                       argument_error);
  CHECK_THROWS_WITH_AS(make_joint(ep, {.input_gradients = {"y"}}), doctest::Contains("which is not floating-point"), argument_error);
  CHECK_THROWS_WITH_AS(make_joint(ep, {.frozen = {"fc4"}}), doctest::Contains("frozen 'fc4' names no parameter"), argument_error);
  CHECK_THROWS_WITH_AS(make_joint(make_joint(ep)), doctest::Contains("already has LOSS_OUTPUT outputs"), argument_error);
}


TEST_CASE("joint: parameters combined before they meet the input are recorded (a + b), as with as_traced") {
  using spec = tensor_spec<f32, shape<fix<3>>>;
  any_tensor x(dtype::f32, {3});
  for (index_t i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  joint_models::summed<false> eager_sum;
  joint_models::summed<true> traced_sum;
  init_module(eager_sum, 4);
  init_module(traced_sum, 4);
  const auto ep = export_program(eager_sum, input<"x">(spec()));
  // a + b is a node of the program reading both parameters' placeholders: the same program either way
  CHECK(ep.constants().size() == 0);
  const auto nodes = [](const exported_program& p) {
    std::vector<std::string> out;
    for (ir::node_id n = 0; n < p.graph().size(); ++n) out.push_back(p.graph()[n].name);
    return out;
  };
  CHECK(nodes(ep) == std::vector<std::string>{"p_a", "p_b", "x", "add", "mul", "sum", "output"});
  CHECK(nodes(ep) == nodes(export_program(traced_sum, input<"x">(spec()))));
  // d/da = d/db = x, both ways
  for (const exported_program& joint : {make_joint(ep), make_joint(export_program(traced_sum, input<"x">(spec())))}) {
    const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x}));
    for (index_t i = 0; i < 3; ++i) {
      CHECK(r.gradients.at("a").data<float>()[i] == x.data<float>()[i]);
      CHECK(r.gradients.at("b").data<float>()[i] == x.data<float>()[i]);
    }
  }
}

TEST_CASE("joint: a loaded program's constant computed from trainable parameters (an older archive's) is refused") {
  // (typex records such ops now; an archive written before holds the value as a constant whose
  // placeholder names its sources: make_joint refuses it rather than train with a zero gradient)
  using spec = tensor_spec<f32, shape<fix<3>>>;
  joint_models::summed<true> m;
  init_module(m, 4);
  const auto traced = export_program(m, input<"x">(spec()));
  const ir::graph& t = traced.graph();
  ir::graph g;
  const ir::node_id a = g.add_placeholder("p_a", {dtype::f32, {3}});
  const ir::node_id b = g.add_placeholder("p_b", {dtype::f32, {3}});
  const ir::node_id c = g.add_derived_placeholder("c_lifted_tensor_0", {dtype::f32, {3}}, {"p_a", "p_b"},
                                                  "aten.add.Tensor at joint.cpp:49 in operator()");
  const ir::node_id xp = g.add_placeholder("x", {dtype::f32, {3}});
  ir::node_id product = 0, total = 0;
  for (ir::node_id n = 0; n < t.size(); ++n) {
    if (t[n].op != ir::node_op::call_function || t[n].name == "add") continue;
    std::vector<ir::argument> args = t[n].args;
    if (t[n].name == "mul") args = {ir::value_ref{c}, ir::value_ref{xp}};
    else args.front() = ir::value_ref{product};
    const ir::node_id k = g.add_call({.target = t[n].target, .args = std::move(args), .vals = t[n].vals});
    (t[n].name == "mul" ? product : total) = k;
  }
  g.set_output({ir::value_ref{total}});
  named_tensors sd, constants;
  sd.insert("a", m.a.erase());
  sd.insert("b", m.b.erase());
  constants.insert("lifted_tensor_0", any_tensor(dtype::f32, {3}));
  const exported_program ep(std::move(g),
                            graph_signature({{input_kind::parameter, "p_a", "a"},
                                             {input_kind::parameter, "p_b", "b"},
                                             {input_kind::constant_tensor, "c_lifted_tensor_0", "lifted_tensor_0"},
                                             {input_kind::user_input, "x", ""}},
                                            {{output_kind::user_output, t[total].name, ""}}),
                            std::move(sd), std::move(constants), range_constraints{}, {});
  (void)a;
  (void)b;
  CHECK_THROWS_WITH_AS(make_joint(ep),
                       doctest::Contains("typex::make_joint: the constant 'lifted_tensor_0' (aten.add.Tensor at joint.cpp"), unsupported_error);
  CHECK_THROWS_WITH_AS(make_joint(ep), doctest::Contains("was computed from the parameters 'a', 'b' while the model was traced"),
                       unsupported_error);
  CHECK_NOTHROW(make_joint(ep, {.frozen = {"a", "b"}}));  // (frozen: a constant indeed)
  CHECK_THROWS_WITH_AS(make_joint(ep, {.frozen = {"a"}}), doctest::Contains("from the parameter 'b' while"), unsupported_error);
}

TEST_CASE("joint: two gradients that are one value in the graph come out as two tensors of their own") {
  using spec = tensor_spec<f32, shape<fix<3>>>;
  joint_models::summed<true> traced_sum;
  init_module(traced_sum, 4);
  const exported_program joint = make_joint(export_program(traced_sum, input<"x">(spec())));
  any_tensor x(dtype::f32, {3});
  for (index_t i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x}));
  CHECK(r.gradients.at("a").raw_data() != r.gradients.at("b").raw_data());
}
