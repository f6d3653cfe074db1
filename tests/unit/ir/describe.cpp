// Every op's run-time description (ir/describe.hpp): its shape/dtype rule against PyTorch on every
// parity case (tests/data/parity/ops.txt: PyTorch's result dtype and extents for each call), with
// static extents and again with the leading extent of every input symbolic; its traits; a user
// op's description found once registered.
#include "../parity_cases.hpp"
#include "../support.hpp"

#include <typex/ir/describe.hpp>

#include <map>
#include <set>

using namespace typex;

namespace {
// The case as a graph: one placeholder per tensor (and list element), the call's arguments
// reading them. Returns the arguments.
std::vector<ir::argument> case_graph(const parity::parity_case& c, ir::graph& g) {
  std::vector<ir::argument> args;
  std::size_t list_k = 0;
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    ir::argument a = c.args[i];
    const auto meta_of = [](const any_tensor& t) {
      return ir::tensor_meta{t.scalar_type(), std::vector<ir::sym_expr>(t.extents().begin(), t.extents().end())};
    };
    if (c.tensors[i]) {
      a = ir::value_ref{g.add_placeholder("arg", meta_of(*c.tensors[i]))};
    } else if (auto* refs = std::get_if<std::vector<ir::value_ref>>(&a)) {
      for (auto& r : *refs) r = ir::value_ref{g.add_placeholder("list", meta_of(c.list[list_k++]))};
    }
    args.push_back(std::move(a));
  }
  return args;
}
}  // namespace

TEST_CASE("describe: every op's rule gives PyTorch's dtype and shape on every parity case") {
  std::map<std::string, int> checked;
  for (const parity::parity_case& c : parity::read_cases()) {
    const op_id op = find_op(c.target);
    INFO(c.name << " (" << c.target << ")");
    ir::graph g;
    const std::vector<ir::argument> args = case_graph(c, g);
    std::vector<ir::tensor_meta> got;
    try {
      got = ir::infer_meta(g, op, args);
    } catch (const std::exception& e) {
      FAIL_CHECK(c.name << ": the rule threw: " << std::string(e.what()));
      continue;
    }
    REQUIRE(got.size() == 1);
    std::vector<ir::sym_expr> want(c.expected.extents().begin(), c.expected.extents().end());
    // nonzero's and masked_select's dim 0 is as many elements as the data selects, which no rule
    // can know: the rule gives a symbol there (the rest is PyTorch's, checked below)
    if (c.target == "aten.nonzero.default" || c.target == "aten.masked_select.default") {
      REQUIRE(!got[0].shape.empty());
      CHECK(got[0].shape[0].is_symbol());
      if (!want.empty()) want[0] = got[0].shape[0];
    }
    CHECK_MESSAGE(got[0] == (ir::tensor_meta{c.expected.scalar_type(), want}),
                  c.name << ": the rule gives " << got[0].to_string() << ", PyTorch " << ir::tensor_meta{c.expected.scalar_type(), want}.to_string());
    ++checked[c.target];
  }
  for_each_op(builtin_ops{}, [&](auto type) {
    using Op = typename decltype(type)::type;
    const std::string name(op_id_of<Op>.name());
    CHECK_MESSAGE((ir::describe(op_id_of<Op>).infer != nullptr), name << " has no run-time rule");
    CHECK_MESSAGE(checked[name] > 0, name << ": no parity case checked its rule");
  });
}

TEST_CASE("describe: a rule refuses what the op refuses, naming the op") {
  ir::graph g;
  const auto a = g.add_placeholder("a", {dtype::f32, {ir::sym_expr(index_t{3}), ir::sym_expr(index_t{4})}});
  const auto b = g.add_placeholder("b", {dtype::f32, {ir::sym_expr(index_t{5}), ir::sym_expr(index_t{6})}});
  CHECK_THROWS_WITH_AS(ir::infer_meta(g, op_id_of<add_op>, std::vector<ir::argument>{ir::value_ref{a}, ir::value_ref{b}}),
                       doctest::Contains("aten.add.Tensor: extents 4 and 6 do not broadcast"), shape_error);
  CHECK_THROWS_AS(ir::infer_meta(g, op_id_of<aten::mm>, std::vector<ir::argument>{ir::value_ref{a}, ir::value_ref{b}}), shape_error);
}

TEST_CASE("describe: symbolic extents flow through the rules") {
  ir::graph g;
  const ir::sym_expr batch = ir::sym_expr::symbol("batch");
  const auto x = g.add_placeholder("x", {dtype::f32, {batch, ir::sym_expr(index_t{8})}});
  const auto w = g.add_placeholder("w", {dtype::f32, {ir::sym_expr(index_t{4}), ir::sym_expr(index_t{8})}});
  const auto y = ir::infer_meta(g, op_id_of<linear_op>, std::vector<ir::argument>{ir::value_ref{x}, ir::value_ref{w}, ir::none_t{}});
  REQUIRE(y.size() == 1);
  CHECK(y[0].to_string() == "f32[batch, 4]");
  const auto s = ir::infer_meta(g, op_id_of<aten::sum_dim_IntList>,
                                std::vector<ir::argument>{ir::value_ref{x}, std::vector<std::int64_t>{1}, true, ir::none_t{}});
  CHECK(s[0].to_string() == "f32[batch, 1]");
}

TEST_CASE("describe: traits come from the op types") {
  CHECK(ir::describe(op_id_of<relu_op>).traits.pointwise);
  CHECK(ir::describe(op_id_of<add_op>).traits.pointwise);
  CHECK_FALSE(ir::describe(op_id_of<linear_op>).traits.pointwise);
  CHECK(ir::describe(op_id_of<aten::view>).traits.view);
  CHECK(ir::describe(op_id_of<aten::transpose_int>).traits.view);
  CHECK_FALSE(ir::describe(op_id_of<aten::slice_scatter>).traits.view);
  CHECK(ir::describe(op_id_of<dropout_mask_op>).traits.random);
  CHECK(ir::describe(op_id_of<dropout_op>).traits.random);
  CHECK(ir::describe(op_id_of<dropout_op>).traits.side_effects);
  CHECK_FALSE(ir::describe(op_id_of<aten::argmax>).traits.differentiable);
  CHECK(ir::describe(op_id_of<ir::assert_shape_op>).traits.side_effects);
  CHECK_FALSE(ir::describe(op_id_of<copy_op>).traits.writes_state);  // (functional: aten.copy, not copy_)
  // a dropout in eval mode takes no draw; in training mode it does
  const std::vector<ir::argument> eval{ir::value_ref{0}, 0.5, false};
  const std::vector<ir::argument> train{ir::value_ref{0}, 0.5, true};
  CHECK_FALSE(ir::draws_randomness(op_id_of<dropout_op>, eval));
  CHECK(ir::draws_randomness(op_id_of<dropout_op>, train));
}
