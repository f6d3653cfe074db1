// Tests for typex/export/graph_signature.hpp, range_constraints.hpp and named_tensors.hpp.
#include "../support.hpp"

#include <typex/export/graph_signature.hpp>
#include <typex/tensor/named_tensors.hpp>
#include <typex/export/range_constraints.hpp>

using namespace typex;

TEST_CASE("placeholder names follow torch.export") {
  CHECK(placeholder_name(input_kind::parameter, "layers.0.attn.in_proj_bias") == "p_layers_0_attn_in_proj_bias");
  CHECK(placeholder_name(input_kind::buffer, "bn.running_mean") == "b_bn_running_mean");
  CHECK(placeholder_name(input_kind::constant_tensor, "mask") == "c_mask");
  CHECK(placeholder_name(input_kind::user_input, "x") == "x");
}

TEST_CASE("every input and output kind has torch's name") {
  CHECK(name(input_kind::user_input) == "USER_INPUT");
  CHECK(name(input_kind::constant_tensor) == "CONSTANT_TENSOR");
  CHECK(name(output_kind::buffer_mutation) == "BUFFER_MUTATION");
  CHECK(name(output_kind::gradient_to_user_input) == "GRADIENT_TO_USER_INPUT");
  CHECK(name(output_kind::user_input_mutation) == "USER_INPUT_MUTATION");
  CHECK(name(output_kind::loss_output) == "LOSS_OUTPUT");
  CHECK(name(output_kind::gradient_to_parameter) == "GRADIENT_TO_PARAMETER");
}

TEST_CASE("non-persistent buffers are listed apart") {
  const graph_signature sig({{input_kind::buffer, "b_a", "a", true}, {input_kind::buffer, "b_tmp", "tmp", false}}, {});
  CHECK(sig.buffers() == std::vector<std::string>{"a", "tmp"});
  CHECK(sig.non_persistent_buffers() == std::vector<std::string>{"tmp"});
  CHECK(sig.to_string().find("b_tmp: BUFFER target='tmp' persistent=False") != std::string::npos);
  REQUIRE(sig.input_for("b_a") != nullptr);
  CHECK(sig.input_for("b_a")->target == "a");
  CHECK(sig.input_for("nope") == nullptr);
}

TEST_CASE("range constraints narrow, print and check") {
  range_constraints rc;
  rc.add<sym<"batch", 1, 1024>>();
  rc.add("seq", {2, int_oo});
  rc.add("batch", {4, 2048});  // intersects: [4, 1024]
  CHECK(rc.to_string() == "{batch: VR[4, 1024], seq: VR[2, int_oo]}");
  CHECK_THROWS_AS(rc.add("seq", {0, 1}), constraint_violation);
  symbol_table t;
  t.bind("batch", 2, "input 'x'");
  CHECK(typex_test::message_of<constraint_violation>([&] { rc.check(t); }) ==
        "typex: input 'x' binds symbol 'batch' to 2, outside its range VR[4, 1024]");
}

TEST_CASE("named tensors keep order and refuse duplicates") {
  named_tensors n;
  n.insert("b", any_tensor(dtype::f32, {1}));
  n.insert("a", any_tensor(dtype::i64, {2}));
  CHECK(n.begin()->first == "b");
  CHECK(n.at("a").to_string() == "i64[2]");
  CHECK_THROWS_AS(n.insert("a", any_tensor()), argument_error);
  CHECK_THROWS_AS((void)n.at("c"), argument_error);
}
