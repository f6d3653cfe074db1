// Builds with -fsanitize=undefined (a CTest compiles it so, syntax only): a user's sanitizer build
// must compile. g++ 12 under UBSan refuses, in constant expressions, to compare the addresses of
// template parameter objects and variable template instances with null or with each other; typex
// evaluates op ids and parses op schemas at compile time, so they avoid those comparisons. This
// unit does what a model unit does (ops traced into a program, the registry searched, op ids and
// schemas compared in constant expressions) and exports a model.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include <boost/hana/adapt_struct.hpp>

namespace {
struct mlp {
  typex::nn::Linear<8, 16> fc1;
  typex::nn::Linear<16, 4> fc2;
  template <class X>
  auto operator()(const X& x) const {
    return typex::softmax<-1>(fc2(typex::gelu(fc1(x))) + 1.0);
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(mlp, fc1, fc2);

static_assert(typex::op_id_of<typex::relu_op> != typex::op_id_of<typex::gelu_op>);
static_assert(typex::op_id_of<typex::conv2d_op<typex::conv2d_options{}>> == typex::op_id_of<typex::aten::conv2d>);
static_assert(typex::op_id_of<typex::aten::sum_dim_IntList>.short_name() == "sum");
static_assert(!typex::op_id{});
static_assert(typex::op_id_of<typex::add_op>.schema().index("alpha") == 2);

int main() {
  using namespace typex;
  mlp m;
  init_module(m, 1);
  const auto program = export_program(m, input<"x">(tensor_spec<f32, shape_c<2, 8>>(shape_c<2, 8>{})));
  return find_op("aten.gelu.default") == op_id_of<gelu_op> && !program.to_string().empty() ? 0 : 1;
}
