// Functionalization of in-place writes (ops/mutation.hpp): a user input written by the model
// (copy_, add_, mul_, fill_, zero_) becomes a USER_INPUT_MUTATION output that a call writes back
// into the caller's tensor, as the eager model writes it; later reads in the trace see the new
// value; a buffer written through a traced handle is a BUFFER_MUTATION (a step counter); an
// intermediate written in place is just its new value; inputs that alias a written one are
// refused; a joint program keeps the input's mutation.
#include "../support.hpp"
#include "round_trip.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <string>
#include <vector>

using namespace typex;

namespace mutation_models {
struct bump {  // x.add_(1); return x * 2
  template <class X>
  auto operator()(const X& x) const {
    add_(x, 1.0);
    return mul(x, 2.0);
  }
};
struct two_inputs {  // writes b (twice) then a, returns a + b
  template <class A, class B>
  auto operator()(const A& a, const B& b) const {
    copy_(b, mul(a, 3.0));  // b = 3a (broadcast from [4] into [2, 4])
    mul_(b, b);             // b = 9a^2
    fill_(a, 0.5);
    return add(a, b);
  }
};
struct counted {  // a step counter written through a traced handle, then read
  buffer<i64, fix<1>> steps;
  template <class X>
  auto operator()(const X& x) const {
    const auto s = as_traced(steps, x);
    add_(s, 1);
    return mul(x, to<f32>(s));  // (the new count)
  }
};
struct scratch {  // an intermediate written in place
  template <class X>
  auto operator()(const X& x) const {
    const auto h = mul(x, 2.0);
    add_(h, 1.0);
    zero_(x);
    return h;
  }
};
struct linear_loss {
  nn::Linear<4, 1> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto loss = mean(fc(x));
    mul_(x, 0.5);  // (and the input halved: written back, not differentiated)
    return loss;
  }
};
}  // namespace mutation_models
BOOST_HANA_ADAPT_STRUCT(mutation_models::bump);
BOOST_HANA_ADAPT_STRUCT(mutation_models::two_inputs);
BOOST_HANA_ADAPT_STRUCT(mutation_models::scratch);
BOOST_HANA_ADAPT_STRUCT(mutation_models::counted, steps);
BOOST_HANA_ADAPT_STRUCT(mutation_models::linear_loss, fc);

namespace {
template <class T>
T ramp(float start) {
  T t;
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = start + 0.25f * static_cast<float>(i);
  return t;
}
}  // namespace

TEST_CASE("input mutation: x.add_(1) is a USER_INPUT_MUTATION, written back into the caller's tensor as eagerly") {
  using X = tensor<f32, fix<2>, fix<3>>;
  const mutation_models::bump m;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<3>>>()));
  const std::string printed = ep.to_string();
  CHECK(printed.find("add: USER_INPUT_MUTATION target='x'") != std::string::npos);
  CHECK(printed.find("mul: USER_OUTPUT") != std::string::npos);
  CHECK(printed.find("torch.ops.aten.mul.Tensor(add, 2.0)") != std::string::npos);  // (reads the new x)
  CHECK(printed.find("aten.copy") == std::string::npos);  // (the add is the new value: no copy node)
  CHECK(ep.signature().user_inputs_to_mutate() == std::vector<std::pair<std::string, std::string>>{{"add", "x"}});

  X eager_x = ramp<X>(-1.0f), program_x = ramp<X>(-1.0f);
  const auto eager = m(eager_x);
  const auto run = ep.module();
  const auto out = run(program_x);
  for (index_t i = 0; i < 6; ++i) {
    const float x0 = -1.0f + 0.25f * static_cast<float>(i);
    CHECK(eager_x.data()[i] == x0 + 1.0f);  // the eager model wrote its input
    CHECK(program_x.data()[i] == eager_x.data()[i]);  // so did the program
    CHECK(out.data()[i] == eager.data()[i]);
    CHECK(out.data()[i] == (x0 + 1.0f) * 2.0f);
  }
  (void)run(program_x);  // again: it reads the written value
  CHECK(program_x.data()[0] == 1.0f);
  typex_test::check_round_trip(ep, {program_x.erase()});  // (and the written input, bit for bit)
}

TEST_CASE("input mutation: several writes, two inputs, broadcast copy_: the last values, in the inputs' order") {
  using A = tensor<f32, fix<4>>;
  using B = tensor<f32, fix<2>, fix<4>>;
  const mutation_models::two_inputs m;
  const auto ep = export_program(m, input<"a">(tensor_spec<f32, shape<fix<4>>>()), input<"b">(tensor_spec<f32, shape<fix<2>, fix<4>>>()));
  const auto& outs = ep.signature().output_specs();
  REQUIRE(outs.size() == 3);
  CHECK(outs[0].kind == output_kind::user_input_mutation);
  CHECK(outs[0].target == "a");
  CHECK(outs[1].kind == output_kind::user_input_mutation);
  CHECK(outs[1].target == "b");
  CHECK(outs[2].kind == output_kind::user_output);
  A ea = ramp<A>(1.0f), pa = ramp<A>(1.0f);
  B eb = ramp<B>(7.0f), pb = ramp<B>(7.0f);
  const auto eager = m(ea, eb);
  const auto out = ep.module()(pa, pb);
  for (index_t i = 0; i < 4; ++i) {
    CHECK(pa.data()[i] == 0.5f);
    CHECK(ea.data()[i] == 0.5f);
  }
  for (index_t i = 0; i < 8; ++i) {
    const float a0 = 1.0f + 0.25f * static_cast<float>(i % 4);
    CHECK(pb.data()[i] == doctest::Approx(9.0f * a0 * a0));
    CHECK(pb.data()[i] == eb.data()[i]);
    CHECK(out.data()[i] == eager.data()[i]);
  }
  // a written input may not share memory with another input
  any_tensor shared(dtype::f32, {2, 4});
  const any_tensor view_a(dtype::f32, {4}, shared.get_storage());
  CHECK_THROWS_WITH_AS((void)program_module<eigen_backend>(ep)({view_a, shared}),
                       doctest::Contains("is written by the program (USER_INPUT_MUTATION) and shares memory with input"), argument_error);
}

TEST_CASE("input mutation: a buffer written through a traced handle is a BUFFER_MUTATION (a step counter)") {
  mutation_models::counted m;
  init_module(m, 1);
  m.steps.fill(0);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>>>()));
  const std::string printed = ep.to_string();
  CHECK(printed.find("add: BUFFER_MUTATION target='steps'") != std::string::npos);
  CHECK(m.steps.data()[0] == 0);  // (export wrote nothing)
  const auto run = ep.module();
  tensor<f32, fix<3>> x;
  x.fill(2.0f);
  for (int k = 1; k <= 3; ++k) CHECK(run(x).data()[0] == 2.0f * static_cast<float>(k));
  CHECK(run.untyped().buffer("steps").data<std::int64_t>()[0] == 3);
  // eagerly, the module's own buffer counts
  (void)m(x);
  (void)m(x);
  CHECK(m.steps.data()[0] == 2);
}

TEST_CASE("input mutation: an intermediate written in place is its new value, and zero_ of the input is written back") {
  const mutation_models::scratch m;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<5>>>()));
  CHECK(ep.signature().output_specs().size() == 2);  // x's mutation, and h
  tensor<f32, fix<5>> x = ramp<tensor<f32, fix<5>>>(1.0f);
  const auto h = ep.module()(x);
  for (index_t i = 0; i < 5; ++i) {
    CHECK(h.data()[i] == 2.0f * (1.0f + 0.25f * static_cast<float>(i)) + 1.0f);
    CHECK(x.data()[i] == 0.0f);
  }
}

TEST_CASE("input mutation: a joint program keeps the input's mutation before its loss and gradients") {
  mutation_models::linear_loss m;
  init_module(m, 2);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, fix<4>>>()));
  const exported_program joint = make_joint(ep);
  const auto& outs = joint.signature().output_specs();
  REQUIRE(outs.size() == 4);
  CHECK(outs[0].kind == output_kind::user_input_mutation);
  CHECK(outs[1].kind == output_kind::loss_output);
  CHECK(outs[2].kind == output_kind::gradient_to_parameter);
  tensor<f32, fix<3>, fix<4>> x = ramp<tensor<f32, fix<3>, fix<4>>>(0.0f);
  const float x5 = x.data()[5];
  const auto r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x.erase()}));
  CHECK(x.data()[5] == 0.5f * x5);
  // d mean(x w^T + b) / d w = mean of x's rows (the values before the halving)
  for (index_t j = 0; j < 4; ++j) {
    const float want = (0.25f * static_cast<float>(j) + 0.25f * static_cast<float>(4 + j) + 0.25f * static_cast<float>(8 + j)) / 3.0f;
    CHECK(r.gradients.at("fc.weight").data<float>()[j] == doctest::Approx(want));
  }
  typex_test::check_round_trip(joint, {x.erase()});
}

namespace view_models {
struct through_reshape {  // writes the input through a reshape of it, then reads an earlier view
  template <class X>
  auto operator()(const X& x) const {
    const auto flat = reshape(x, fix<6>{});  // [2, 3] -> [6], shares x's memory
    const auto rows = unsqueeze<0>(x);   // taken before the write: sees it (shares memory)
    add_(flat, 10.0);
    return std::make_tuple(mul(x, 1.0), mul(rows, 1.0));
  }
};
struct through_select {  // x[0].add_(1): PyTorch writes x; typex's select is a copy
  template <class X>
  auto operator()(const X& x) const {
    const auto row = select<0>(x, 0);
    add_(row, 1.0);
    return row;
  }
};
}  // namespace view_models
BOOST_HANA_ADAPT_STRUCT(view_models::through_reshape);
BOOST_HANA_ADAPT_STRUCT(view_models::through_select);

TEST_CASE("input mutation: a write through a view that shares its input's memory writes the input, and earlier such views see it") {
  using X = tensor<f32, fix<2>, fix<3>>;
  const view_models::through_reshape m;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<3>>>()));
  const std::string printed = ep.to_string();
  CHECK(printed.find("USER_INPUT_MUTATION target='x'") != std::string::npos);
  X ex = ramp<X>(0.0f), px = ramp<X>(0.0f);
  const auto [e1, e2] = m(ex);  // eagerly: reshape and unsqueeze share x's memory
  const auto [p1, p2] = ep.module()(px);
  for (index_t i = 0; i < 6; ++i) {
    const float want = 0.25f * static_cast<float>(i) + 10.0f;
    CHECK(ex.data()[i] == want);
    CHECK(px.data()[i] == want);
    CHECK(e1.data()[i] == want);
    CHECK(p1.data()[i] == want);
    CHECK(e2.data()[i] == want);  // (the view taken before the write)
    CHECK(p2.data()[i] == want);
  }
}

TEST_CASE("input mutation: a write to the result of a view op that copies in typex is refused, naming the op and the fix") {
  const view_models::through_select m;
  // eagerly: select's result is a copy, so torch's x[0].add_(1) would silently not write x
  tensor<f32, fix<2>, fix<3>> x;
  x.fill(1.0f);
  CHECK_THROWS_WITH_AS((void)m(x), doctest::Contains("to the result of aten.select.int: in typex that op makes a copy"), unsupported_error);
  CHECK(x.data()[0] == 1.0f);
  CHECK_THROWS_AS(add_(transpose<0, 1>(x), 1.0), unsupported_error);
  CHECK_THROWS_AS(fill_(slice<1, 0, 2>(x), 0.0), unsupported_error);
  {  // the view's copy gone, its address reused: not taken for the view
    (void)select<0>(x, 1);
  }
  tensor<f32, fix<3>> fresh;
  CHECK_NOTHROW(add_(fresh, 1.0));
  CHECK_NOTHROW(add_(reshape(x, fix<6>{}), 1.0));  // (shares x's memory: writes x)
  CHECK(x.data()[5] == 2.0f);
  CHECK_THROWS_WITH_AS((void)export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<3>>>())),
                       doctest::Contains("the result of aten.select.int at input_mutation.cpp"), unsupported_error);
  CHECK_THROWS_WITH_AS((void)export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<3>>>())),
                       doctest::Contains("typex::select_scatter or typex::slice_scatter"), unsupported_error);
}

namespace view_models {
struct kv_cache {  // a cache row written each call: torch's `self.cache[pos] = x`, functionally
  buffer<f32, fix<4>, fix<3>> cache;
  template <class X>
  auto operator()(const X& x) const {
    const auto c = as_traced(cache, x);
    copy_(c, select_scatter<0>(c, x, 1));               // row 1 <- x
    copy_(c, slice_scatter<1, 0, 1>(c, mul(slice<1, 2, 3>(c), 2.0)));  // column 0 <- 2 * column 2
    return sum(c);
  }
};
}  // namespace view_models
BOOST_HANA_ADAPT_STRUCT(view_models::kv_cache, cache);

TEST_CASE("input mutation: writes through a select and a slice of a buffer, as select_scatter and slice_scatter") {
  view_models::kv_cache m;
  init_module(m, 1);
  for (index_t i = 0; i < 12; ++i) m.cache.data()[i] = static_cast<float>(i);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>>>()));
  const std::string printed = ep.to_string();
  CHECK(printed.find("torch.ops.aten.select_scatter.default(b_cache, x, 0, 1)") != std::string::npos);
  CHECK(printed.find("torch.ops.aten.slice_scatter.default(") != std::string::npos);
  CHECK(printed.find("BUFFER_MUTATION target='cache'") != std::string::npos);
  tensor<f32, fix<3>> x;
  x.data()[0] = -1.0f;
  x.data()[1] = -2.0f;
  x.data()[2] = -3.0f;
  const auto run = ep.module();
  const float got = run(x).data()[0];
  const float eager = m(x).data()[0];  // (writes m.cache as the program writes its copy)
  CHECK(got == eager);
  const any_tensor& c = run.untyped().buffer("cache");
  const float want[12] = {4, 1, 2, -6, -2, -3, 16, 7, 8, 22, 10, 11};  // row 1 = x, then column 0 = 2 * column 2
  for (index_t i = 0; i < 12; ++i) {
    CHECK(c.data<float>()[i] == want[i]);
    CHECK(m.cache.data()[i] == want[i]);
  }
  typex_test::check_round_trip(ep, {x.erase()});
}
