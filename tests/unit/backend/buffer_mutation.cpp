// Buffer mutations: copy_ eagerly (in place, broadcast, converted) and while tracing (the graph's
// functional copy, returned as a BUFFER_MUTATION output), programs whose runner updates its own
// buffers call after call exactly as the eager model updates its members, training-mode batch
// norm exported, and the errors for writing what a program cannot write.
#include "../support.hpp"
#include "../export/round_trip.hpp"

#include <typex/backend/eigen.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <string>

using namespace typex;

TEST_CASE("copy_ eagerly writes into the destination: broadcast, converted, and returns it") {
  tensor<f32, fix<2>, fix<3>> dst;
  const auto row = tensor<f32, fix<3>>::from_values({}, {1.5f, -2.5f, 3.0f});
  const auto& same = copy_(dst, row);
  CHECK(&same == &dst);
  CHECK(dst(1, 0) == 1.5f);
  CHECK(dst(0, 2) == 3.0f);
  tensor<i64, fix<3>> ints;
  copy_(ints, row);  // truncates toward zero, as torch
  CHECK(ints(0) == 1);
  CHECK(ints(1) == -2);
  tensor<f32, fix<2>> wrong;
  (void)wrong;
  // copy_(dst, wrong) does not compile: "typex::copy_: cannot expand [2] to [2, 3]: ..."
}

namespace mutation_models {
// Keeps a running total of its inputs and a call count; returns x times the new total.
struct accumulate {
  buffer<f32, fix<3>> total;
  buffer<i64> calls;
  template <class X>
  auto operator()(const X& x) const {
    copy_(total, as_traced(total, x) + sum<0>(x));
    copy_(calls, as_traced(calls, x) + 1);
    return x * as_traced(total, x);  // reads the total just written
  }
};
struct writes_parameter {
  parameter<f32, fix<3>> w;
  template <class X>
  auto operator()(const X& x) const {
    copy_(w, x);
    return x;
  }
};
struct writes_captured {
  const tensor<f32, fix<3>>* outside;
  template <class X>
  auto operator()(const X& x) const {
    copy_(*outside, x);
    return x;
  }
};
struct bn_model {
  nn::BatchNorm2d<3> bn;
  template <class X>
  auto operator()(const X& x) const {
    return bn(x);
  }
};
}  // namespace mutation_models
BOOST_HANA_ADAPT_STRUCT(mutation_models::accumulate, total, calls);
BOOST_HANA_ADAPT_STRUCT(mutation_models::writes_parameter, w);
BOOST_HANA_ADAPT_STRUCT(mutation_models::writes_captured);
BOOST_HANA_ADAPT_STRUCT(mutation_models::bn_model, bn);

TEST_CASE("a program that writes buffers: BUFFER_MUTATION outputs, and a runner whose buffers follow the eager model's") {
  using batch = sym<"batch", 1, 8>;
  using S = shape<batch, fix<3>>;
  mutation_models::accumulate exported, eager;
  const auto ep = export_program(exported, input<"x">(tensor_spec<f32, S>(S(batch(2), {}))));
  const std::string text = ep.to_string();
  CHECK_MESSAGE(text.find("copy: \"f32[3]\" = torch.ops.aten.copy.default(b_total, add)") != std::string::npos, text);
  CHECK_MESSAGE(text.find("copy: BUFFER_MUTATION target='total'") != std::string::npos, text);
  CHECK_MESSAGE(text.find("copy_1: BUFFER_MUTATION target='calls'") != std::string::npos, text);
  CHECK_MESSAGE(text.find("mul: USER_OUTPUT") != std::string::npos, text);
  const auto writes = ep.signature().buffers_to_mutate();
  REQUIRE(writes.size() == 2);
  CHECK(writes[0] == std::pair<std::string, std::string>{"copy", "total"});
  CHECK(exported.total(0) == 0.0f);  // tracing wrote nothing
  CHECK(exported.calls.data()[0] == 0);

  auto run = program_module<eigen_backend>(ep);
  std::vector<any_tensor> out;
  for (index_t b : {2, 1, 5}) {  // new batch sizes re-plan; the buffers carry over
    const auto x = typex_test::random_tensor<tensor<f32, batch, fix<3>>>({b, 3}, std::uint64_t(b));
    const auto want = eager(x);
    const std::vector<any_tensor> in{x.erase()};
    run.run(in, out);
    REQUIRE(out.size() == 1);  // the user output only
    for (index_t i = 0; i < want.numel(); ++i) REQUIRE(out[0].data<float>()[i] == want.data()[i]);
    for (index_t c = 0; c < 3; ++c) REQUIRE(run.buffer("total").data<float>()[c] == eager.total(c));
  }
  CHECK(run.buffer("calls").data<std::int64_t>()[0] == 3);
  CHECK(run.state_dict().at("calls").data<std::int64_t>()[0] == 3);
  CHECK(ep.state_dict().at("calls").data<std::int64_t>()[0] == 0);  // the program's own state is untouched
  auto fresh = program_module<eigen_backend>(ep);                      // a new module starts from it
  CHECK(fresh.buffer("calls").data<std::int64_t>()[0] == 0);

  // the typed module returns the user outputs, with their types
  const auto typed = ep.module();
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<3>>>({2, 3}, 9);
  const tensor<f32, batch, fix<3>> y = typed(x);
  CHECK(y.numel() == 6);
  typex_test::check_round_trip(ep, {x.erase()});
}

TEST_CASE("writing a parameter or a captured tensor is refused by export, with the fix") {
  mutation_models::writes_parameter p;
  using S = shape_c<3>;
  CHECK_THROWS_WITH_AS((void)export_program(p, input<"x">(tensor_spec<f32, S>(S{}))),
                       doctest::Contains("writes to parameter 'w' (copy_); exported programs write to buffers only"),
                       unsupported_error);
  tensor<f32, fix<3>> outside;
  mutation_models::writes_captured c{&outside};
  CHECK_THROWS_WITH_AS((void)export_program(c, input<"x">(tensor_spec<f32, S>(S{}))),
                       doctest::Contains("not one of its buffers"), unsupported_error);
  CHECK(outside(0) == 0.0f);
}

TEST_CASE("training-mode batch norm exports: running statistics as buffer mutations, equal to eager training") {
  mutation_models::bn_model exported, eager;
  init_module(exported, 4);
  init_module(eager, 4);
  exported.bn.training = eager.bn.training = true;
  using S = shape_c<2, 3, 4, 4>;
  const auto ep = export_program(exported, input<"x">(tensor_spec<f32, S>(S{})));
  const std::string text = ep.to_string();
  for (const char* fqn : {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"})
    CHECK_MESSAGE(text.find(std::string("BUFFER_MUTATION target='") + fqn + "'") != std::string::npos, text);
  CHECK(text.find("aten.batch_norm.default") == std::string::npos);  // (the in-place op is not in the graph)
  auto run = program_module<eigen_backend>(ep);
  for (std::uint64_t step = 0; step < 3; ++step) {
    auto x = typex_test::random_tensor<tensor<f32, fix<2>, fix<3>, fix<4>, fix<4>>>({2, 3, 4, 4}, 10 + step);
    for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = x.data()[i] * 2.0f + float(step);  // moving statistics
    const auto want = eager(x);
    const auto got = run({x.erase()});
    for (index_t i = 0; i < want.numel(); ++i) REQUIRE(got[0].data<float>()[i] == doctest::Approx(want.data()[i]).epsilon(1e-5));
    for (index_t c = 0; c < 3; ++c) {
      REQUIRE(run.buffer("bn.running_mean").data<float>()[c] == doctest::Approx(eager.bn.running_mean(c)).epsilon(1e-5));
      REQUIRE(run.buffer("bn.running_var").data<float>()[c] == doctest::Approx(eager.bn.running_var(c)).epsilon(1e-5));
    }
  }
  CHECK(run.buffer("bn.num_batches_tracked").data<std::int64_t>()[0] == 3);
  CHECK(eager.bn.num_batches_tracked.data()[0] == 3);
  typex_test::check_round_trip(ep, {typex_test::random_tensor<tensor<f32, fix<2>, fix<3>, fix<4>, fix<4>>>({2, 3, 4, 4}, 3).erase()});
}
