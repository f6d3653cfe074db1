// Tests for typex/export/export_program.hpp: a module traced into an exported program.
#include "../support.hpp"

#include <boost/hana/adapt_struct.hpp>

using namespace typex;

namespace exp_test {
using batch = sym<"batch", 1, 1024>;

template <int In, int Out>
struct dense {
  parameter<f32, fix<Out>, fix<In>> weight;
  parameter<f32, fix<Out>> bias;

  template <class X>
  auto operator()(const X& x) const {
    const module_scope scope(*this);
    return linear(x, weight, bias);
  }
};

using dense48 = dense<4, 8>;  // (an alias: BOOST_HANA_ADAPT_STRUCT cannot take a comma)
using dense88 = dense<8, 8>;

struct net {
  dense48 fc1;
  dense88 fc2;
  dense88 head;  // its weight is tied to fc2's
  buffer<f32, fix<8>> running_mean;
  constant<f32, fix<8>> scale;

  template <class X>
  auto operator()(const X& x) const {
    const auto h = relu(fc1(x));
    const auto y = head(fc2(h));
    const auto centered = y - running_mean;  // (one statement each: argument order is unspecified)
    const auto scaled = mul(y, scale);
    return std::make_tuple(centered, scaled);
  }
};
}  // namespace exp_test
BOOST_HANA_ADAPT_STRUCT(exp_test::dense48, weight, bias);
BOOST_HANA_ADAPT_STRUCT(exp_test::dense88, weight, bias);
BOOST_HANA_ADAPT_STRUCT(exp_test::net, fc1, fc2, head, running_mean, scale);

namespace {
exp_test::net tied_net() {
  exp_test::net n;
  n.head.weight = n.fc2.weight;
  return n;
}
}  // namespace

TEST_CASE("export: parameters, buffers and constants lifted, tied weights once, torch's order and names") {
  using namespace exp_test;
  const net n = tied_net();
  const tensor_spec<f32, shape<batch, fix<4>>> x_spec(shape<batch, fix<4>>(batch(2), {}));
  const exported_program ep = export_program(n, input<"x">(x_spec));

  const auto& ins = ep.signature().input_specs();
  REQUIRE(ins.size() == 8);
  CHECK(ins[0] == input_spec{input_kind::parameter, "p_fc1_weight", "fc1.weight", true});
  CHECK(ins[2] == input_spec{input_kind::parameter, "p_fc2_weight", "fc2.weight", true});
  CHECK(ins[4] == input_spec{input_kind::parameter, "p_head_bias", "head.bias", true});  // head.weight is fc2.weight
  CHECK(ins[5] == input_spec{input_kind::buffer, "b_running_mean", "running_mean", true});
  CHECK(ins[6] == input_spec{input_kind::constant_tensor, "c_scale", "scale", true});
  CHECK(ins[7] == input_spec{input_kind::user_input, "x", "", true});
  CHECK(ep.signature().user_outputs() == std::vector<std::string>{"sub", "mul"});
  CHECK(ep.state_dict().size() == 7);  // 6 parameter names (head.weight is fc2.weight) + the persistent buffer
  CHECK(ep.state_dict().find("head.weight") != nullptr);
  CHECK(ep.constants().contains("scale"));
  CHECK(ep.ranges().to_string() == "{batch: VR[1, 1024]}");
  REQUIRE(ep.module_call_graph().size() == 4);
  CHECK(ep.module_call_graph()[1].fqn == "fc1");
  CHECK(ep.module_call_graph()[3].fqn == "head");
  CHECK(ep.in_spec().to_string() == "TreeSpec(tuple, None, [*])");
  CHECK(ep.out_spec().to_string() == "TreeSpec(tuple, None, [*, *])");

  // the head's linear reads fc2's weight placeholder: the tie survives in the graph
  const ir::graph& g = ep.graph();
  bool head_reads_fc2 = false;
  for (const ir::node& nd : g.nodes())
    if (!nd.nn_module_stack.empty() && nd.nn_module_stack.back().path == "head")
      head_reads_fc2 = g[std::get<ir::value_ref>(nd.args[1]).node].name == "p_fc2_weight";
  CHECK(head_reads_fc2);

  std::string printed = ep.to_string();
  // the source lines depend on this file; pin the rest
  const std::string file = "export_program.cpp:";
  for (std::size_t at = printed.find(file); at != std::string::npos; at = printed.find(file, at + file.size())) {
    const std::size_t end = printed.find(' ', at);
    printed.replace(at, end - at, file + "N");
  }
  typex_test::check_golden("export_tied_mlp.txt", printed);
}

TEST_CASE("export: unnamed inputs are args_<i>, a wrong static shape does not compile (see compile_fail)") {
  using namespace exp_test;
  const net n = tied_net();
  const exported_program ep = export_program(n, tensor_spec<f32, shape_c<3, 4>>());
  CHECK(ep.signature().user_inputs() == std::vector<std::string>{"args_0"});
  CHECK(ep.ranges().empty());
  CHECK(ep.graph()[ep.graph().placeholders().back()].vals.front().to_string() == "f32[3, 4]");
}

TEST_CASE("export: the module call graph gives each submodule call its signature") {
  using namespace exp_test;
  const net n = tied_net();
  const tensor_spec<f32, shape<batch, fix<4>>> x_spec(shape<batch, fix<4>>(batch(2), {}));
  const auto ep = export_program(n, input<"x">(x_spec));
  const auto& calls = ep.module_call_graph();
  REQUIRE(calls.size() == 4);
  // `dense` opens its scope without its arguments: the signature is read off the graph
  REQUIRE(calls[1].signature);
  CHECK(calls[1].signature->inputs == std::vector<std::string>{"x"});  // fc1.weight/bias are state, not inputs
  CHECK(calls[1].signature->outputs == std::vector<std::string>{"linear"});
  CHECK(calls[1].signature->in_spec.to_string() == "TreeSpec(tuple, None, [*])");
  CHECK(calls[1].signature->out_spec.is_leaf());
  REQUIRE(calls[3].signature);
  CHECK(calls[3].fqn == "head");
  CHECK(calls[3].signature->inputs == std::vector<std::string>{"linear_1"});
  CHECK(calls[3].signature->outputs == std::vector<std::string>{"linear_2"});
}

namespace exp_test {
struct stats {
  template <class X>
  auto operator()(const X& x) const {
    const auto m = mean<-1>(x, keepdim);
    const auto v = var<-1>(x, 0.0);
    const auto top = argmax<1>(x);
    return std::make_tuple(m, v, top);
  }
};
}  // namespace exp_test
BOOST_HANA_ADAPT_STRUCT(exp_test::stats);

TEST_CASE("export: reductions record their ATen call with dims, correction and keepdim") {
  using exp_test::batch;
  const tensor_spec<f32, shape<batch, fix<6>>> x_spec(shape<batch, fix<6>>(batch(2), {}));
  const auto ep = export_program(exp_test::stats{}, input<"x">(x_spec));
  const std::string text = ir::print_readable(ep.graph());
  CHECK(text.find("mean: \"f32[batch, 1]\" = torch.ops.aten.mean.dim(x, [-1], True)") != std::string::npos);
  CHECK(text.find("var: \"f32[batch]\" = torch.ops.aten.var.correction(x, [-1], 0.0, False)") != std::string::npos);
  CHECK(text.find("argmax: \"i64[batch]\" = torch.ops.aten.argmax.default(x, 1, False)") != std::string::npos);
}

namespace exp_test {
// A submodule member left out of the reflection list: its parameters would have been lifted as
// anonymous constants, never initialized nor loaded (a program that runs and returns zeros).
struct forgot_member {
  dense48 fc1;
  dense88 fc2;  // used below, but missing from BOOST_HANA_ADAPT_STRUCT
  template <class X>
  auto operator()(const X& x) const {
    return fc2(relu(fc1(x)));
  }
};
struct forgot_buffer {
  dense48 fc;
  buffer<f32, fix<8>> shift;  // missing from the list too
  template <class X>
  auto operator()(const X& x) const {
    return fc(x) - shift;
  }
};
}  // namespace exp_test
BOOST_HANA_ADAPT_STRUCT(exp_test::forgot_member, fc1);
BOOST_HANA_ADAPT_STRUCT(exp_test::forgot_buffer, fc);

TEST_CASE("export: a parameter or buffer missing from BOOST_HANA_ADAPT_STRUCT is an error naming it and the fix") {
  using namespace exp_test;
  const tensor_spec<f32, shape<batch, fix<4>>> x(shape<batch, fix<4>>(batch(2), {}));
  forgot_member m;
  init_module(m, 1);
  CHECK_THROWS_WITH_AS((void)export_program(m, input<"x">(x)),
                       doctest::Contains("a parameter tensor<f32[8, 8]> used by the model is not one of its members: it is "
                                         "missing from the BOOST_HANA_ADAPT_STRUCT"),
                       state_error);
  forgot_buffer b;
  CHECK_THROWS_WITH_AS((void)export_program(b, input<"x">(x)),
                       doctest::Contains("a buffer tensor<f32[8]> used by the model is not one of its members"), state_error);
  // the members that are listed still export (and a constant, which carries its own data, may be
  // made inside the call: it is lifted as c_lifted_tensor_0, as torch.export does)
  dense48 ok;
  CHECK_NOTHROW((void)export_program(ok, input<"x">(x)));
}

namespace exp_test {
struct uses_nn {
  nn::Sequential<nn::Linear<4, 8>, nn::ReLU> block;
  nn::Linear<8, 2> head;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = block(x);  // line_of_block
    return head(h);           // line_of_head
  }
  static constexpr int line_of_block = __LINE__ - 3;
  static constexpr int line_of_head = __LINE__ - 3;
};
}  // namespace exp_test
BOOST_HANA_ADAPT_STRUCT(exp_test::uses_nn, block, head);

TEST_CASE("export: nodes recorded inside typex::nn modules carry the user's line, not the library's") {
  using namespace exp_test;
  uses_nn m;
  init_module(m, 1);
  const tensor_spec<f32, shape<batch, fix<4>>> x(shape<batch, fix<4>>(batch(2), {}));
  const auto ep = export_program(m, input<"x">(x));
  const std::string block_at = "export_program.cpp:" + std::to_string(uses_nn::line_of_block) + " ";
  const std::string head_at = "export_program.cpp:" + std::to_string(uses_nn::line_of_head) + " ";
  int calls = 0;
  for (const ir::node& n : ep.graph().nodes()) {
    if (n.op != ir::node_op::call_function) continue;
    ++calls;
    INFO(n.name, " at ", n.stack_trace);
    CHECK(n.stack_trace.find(".hpp") == std::string::npos);  // never linear.hpp, container.hpp, ...
    const bool in_head = !n.nn_module_stack.empty() && n.nn_module_stack.front().path == "head";
    // (the line the user called the outermost typex::nn module from: the Sequential's for its
    // linear and relu, which the Sequential calls from container.hpp)
    CHECK(n.stack_trace.find(in_head ? head_at : block_at) == 0);
  }
  CHECK(calls == 3);  // linear, relu, linear
}
