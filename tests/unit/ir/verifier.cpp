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

namespace typex {
struct scale_inplace_op {  // (a user op whose schema writes its argument: not functional)
  static constexpr std::string_view target = "verifier_test.scale_.default";
  static constexpr std::string_view schema = "verifier_test::scale_(Tensor(a!) self, float k) -> Tensor(a!)";
};
}  // namespace typex

TEST_CASE("the verifier checks each node's metadata against its op's rule, naming the node, the op and both") {
  const auto one_call = [](typex::op_id op, std::vector<argument> extra, tensor_meta recorded) {
    graph g;
    const node_id x = g.add_placeholder("x", {dtype::f32, {sym_expr::symbol("s0"), 4}});
    const node_id w = g.add_placeholder("w", {dtype::f32, {5, 4}});
    std::vector<argument> args{value_ref{x}};
    if (op == typex::op_id_of<typex::linear_op>) args.emplace_back(value_ref{w});
    args.insert(args.end(), extra.begin(), extra.end());
    const node_id n = g.add_call({.target = op, .args = std::move(args), .vals = {std::move(recorded)}});
    g.set_output({value_ref{n}});
    return g;
  };
  const typex::op_id linear = typex::op_id_of<typex::linear_op>;
  CHECK_NOTHROW(verify(one_call(linear, {none_t{}}, {dtype::f32, {sym_expr::symbol("s0"), 5}})));
  // a shape the rule does not give (a symbolic dim, a static one)
  CHECK(typex_test::message_of<graph_error>([&] { verify(one_call(linear, {none_t{}}, {dtype::f32, {sym_expr::symbol("s1"), 5}})); }) ==
        "typex::ir::verify: node 'linear': aten.linear.default: the node records f32[s1, 5] where the op's rule gives f32[s0, 5]");
  CHECK(typex_test::message_of<graph_error>([&] { verify(one_call(linear, {none_t{}}, {dtype::f32, {sym_expr::symbol("s0"), 6}})); }) ==
        "typex::ir::verify: node 'linear': aten.linear.default: the node records f32[s0, 6] where the op's rule gives f32[s0, 5]");
  // a dtype the rule does not give
  CHECK(typex_test::message_of<graph_error>([&] { verify(one_call(linear, {none_t{}}, {dtype::f64, {sym_expr::symbol("s0"), 5}})); }) ==
        "typex::ir::verify: node 'linear': aten.linear.default: the node records f64[s0, 5] where the op's rule gives f32[s0, 5]");
  // a call the rule refuses
  CHECK(typex_test::message_of<graph_error>([&] {
          verify(one_call(typex::op_id_of<typex::aten::sum_dim_IntList>, {std::vector<std::int64_t>{2}, false, none_t{}}, {dtype::f32, {}}));
        }).starts_with("typex::ir::verify: node 'sum': aten.sum.dim_IntList: its rule refuses the call: aten.sum.dim_IntList: dim 2 is out of range for rank 2"));
  // the checks can be asked for without the rules (a graph whose shapes are still being built)
  CHECK_NOTHROW(verify(one_call(linear, {none_t{}}, {dtype::f32, {sym_expr::symbol("s0"), 6}}), {.shapes = false}));
}

TEST_CASE("the verifier holds a graph to its dialect") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {3}});
  const node_id s = g.add_call({.target = typex::op_id_of<typex::silu_op>, .args = {value_ref{x}}, .vals = {{dtype::f32, {3}}}});
  g.set_output({value_ref{s}});
  CHECK_NOTHROW(verify(g));  // (export: any op)
  CHECK_NOTHROW(verify(g, {.in_dialect = &export_dialect}));
  CHECK(typex_test::message_of<graph_error>([&] { verify(g, {.in_dialect = &core_dialect}); }) ==
        "typex::ir::verify: node 'silu': aten.silu.default is not an op of the program's dialect 'core' (passes::run_decompositions "
        "lowers a program to the core set)");
  // a backend's own dialect: a name and a predicate
  constexpr dialect relu_only{"relu_only", [](typex::op_id id) { return id == typex::op_id_of<typex::relu_op>; }};
  CHECK(typex_test::message_of<graph_error>([&] { verify(g, {.in_dialect = &relu_only}); }) ==
        "typex::ir::verify: node 'silu': aten.silu.default is not an op of the program's dialect 'relu_only'");
  CHECK(find_dialect("core") == &core_dialect);
  CHECK(find_dialect("export") == &export_dialect);
  CHECK(find_dialect("mine") == nullptr);
}

TEST_CASE("the verifier refuses an op whose schema writes an argument, and keeps a data-dependent dim open") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {3}});
  const node_id s = g.add_call({.target = typex::op_id_of<typex::scale_inplace_op>, .args = {value_ref{x}, 2.0}, .vals = {{dtype::f32, {3}}}});
  g.set_output({value_ref{s}});
  (void)typex::register_op<typex::scale_inplace_op>();
  CHECK(typex::ir::describe(typex::op_id_of<typex::scale_inplace_op>).traits.writes_state);
  CHECK(typex_test::message_of<graph_error>([&] { verify(g); }) ==
        "typex::ir::verify: node 'scale_': an in-place op; exported graphs are functional");

  // nonzero's dim 0 is the data's: any extent (a symbol the call made, or a count a test recorded)
  graph n;
  const node_id m = n.add_placeholder("m", {dtype::b8, {4, 5}});
  const node_id z = n.add_call({.target = typex::op_id_of<typex::aten::nonzero>, .args = {value_ref{m}}, .vals = {{dtype::i64, {sym_expr::symbol("u0"), 2}}}});
  n.set_output({value_ref{z}});
  CHECK_NOTHROW(verify(n));
  graph bad;
  const node_id m2 = bad.add_placeholder("m", {dtype::b8, {4, 5}});
  const node_id z2 = bad.add_call({.target = typex::op_id_of<typex::aten::nonzero>, .args = {value_ref{m2}}, .vals = {{dtype::i64, {sym_expr::symbol("u0"), 3}}}});
  bad.set_output({value_ref{z2}});
  CHECK(typex_test::message_of<graph_error>([&] { verify(bad); }).find("the node records i64[u0, 3] where the op's rule gives i64[") !=
        std::string::npos);
}
