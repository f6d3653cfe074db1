// ir::arg<Op, "name">: an op call's arguments by the names of its schema, with the names and the C++
// types checked at compile time, defaults from the schema (read when it was parsed).
#include "../support.hpp"

#include <typex/ir/typed_call.hpp>

#include <optional>
#include <type_traits>

using namespace typex;

namespace {
struct call {  // a call's arguments and the tensors its value references stand for
  std::vector<ir::argument> args;
  std::vector<const any_tensor*> tensors;
  ir::call_args of(op_id op) const { return ir::call_args(op, args, tensors); }
};
}  // namespace

// positions and types from the schemas (a misspelled name: tests/compile_fail/typed_arg_name_ko.cpp)
static_assert(ir::arg_index<linear_op, "input"> == 0 && ir::arg_index<linear_op, "bias"> == 2);
static_assert(ir::arg_index<addmm_op, "alpha"> == 4);
static_assert(ir::arg_index<layer_norm_op, "eps"> == 4);
static_assert(std::is_same_v<decltype(ir::arg<linear_op, "weight">(std::declval<const ir::call_args&>())), const any_tensor&>);
static_assert(std::is_same_v<decltype(ir::arg<linear_op, "bias">(std::declval<const ir::call_args&>())), const any_tensor*>);
static_assert(std::is_same_v<decltype(ir::arg<add_op, "alpha">(std::declval<const ir::call_args&>())), double>);
static_assert(std::is_same_v<decltype(ir::arg<aten::softmax_int, "dim">(std::declval<const ir::call_args&>())), std::int64_t>);
static_assert(std::is_same_v<decltype(ir::arg<aten::softmax_int, "dtype">(std::declval<const ir::call_args&>())), std::optional<dtype>>);
static_assert(std::is_same_v<decltype(ir::arg<layer_norm_op, "normalized_shape">(std::declval<const ir::call_args&>())),
                             std::vector<std::int64_t>>);
static_assert(std::is_same_v<decltype(ir::arg<aten::max_pool2d, "ceil_mode">(std::declval<const ir::call_args&>())), bool>);

TEST_CASE("typed call: arguments read by schema name, with the schema's defaults where a call leaves them out") {
  const any_tensor x(dtype::f32, {2, 3}), w(dtype::f32, {4, 3});
  // linear(x, w): bias left out (None)
  const call lin{{ir::value_ref{0}, ir::value_ref{1}}, {&x, &w}};
  CHECK(&ir::arg<linear_op, "input">(lin.of(op_id_of<linear_op>)) == &x);
  CHECK(&ir::arg<linear_op, "weight">(lin.of(op_id_of<linear_op>)) == &w);
  CHECK(ir::arg<linear_op, "bias">(lin.of(op_id_of<linear_op>)) == nullptr);
  // add(x, x): alpha's default; add(x, x, alpha=2.5)
  const call add1{{ir::value_ref{0}, ir::value_ref{0}}, {&x, &x}};
  CHECK(ir::arg<add_op, "alpha">(add1.of(op_id_of<add_op>)) == 1.0);
  const call add2{{ir::value_ref{0}, ir::value_ref{0}, 2.5}, {&x, &x, nullptr}};
  CHECK(ir::arg<add_op, "alpha">(add2.of(op_id_of<add_op>)) == 2.5);
  // layer_norm(x, [3]): eps 1e-05 from the schema; explicit None reads the default too
  const call ln{{ir::value_ref{0}, std::vector<std::int64_t>{3}, ir::none_t{}, ir::none_t{}, ir::none_t{}}, {&x, nullptr, nullptr, nullptr, nullptr}};
  CHECK(ir::arg<layer_norm_op, "eps">(ln.of(op_id_of<layer_norm_op>)) == 1e-05);
  CHECK(ir::arg<layer_norm_op, "normalized_shape">(ln.of(op_id_of<layer_norm_op>)) == std::vector<std::int64_t>{3});
  // softmax(x, -1): dtype None -> empty optional; softmax(x, 1, f64)
  const call sm{{ir::value_ref{0}, std::int64_t{-1}}, {&x, nullptr}};
  CHECK(ir::arg<aten::softmax_int, "dim">(sm.of(op_id_of<aten::softmax_int>)) == -1);
  CHECK_FALSE(ir::arg<aten::softmax_int, "dtype">(sm.of(op_id_of<aten::softmax_int>)).has_value());
  const call sm2{{ir::value_ref{0}, std::int64_t{1}, dtype::f64}, {&x, nullptr, nullptr}};
  CHECK(ir::arg<aten::softmax_int, "dtype">(sm2.of(op_id_of<aten::softmax_int>)) == std::optional<dtype>(dtype::f64));
  // the run-time checks underneath: a required argument of the wrong kind names the op and the argument
  const call bad{{ir::value_ref{0}, 0.5}, {&x, nullptr}};
  const auto read_dim = [&] { return ir::arg<aten::softmax_int, "dim">(bad.of(op_id_of<aten::softmax_int>)); };
  CHECK_THROWS_WITH_AS(read_dim(), doctest::Contains("argument 1 (dim) should be an integer"), argument_error);
}
