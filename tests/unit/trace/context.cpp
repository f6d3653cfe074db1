// Tests for typex/trace/context.hpp and typex/trace/traced.hpp.
#include "../support.hpp"

#include <vector>

#include <typex/ir/printer.hpp>
#include <typex/trace/traced.hpp>

using namespace typex;
using batch = sym<"batch", 1, 64>;

TEST_CASE("locations read like torch.export's stack traces") {
  const std::string here = format_location(std::source_location::current());
  CHECK(here.find("context.cpp:") == 0);
  CHECK(here.find(" in ") != std::string::npos);
}

namespace {
template <class T>
std::string where_in_template(T) {
  return format_location(std::source_location::current());
}
struct callable {
  std::string operator()() const { return format_location(std::source_location::current()); }
};
}  // namespace

TEST_CASE("locations name the enclosing function without its template arguments") {
  CHECK(where_in_template(std::vector<int>{}).ends_with(" in where_in_template"));
  CHECK(callable{}().ends_with(" in operator()"));
}

TEST_CASE("the context records calls under the module stack, with their location") {
  tracing_context ctx;
  const scoped_tracing on(ctx);
  CHECK(current_tracing_context() == &ctx);
  const ir::node_id x = ctx.graph().add_placeholder("x", ctx.meta_of_type<f32, shape<batch, fix<3>>>());
  const traced<f32, shape<batch, fix<3>>> tx(ctx, {x}, shape<batch, fix<3>>(batch(5), {}));
  CHECK(tx.name() == "x");
  CHECK(tx.to_string() == "traced f32[5, 3]");
  ctx.push_module("fc1", "typex::nn::linear");
  const auto here = std::source_location::current();
  const ir::value_ref r = ctx.call(op_id_of<relu_op>, {tx.value()}, {ctx.meta_of(tx)}, {}, &here);
  ctx.pop_module();
  const ir::node& n = ctx.graph()[r.node];
  CHECK(n.nn_module_stack == std::vector<ir::module_frame>{{"fc1", "typex::nn::linear"}});
  CHECK(n.stack_trace.find("context.cpp:") == 0);
  CHECK(n.vals.front().to_string() == "f32[batch, 3]");
  CHECK(ctx.module_stack().empty());
}

TEST_CASE("eager tensors met while tracing: lifted once by storage, as torch names constants") {
  tracing_context ctx;
  const host_tensor<f32, shape_c<3>> table;
  const ir::value_ref a = ctx.value_of(table);
  const ir::value_ref b = ctx.value_of(table);
  CHECK(a == b);
  CHECK(ctx.graph()[a.node].name == "c_lifted_tensor_0");
  REQUIRE(ctx.lifted_constants().size() == 1);
  CHECK(ctx.lifted_constants()[0].first == "lifted_tensor_0");
  const host_tensor<f32, shape_c<3>> other;
  CHECK(ctx.graph()[ctx.value_of(other).node].name == "c_lifted_tensor_1");
  // a tensor bound beforehand (a lifted parameter) maps to its placeholder
  const host_tensor<f32, shape_c<3>> weight;
  const ir::node_id p = ctx.graph().add_placeholder("p_weight", ctx.meta_of(weight));
  ctx.bind_storage(weight.get_storage().data(), {p});
  CHECK(ctx.value_of(weight).node == p);
}

TEST_CASE("anonymous dims get fresh symbols, shape facts reach the context") {
  tracing_context ctx;
  const scoped_tracing on(ctx);
  CHECK(ctx.meta_of_type<f32, shape<dyn, dyn>>().to_string() == "f32[s0, s1]");
  (void)matmul_shape(shape<batch, dyn>(batch(2), dyn(8)), shape_c<8, 4>{});
  REQUIRE(ctx.requirements().size() == 1);
  CHECK(ctx.requirements()[0].rhs == "8");
}
