// Tests for typex::cond / while_loop / map / scan (trace/control_flow.hpp): traced into
// higher-order calls with subgraphs, printed, verified, saved, run by the backend, equal to eager.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>
#include <typex/export/decompositions.hpp>
#include <typex/export/dot.hpp>
#include <typex/export/joint.hpp>
#include <typex/passes/partition.hpp>
#include <typex/export/unflatten.hpp>
#include <typex/nn.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <atomic>
#include <cmath>
#include <thread>
#include <filesystem>
#include <tuple>

using namespace typex;

namespace cf_test {
using batch = sym<"batch", 1, 64>;

// Picks one of two sub-networks from the input's mean.
struct picker {
  nn::Linear<8, 4> big;
  nn::Linear<8, 4> small;
  template <class X>
  auto operator()(const X& x) const {
    return cond(
        gt(mean(x), 0.0), [&](const auto& v) { return relu(big(v)); }, [&](const auto& v) { return neg(small(v)); }, x);
  }
};

}  // namespace cf_test
BOOST_HANA_ADAPT_STRUCT(cf_test::picker, big, small);

namespace cf_test {
template <class T>
void check_close(const any_tensor& got, const T& want, double tol = 1e-5) {
  const auto extents = want.extents();
  const std::vector<index_t> we(extents.begin(), extents.end());
  REQUIRE(got.scalar_type() == T::scalar_type);
  REQUIRE(got.extents().size() == we.size());
  for (std::size_t d = 0; d < we.size(); ++d) REQUIRE(got.extents()[d] == we[d]);
  const float* g = got.data<float>();
  for (index_t i = 0; i < want.numel(); ++i) REQUIRE(std::abs(g[i] - want.data()[i]) <= tol);
}
}  // namespace cf_test

TEST_CASE("control flow: cond picks a sub-network from the input's mean, exported, printed, run for both branches") {
  using namespace cf_test;
  picker m;
  init_module(m, 3);
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(m, spec);
  typex_test::check_golden("export_cond.txt", ep.to_string());
  ir::verify(ep.graph());
}

TEST_CASE("control flow: cond runs the branch the data picks, equal to eager") {
  using namespace cf_test;
  picker m;
  init_module(m, 3);
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(m, spec);
  auto run = ep.exported_program::module();
  for (float sign : {1.0f, -1.0f}) {
    host_tensor<f32, shape<batch, fix<8>>> x(shape<batch, fix<8>>(batch(3), {}));
    for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = sign * (0.1f + 0.05f * static_cast<float>(i % 7));
    const auto want = m(x);
    const auto got = run({x.erase()});
    REQUIRE(got.size() == 1);
    check_close(got[0], want);
  }
}

namespace cf_test {
// Newton's iteration for sqrt(a), elementwise, until every step is below a tolerance (at most 50),
// counting its iterations in a buffer written inside the body.
struct newton {
  buffer<f32, fix<1>> iterations;
  template <class A>
  auto operator()(const A& a) const {
    const auto x0 = add(mul(a, 0.5), 0.5);
    const auto step0 = full_like(a, 1.0);
    auto [x, step] = while_loop(
        max_iterations{50}, [](const auto&, const auto& s) { return gt(amax(abs(s)), 1e-6); },
        [&](const auto& x, const auto&) {
          copy_(iterations, add(iterations, 1.0));
          const auto next = mul(add(x, div(a, x)), 0.5);
          return std::tuple(next, sub(next, x));
        },
        x0, step0);
    (void)step;
    return x;
  }
};

// A layer applied to each row of a batch with map, and a running sum with scan (a buffer counting
// the steps, written inside the body).
struct rows {
  nn::Linear<4, 3> fc;
  buffer<f32, fix<1>> steps;
  template <class X>
  auto operator()(const X& x) const {
    const auto ys = map([&](const auto& row) { return tanh(fc(row)); }, x);
    const auto zero = mul(select<0>(ys, 0), 0.0);
    auto [total, partial] = scan(
        [&](const auto& acc, const auto& y) {
          copy_(steps, add(steps, 1.0));
          const auto next = add(acc, y);
          return std::pair(next, mul(next, 2.0));
        },
        zero, ys);
    return std::tuple(total, partial);
  }
};
}  // namespace cf_test
BOOST_HANA_ADAPT_STRUCT(cf_test::newton, iterations);
BOOST_HANA_ADAPT_STRUCT(cf_test::rows, fc, steps);

TEST_CASE("control flow: while_loop runs a fixed-point iteration to a tolerance, as eager does") {
  using namespace cf_test;
  newton m;
  using n = sym<"n", 1, 100>;
  const auto ep = export_program(m, input<"a">(tensor_spec<f32, shape<n>>(shape<n>(n(4)))));
  CHECK(ep.to_string().find("torch.ops.higher_order.while_loop(while_loop_cond_graph_0, while_loop_body_graph_0") != std::string::npos);
  auto run = ep.exported_program::module();
  host_tensor<f32, shape<n>> a(shape<n>(n(5)));
  for (index_t i = 0; i < 5; ++i) a.data()[i] = 0.5f + 3.0f * static_cast<float>(i);
  newton eager;
  const auto want = eager(a);
  const float trips = eager.iterations.data()[0];
  CHECK(trips > 2.0f);
  CHECK(trips < 50.0f);
  const auto got = run({a.erase()});
  check_close(got[0], want, 1e-6);
  CHECK(run.state_dict().find("iterations")->data<float>()[0] == trips);  // (carried through the loop, written back once)
  CHECK(m.iterations.data()[0] == 0.0f);  // (exporting wrote nothing into the model)
  for (index_t i = 0; i < 5; ++i) CHECK(std::abs(got[0].data<float>()[i] - std::sqrt(a.data()[i])) < 1e-5);
}

TEST_CASE("control flow: map over rows and scan with a buffer written in the body, equal to eager, saved and loaded") {
  using namespace cf_test;
  rows m;
  init_module(m, 11);
  using r = sym<"r", 1, 32>;
  const auto spec = input<"x">(tensor_spec<f32, shape<r, fix<4>>>(shape<r, fix<4>>(r(3), {})));
  const auto ep = export_program(m, spec);
  const std::string text = ep.to_string();
  CHECK(text.find("torch.ops.higher_order.map_impl(body_graph_0") != std::string::npos);
  CHECK(text.find("torch.ops.higher_order.scan(scan_combine_graph_0") != std::string::npos);
  CHECK(text.find("BUFFER_MUTATION target='steps'") != std::string::npos);
  CHECK(text.find("lifted_tensor") == std::string::npos);  // (tracing the body twice lifts nothing)
  host_tensor<f32, shape<r, fix<4>>> x(shape<r, fix<4>>(r(5), {}));
  for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = 0.1f * static_cast<float>(i % 9) - 0.3f;
  rows eager = m;
  eager.steps = decltype(eager.steps)(eager.steps.shape());
  const auto [want_total, want_partial] = eager(x);
  CHECK(eager.steps.data()[0] == 5.0f);  // (eagerly: one write per step)
  auto run = ep.exported_program::module();
  const auto got = run({x.erase()});
  REQUIRE(got.size() == 2);
  check_close(got[0], want_total);
  check_close(got[1], want_partial);
  CHECK(run.state_dict().find("steps")->data<float>()[0] == 5.0f);  // (the program wrote its copy once per step)
  run({x.erase()});
  CHECK(run.state_dict().find("steps")->data<float>()[0] == 10.0f);

  // saved and loaded: the same program, the same results
  const auto path = std::filesystem::temp_directory_path() / "typex_control_flow_test.typex";
  save(ep, path);
  const exported_program loaded = load(path);
  std::filesystem::remove(path);
  CHECK(loaded.to_string() == ep.to_string());
  auto again = loaded.module();
  const auto got2 = again({x.erase()});
  check_close(got2[0], want_total);
  check_close(got2[1], want_partial);
}

TEST_CASE("control flow: subgraphs kept through run_decompositions (lowered too), pictured, unflattened") {
  using namespace cf_test;
  picker m;
  init_module(m, 3);
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(m, spec);
  const exported_program core = run_decompositions(ep);
  CHECK(core.dialect() == ir::core_dialect);
  const std::string text = core.to_string();
  CHECK(text.find("class true_graph_0(torch.nn.Module)") != std::string::npos);
  CHECK(text.find("aten.linear.default") == std::string::npos);  // (lowered inside the branches too)
  const std::string dot = to_dot(ep);
  CHECK(dot.find("subgraph cluster_true_graph_0") != std::string::npos);
  CHECK(dot.find("lhead=\"cluster_false_graph_0\"") != std::string::npos);
  auto flat = ep.exported_program::module();
  auto lowered = core.module();
  auto tree = unflatten(ep);
  for (float sign : {1.0f, -1.0f}) {
    host_tensor<f32, shape<batch, fix<8>>> x(shape<batch, fix<8>>(batch(4), {}));
    for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = sign * (0.2f + 0.03f * static_cast<float>(i % 5));
    const auto want = m(x);
    check_close(flat({x.erase()})[0], want);
    check_close(lowered({x.erase()})[0], want, 1e-5);
    check_close(tree({x.erase()})[0], want);
  }
}

// ---- derivatives ------------------------------------------------------------------------------
namespace cf_test {
struct cond_loss {
  nn::Linear<4, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto y = cond(
        gt(mean(x), 0.0), [&](const auto& v) { return tanh(fc(v)); }, [&](const auto& v) { return mul(sigmoid(fc(v)), 2.0); }, x);
    return sum(mul(y, y));
  }
};
struct map_loss {
  nn::Linear<4, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    return sum(map([&](const auto& row) { return tanh(fc(row)); }, x));
  }
};
struct scan_loss {
  nn::Linear<4, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto h0 = mul(select<0>(x, 0), 0.25);
    auto [h, ys] = scan(
        [&](const auto& hp, const auto& xt) {
          const auto hn = tanh(add(fc(xt), mul(hp, 0.5)));
          return std::pair(hn, mul(hn, hn));
        },
        h0, x);
    return add(sum(h), sum(ys));
  }
};
struct while_loss {
  nn::Linear<4, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto i0 = mul(sum(x), 0.0);
    auto [h, i] = while_loop(
        max_iterations{6}, [](const auto&, const auto& it) { return lt(it, 3.0); },
        [&](const auto& hp, const auto& it) { return std::tuple(tanh(fc(hp)), add(it, 1.0)); }, x, i0);
    (void)i;
    return sum(mul(h, h));
  }
};
struct unbounded {
  template <class X>
  auto operator()(const X& x) const {
    auto [h, i] = while_loop([](const auto&, const auto& it) { return lt(it, 3.0); },
                             [](const auto& hp, const auto& it) { return std::tuple(tanh(hp), add(it, 1.0)); }, x, mul(sum(x), 0.0));
    (void)i;
    return sum(h);
  }
};
}  // namespace cf_test
BOOST_HANA_ADAPT_STRUCT(cf_test::cond_loss, fc);
BOOST_HANA_ADAPT_STRUCT(cf_test::unbounded);
BOOST_HANA_ADAPT_STRUCT(cf_test::map_loss, fc);
BOOST_HANA_ADAPT_STRUCT(cf_test::scan_loss, fc);
BOOST_HANA_ADAPT_STRUCT(cf_test::while_loss, fc);

namespace cf_test {
// The joint program's gradients (of x and of fc.weight) against central differences of the flat
// program's loss, in double steps of the f32 program.
template <class S>
void check_fd(const exported_program& ep, const any_tensor& x0) {
  const exported_program joint = make_joint(ep, {.input_gradients = {"x"}});
  const auto out = program_module<eigen_backend>(joint)({x0});
  const joint_outputs r = read_joint_outputs(joint, out);
  auto flat = ep.module();
  const auto loss_at = [&](const any_tensor& x) { return static_cast<double>(flat({x})[0].data<float>()[0]); };
  const any_tensor* dx = r.input_gradients.find("x");
  REQUIRE(dx != nullptr);
  const double eps = 1e-2;
  for (index_t i = 0; i < static_cast<index_t>(x0.numel()); ++i) {
    any_tensor xp = x0.clone(), xm = x0.clone();
    xp.data<float>()[i] += static_cast<float>(eps);
    xm.data<float>()[i] -= static_cast<float>(eps);
    const double fd = (loss_at(xp) - loss_at(xm)) / (2 * eps);
    INFO("x[" << i << "]");
    CHECK(std::abs(fd - dx->data<float>()[i]) <= 2e-3 + 2e-3 * std::abs(fd));
  }
  const any_tensor* dw = r.gradients.find("fc.weight");
  REQUIRE(dw != nullptr);
  const any_tensor w0 = *ep.state_dict().find("fc.weight");
  for (index_t i = 0; i < static_cast<index_t>(w0.numel()); i += 3) {
    named_tensors sp, sm;
    any_tensor wp = w0.clone(), wm = w0.clone();
    wp.data<float>()[i] += static_cast<float>(eps);
    wm.data<float>()[i] -= static_cast<float>(eps);
    sp.insert("fc.weight", wp);
    sm.insert("fc.weight", wm);
    sp.insert("fc.bias", *ep.state_dict().find("fc.bias"));
    sm.insert("fc.bias", *ep.state_dict().find("fc.bias"));
    auto fp = ep.module();
    auto fm = ep.module();
    fp.load_state_dict(sp);
    fm.load_state_dict(sm);
    const double fd = (static_cast<double>(fp({x0})[0].data<float>()[0]) - static_cast<double>(fm({x0})[0].data<float>()[0])) / (2 * eps);
    INFO("fc.weight[" << i << "]");
    CHECK(std::abs(fd - dw->data<float>()[i]) <= 2e-3 + 2e-3 * std::abs(fd));
  }
  (void)sizeof(S);
}
inline any_tensor ramp(std::vector<index_t> extents, float sign) {
  any_tensor t(dtype::f32, std::move(extents));
  for (index_t i = 0; i < static_cast<index_t>(t.numel()); ++i) t.data<float>()[i] = sign * (0.3f + 0.11f * static_cast<float>(i % 7)) - 0.1f * static_cast<float>(i % 3);
  return t;
}
}  // namespace cf_test

TEST_CASE("control flow: gradients through cond (both branches), map, scan and a bounded while_loop against finite differences") {
  using namespace cf_test;
  SUBCASE("cond") {
    cond_loss m;
    init_module(m, 21);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape_c<4>>()));
    CHECK(make_joint(ep).to_string().find("torch.ops.higher_order.cond(gt, true_graph_0_backward") != std::string::npos);
    check_fd<cond_loss>(ep, ramp({4}, 1.0f));   // (the true branch)
    check_fd<cond_loss>(ep, ramp({4}, -1.0f));  // (the false branch)
  }
  SUBCASE("map") {
    map_loss m;
    init_module(m, 22);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape_c<3, 4>>()));
    check_fd<map_loss>(ep, ramp({3, 4}, 1.0f));
  }
  SUBCASE("scan") {
    scan_loss m;
    init_module(m, 23);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape_c<5, 4>>()));
    CHECK(make_joint(ep).to_string().find("torch.ops.higher_order.scan(scan_combine_graph_0_backward") != std::string::npos);
    check_fd<scan_loss>(ep, ramp({5, 4}, 1.0f));
  }
  SUBCASE("bounded while_loop") {
    while_loss m;
    init_module(m, 24);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape_c<4>>()));
    check_fd<while_loss>(ep, ramp({4}, 1.0f));
  }
}

TEST_CASE("control flow: a while_loop without a declared bound is not differentiable, and says how to declare one") {
  const auto ep = export_program(cf_test::unbounded{}, input<"x">(tensor_spec<f32, shape_c<4>>()));
  CHECK_THROWS_WITH_AS(make_joint(ep, {.input_gradients = {"x"}}), doctest::Contains("typex::max_iterations{N}"), unsupported_error);
}

namespace cf_test {
struct halver {
  template <class X>
  auto operator()(const X& x) const {
    return while_loop(
        max_iterations{3}, [](const auto& h) { return gt(amax(abs(h)), 1.0); }, [](const auto& h) { return mul(h, 0.5); }, x);
  }
};
// map and scan whose every kernel is planned (no eager kernel in any part)
struct quiet {
  nn::Linear<4, 3> fc;
  template <class X, class H>
  auto operator()(const X& x, const H& h0) const {
    const auto ys = map([&](const auto& row) { return tanh(fc(row)); }, x);
    auto [h, hs] = scan([&](const auto& acc, const auto& y) { return std::pair(add(mul(acc, 0.5), y), mul(acc, y)); }, h0, ys);
    return std::tuple(h, hs);
  }
};
}  // namespace cf_test
BOOST_HANA_ADAPT_STRUCT(cf_test::halver);
BOOST_HANA_ADAPT_STRUCT(cf_test::quiet, fc);

TEST_CASE("control flow: a while_loop past its declared bound is a state_error, eagerly and in the program, and the inputs are left alone") {
  using namespace cf_test;
  using n = sym<"n", 1, 100>;
  const auto ep = export_program(halver{}, input<"x">(tensor_spec<f32, shape<n>>(shape<n>(n(2)))));
  auto run = ep.exported_program::module();
  host_tensor<f32, shape<n>> small(shape<n>(n(2))), big(shape<n>(n(2)));
  small.fill(6.0f);  // 6 -> 3 -> 1.5 -> 0.75: three halvings
  big.fill(12.0f);   // four needed
  CHECK(halver{}(small).data()[0] == 0.75f);
  CHECK(run({small.erase()})[0].data<float>()[0] == 0.75f);
  CHECK(small.data()[0] == 6.0f);  // (the loop's buffers are its own: the input is never written)
  CHECK_THROWS_WITH_AS(halver{}(big), doctest::Contains("max_iterations = 3"), state_error);
  CHECK_THROWS_WITH_AS(run({big.erase()}), doctest::Contains("ran past its declared bound, max_iterations = 3"), state_error);
  CHECK(run({small.erase()})[0].data<float>()[0] == 0.75f);  // (and the module still runs)
}

TEST_CASE("control flow: one program called from several threads at once, each branch, equal to eager") {
  using namespace cf_test;
  picker m;
  init_module(m, 5);
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto run = export_program(m, spec).exported_program::module();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        host_tensor<f32, shape<batch, fix<8>>> x(shape<batch, fix<8>>(batch(1 + (t + k) % 3), {}));
        const float sign = (t + k) % 2 == 0 ? 1.0f : -1.0f;
        for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = sign * (0.1f + 0.07f * static_cast<float>((i + t) % 5));
        const auto want = m(x);
        const auto got = run({x.erase()});
        for (index_t i = 0; i < want.numel(); ++i)
          if (std::abs(got[0].data<float>()[i] - want.data()[i]) > 1e-5f) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("control flow: every subgraph planned once, nothing allocated per call or per iteration") {
  using namespace cf_test;
  quiet m;
  init_module(m, 11);
  using r = sym<"r", 1, 32>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<r, fix<4>>>(shape<r, fix<4>>(r(3), {}))),
                                 input<"h0">(tensor_spec<f32, shape_c<3>>()));
  const auto run = ep.exported_program::module();
  any_tensor x(dtype::f32, {7, 4}), h0(dtype::f32, {3});
  for (index_t i = 0; i < 28; ++i) x.data<float>()[i] = 0.05f * static_cast<float>(i % 11) - 0.2f;
  for (index_t i = 0; i < 3; ++i) h0.data<float>()[i] = 0.1f * static_cast<float>(i);
  const std::vector<any_tensor> inputs{x, h0};
  std::vector<any_tensor> out;
  run.run(inputs, out);
  run.run(inputs, out);
  REQUIRE(run.report().allocating_ops.empty());  // (every kernel of every part is planned)
  const long before = typex_test::allocation_count();
  run.run(inputs, out);  // (7 map iterations and 7 scan steps)
  CHECK(typex_test::allocation_count() - before == 0);
  const auto want = m(host_tensor<f32, shape<r, fix<4>>>::bind(x), host_tensor<f32, shape_c<3>>::bind(h0));
  check_close(out[0], std::get<0>(want));
  check_close(out[1], std::get<1>(want));
}

namespace cf_test {
// a cond inside a submodule, called twice
struct gated_block {
  nn::Linear<8, 8> fc;
  template <class X>
  auto operator()(const X& x) const {
    const module_scope scope(*this, x);
    return scope.returns(cond(gt(sum(x), 0.0), [&](const auto& v) { return tanh(fc(v)); }, [](const auto& v) { return mul(v, 0.5); }, x));
  }
};
struct gated_net {
  gated_block a;
  gated_block b;
  template <class X>
  auto operator()(const X& x) const {
    return b(neg(a(x)));
  }
};
}  // namespace cf_test
BOOST_HANA_ADAPT_STRUCT(cf_test::gated_block, fc);
BOOST_HANA_ADAPT_STRUCT(cf_test::gated_net, a, b);

TEST_CASE("control flow: a cond inside submodules, unflattened, each submodule called alone equal to eager") {
  using namespace cf_test;
  gated_net m;
  init_module(m, 17);
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(m, spec);
  auto tree = unflatten(ep);
  for (float sign : {1.0f, -1.0f}) {
    host_tensor<f32, shape<batch, fix<8>>> x(shape<batch, fix<8>>(batch(3), {}));
    for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = sign * (0.1f + 0.02f * static_cast<float>(i % 9));
    check_close(tree({x.erase()})[0], m(x));
    check_close(tree.submodule("a")({x.erase()})[0], m.a(x));
    check_close(tree.submodule("b")({x.erase()})[0], m.b(x));
  }
  // re-exported: the same program up to names, which runs the same
  const exported_program again = tree.reexport();
  CHECK(again.to_string().find("torch.ops.higher_order.cond") != std::string::npos);
  host_tensor<f32, shape<batch, fix<8>>> x(shape<batch, fix<8>>(batch(2), {}));
  x.fill(0.3f);
  check_close(again.module()({x.erase()})[0], m(x));
}

TEST_CASE("control flow: partitioning a joint program with control flow is refused by name, the whole joint program trains") {
  using namespace cf_test;
  scan_loss m;
  init_module(m, 23);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape_c<5, 4>>()));
  const exported_program joint = make_joint(ep);
  CHECK_THROWS_WITH_AS(passes::partition_joint(joint.graph(), 1), doctest::Contains("run the joint program whole"), unsupported_error);
}

namespace cf_test {
// a while_loop on an outer value inside a branch: it runs only when the branch does
struct nested_loop {
  template <class X>
  auto operator()(const X& x) const {
    const auto y = mul(x, 3.0);
    return cond(
        gt(sum(x), 0.0),
        [&](const auto& v) {
          // (on y, an outer value: still the branch's, bounded by 4 halvings of |y| <= 16 * 3)
          return add(v, while_loop(max_iterations{4}, [](const auto& h) { return gt(amax(abs(h)), 1.0); },
                                   [](const auto& h) { return mul(h, 0.5); }, y));
        },
        [](const auto& v) { return neg(v); }, x);
  }
};
// subgraphs named alike in a loop's condition and body, differentiated (the bounded while's
// backward brings both into one graph)
struct twin_conds {
  nn::Linear<4, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto i0 = mul(sum(x), 0.0);
    auto [h, i] = while_loop(
        max_iterations{5},
        [](const auto& hp, const auto& it) {
          return lt(cond(gt(sum(hp), 100.0), [](const auto& a) { return mul(a, 2.0); }, [](const auto& a) { return a; }, it), 3.0);
        },
        [&](const auto& hp, const auto& it) {
          const auto hn = cond(gt(sum(hp), 0.0), [&](const auto& a) { return tanh(fc(a)); }, [&](const auto& a) { return sigmoid(fc(a)); }, hp);
          return std::tuple(hn, add(it, 1.0));
        },
        x, i0);
    (void)i;
    return sum(mul(h, h));
  }
};
}  // namespace cf_test
BOOST_HANA_ADAPT_STRUCT(cf_test::nested_loop);
BOOST_HANA_ADAPT_STRUCT(cf_test::twin_conds, fc);

TEST_CASE("control flow: a loop on outer values inside a branch runs only with the branch, as eager") {
  using namespace cf_test;
  const auto ep = export_program(nested_loop{}, input<"x">(tensor_spec<f32, shape_c<4>>()));
  const std::string text = ep.to_string();
  CHECK(text.find("class true_graph_0") != std::string::npos);
  CHECK(text.find("while_loop_body_graph_0") > text.find("class true_graph_0"));  // (the loop is the branch's)
  auto run = ep.exported_program::module();
  any_tensor pos(dtype::f32, {4}), neg_x(dtype::f32, {4});
  for (index_t i = 0; i < 4; ++i) {
    pos.data<float>()[i] = 1.0f + static_cast<float>(i);
    neg_x.data<float>()[i] = -100.0f;  // (the loop on y would run past its bound: it must not run at all)
  }
  const auto want_pos = nested_loop{}(host_tensor<f32, shape_c<4>>::bind(pos));
  check_close(run({pos})[0], want_pos);
  const auto want_neg = nested_loop{}(host_tensor<f32, shape_c<4>>::bind(neg_x));
  check_close(run({neg_x})[0], want_neg);
}

TEST_CASE("control flow: a kept output is never written by the next call") {
  using namespace cf_test;
  picker m;
  init_module(m, 3);
  const auto run = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {}))))
                       .exported_program::module();
  any_tensor a(dtype::f32, {2, 8}), b(dtype::f32, {2, 8});
  for (index_t i = 0; i < 16; ++i) {
    a.data<float>()[i] = 0.5f;
    b.data<float>()[i] = -0.5f;
  }
  std::vector<any_tensor> out;
  run.run(std::vector<any_tensor>{a}, out);
  const any_tensor kept = out[0];
  const any_tensor first = kept.clone();
  run.run(std::vector<any_tensor>{b}, out);
  for (index_t i = 0; i < 8; ++i) CHECK(kept.data<float>()[i] == first.data<float>()[i]);
  CHECK(out[0].data<float>()[0] != first.data<float>()[0]);
}

TEST_CASE("control flow: gradients through a bounded while_loop whose condition and body each hold a cond") {
  using namespace cf_test;
  twin_conds m;
  init_module(m, 31);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape_c<4>>()));
  check_fd<twin_conds>(ep, ramp({4}, 1.0f));
  check_fd<twin_conds>(ep, ramp({4}, -1.0f));
}
