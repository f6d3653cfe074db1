// Tests for typex/export/exported_program.hpp.
#include "program_fixture.hpp"

using namespace export_test;

TEST_CASE("an exported program prints as torch.export's does (golden)") {
  const exported_program ep = make_program(program_parts());
  typex_test::check_golden("hand_built_program.txt", ep.to_string());
  std::ostringstream os;
  os << ep;
  CHECK(os.str() == ep.to_string());
}

TEST_CASE("accessors: the signature's views, the calling convention") {
  const exported_program ep = make_program(program_parts());
  CHECK(ep.signature().parameters() == std::vector<std::string>{"fc1.weight", "fc1.bias"});
  CHECK(ep.signature().buffers() == std::vector<std::string>{"bn.running_mean"});
  CHECK(ep.signature().user_inputs() == std::vector<std::string>{"x"});
  CHECK(ep.signature().user_outputs() == std::vector<std::string>{"mul"});
  CHECK(ep.in_spec().to_string() == "TreeSpec(tuple, None, [*])");
  CHECK(ep.module_call_graph().size() == 2);
  CHECK(ep.state_dict().size() == 3);
  CHECK(ep.constants().contains("scale"));
}

TEST_CASE("the verifier runs at construction and names the mismatch") {
  {
    auto p = program_parts();
    p.sig = graph_signature({{input_kind::parameter, "p_fc1_weight", "fc1.weight"}}, {});
    CHECK(typex_test::message_of<ir::graph_error>([&] { (void)make_program(std::move(p)); }) ==
          "typex::exported_program: the graph has 5 placeholders but the signature describes 1 inputs");
  }
  {
    auto p = program_parts();
    named_tensors sd;
    sd.insert("fc1.weight", any_tensor(dtype::f32, {4, 2}));
    sd.insert("fc1.bias", any_tensor(dtype::f32, {4}));
    sd.insert("bn.running_mean", any_tensor(dtype::f32, {4}));
    p.state_dict = std::move(sd);
    CHECK(typex_test::message_of<ir::graph_error>([&] { (void)make_program(std::move(p)); }) ==
          "typex::exported_program: placeholder 'p_fc1_weight' is f32[4, 3] but 'fc1.weight' is f32[4, 2]");
  }
  {
    auto p = program_parts();
    p.constants = named_tensors{};
    CHECK(typex_test::message_of<ir::graph_error>([&] { (void)make_program(std::move(p)); }) ==
          "typex::exported_program: CONSTANT_TENSOR 'scale' is not in the constants");
  }
  {
    auto p = program_parts();
    auto ins = p.sig.input_specs();
    std::swap(ins[3], ins[4]);  // a user input before a lifted constant
    std::swap(ins[3].arg, ins[4].arg);
    p.sig = graph_signature(ins, p.sig.output_specs());
    CHECK_THROWS_AS((void)make_program(std::move(p)), ir::graph_error);
  }
  {
    auto p = program_parts();
    p.sig = graph_signature(p.sig.input_specs(), {{output_kind::user_output, "sub", ""}});
    CHECK(typex_test::message_of<ir::graph_error>([&] { (void)make_program(std::move(p)); }) ==
          "typex::exported_program: output 0 is 'mul' but the signature names 'sub'");
  }
}
