// Tests for typex/ir/verifier.hpp.
#include "mlp_graph.hpp"

#include <typex/ops/all.hpp>
#include <typex/ir/verifier.hpp>

using namespace ir_test;

namespace typex {
struct relu_inplace_op {  // (an op typex never records: graphs built by hand can still hold one)
  static constexpr std::string_view target = "aten.relu_.default";
};
}  // namespace typex

TEST_CASE("a well-formed graph verifies") {
  CHECK_NOTHROW(verify(mlp_graph()));
  CHECK_NOTHROW(verify(mlp_graph(true)));  // a dead node is allowed (DCE removes it)
}

TEST_CASE("the verifier names what is wrong") {
  graph no_output;
  (void)no_output.add_placeholder("x", {dtype::f32, {3}});
  CHECK(typex_test::message_of<graph_error>([&] { verify(no_output); }) ==
        "typex::ir::verify: the graph has no output node (the last node must be the output)");

  graph inplace;
  const node_id x = inplace.add_placeholder("x", {dtype::f32, {3}});
  const node_id r = inplace.add_call({.target = typex::op_id_of<typex::relu_inplace_op>, .args = {value_ref{x}}, .vals = {{dtype::f32, {3}}}});
  inplace.set_output({value_ref{r}});
  CHECK(typex_test::message_of<graph_error>([&] { verify(inplace); }) ==
        "typex::ir::verify: node 'relu_': an in-place op; exported graphs are functional");

  graph no_meta;
  const node_id y = no_meta.add_placeholder("y", {dtype::f32, {3}});
  const node_id n = no_meta.add_call({.target = typex::op_id_of<typex::neg_op>, .args = {value_ref{y}}});
  (void)n;
  no_meta.set_output({value_ref{y}});
  CHECK_THROWS_AS(verify(no_meta), graph_error);
  CHECK_FALSE(typex::ir::detail::is_inplace_target("aten.add.Tensor"));
  CHECK(typex::ir::detail::is_inplace_target("aten.add_.Tensor"));
  CHECK_FALSE(typex::ir::detail::is_inplace_target("aten.__and__.Tensor"));
}
