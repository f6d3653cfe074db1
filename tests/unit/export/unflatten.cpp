// Tests for typex/export/unflatten.hpp: the module tree back from a flat program, each call's own
// nodes planned by the backend, submodules called alone and swapped.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>
#include <typex/export/decompositions.hpp>
#include <typex/export/unflatten.hpp>
#include <typex/nn.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <filesystem>
#include <thread>

using namespace typex;

namespace unflat_test {
using batch = sym<"batch", 1, 64>;
using seq = sym<"seq", 1, 128>;
using enc = nn::TransformerEncoderLayer<32, 4, 64, nn::activation::gelu, false, true>;

// A transformer stack: an array of encoder layers and a final norm.
struct enc_stack {
  std::array<enc, 3> layers;
  nn::LayerNorm<32> norm;
  template <class X>
  auto operator()(const X& x) const {
    return norm(layers[2](layers[1](layers[0](x))));
  }
};

// A layer that scales by a constant argument and counts its calls in a buffer.
struct scaler {
  parameter<f32, fix<8>, fix<8>> weight;
  buffer<f32, fix<1>> calls;
  template <class X>
  auto operator()(const X& x, double k) const {
    const module_scope scope(*this, x, k);
    copy_(calls, add(calls, 1.0));
    return scope.returns(mul(linear(x, weight), k));
  }
};

// fc called twice (with different constants), a root buffer read by each layer, tied weights.
struct net {
  scaler fc;
  std::array<scaler, 2> blocks;
  buffer<f32, fix<8>> shift;
  template <class X>
  auto operator()(const X& x) const {
    const auto a = fc(x, 2.0);
    const auto b = fc(a, 3.0);
    const auto c = blocks[0](add(b, shift), 0.5);
    return blocks[1](add(c, shift), 1.5);
  }
};

// The hand-written equivalent of scaler for a swap (k fixed at export).
struct scaler_again {
  parameter<f32, fix<8>, fix<8>> weight;
  buffer<f32, fix<1>> calls;
  double k = 1.0;
  template <class X>
  auto operator()(const X& x) const {
    copy_(calls, add(calls, 1.0));
    return mul(linear(x, weight), k);
  }
};
}  // namespace unflat_test
BOOST_HANA_ADAPT_STRUCT(unflat_test::enc_stack, layers, norm);
BOOST_HANA_ADAPT_STRUCT(unflat_test::scaler, weight, calls);
BOOST_HANA_ADAPT_STRUCT(unflat_test::net, fc, blocks, shift);
BOOST_HANA_ADAPT_STRUCT(unflat_test::scaler_again, weight, calls);

namespace {
using namespace unflat_test;

double diff(const any_tensor& a, const any_tensor& b) { return typex_test::worst_abs_error(a, b); }

enc_stack made_stack() {
  enc_stack m;
  init_module(m, 5);
  eval(m);
  return m;
}

net made_net() {
  net n;
  init_module(n, 9);
  for (int i = 0; i < 8; ++i) n.shift.data()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  return n;
}

auto stack_program(const enc_stack& m) {
  const tensor_spec<f32, shape<batch, seq, fix<32>>> x(shape<batch, seq, fix<32>>(batch(2), seq(5), {}));
  return export_program(m, input<"x">(x));
}
}  // namespace

TEST_CASE("unflatten: a transformer enc_stack, each layer alone matching the flat program's intermediate values") {
  const enc_stack m = made_stack();
  const auto ep = stack_program(m);
  auto tree = unflatten(ep);
  CHECK(tree.children() == std::vector<std::string>{"layers", "norm"});
  CHECK(tree.submodule("layers").children() == std::vector<std::string>{"layers.0", "layers.1", "layers.2"});
  CHECK(tree.submodule("layers.1").calls() == std::vector<std::string>{"layers.1"});
  CHECK(tree.submodule("layers.1.self_attn").type().find("MultiheadAttention") != std::string::npos);

  const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<32>>>({3, 7, 32}, 4);
  const std::vector<any_tensor> flat = ep.exported_program::module()({x.erase()});
  const std::vector<any_tensor> whole = tree({x.erase()});
  REQUIRE(whole.size() == 1);
  CHECK(diff(whole[0], flat[0]) < 1e-5);

  // the intermediate values, layer by layer, as the eager model computes them
  const auto h0 = m.layers[0](x);
  const auto h1 = m.layers[1](h0);
  const auto h2 = m.layers[2](h1);
  CHECK(diff(tree.submodule("layers.0")({x.erase()})[0], h0.erase()) < 1e-5);
  CHECK(diff(tree.submodule("layers.1")({h0.erase()})[0], h1.erase()) < 1e-5);
  CHECK(diff(tree.submodule("layers").submodule("2")({h1.erase()})[0], h2.erase()) < 1e-5);
  CHECK(diff(tree.submodule("norm")({h2.erase()})[0], flat[0]) < 1e-5);
  // a nested submodule alone: layer 1's attention (its three inputs are the same value)
  const auto attn = tree.submodule("layers.1.self_attn");
  CHECK(attn.signature().in_spec.to_string() == "TreeSpec(tuple, None, [*, *, *])");
  const auto a = attn({h0.erase(), h0.erase(), h0.erase()});
  REQUIRE(a.size() == 1);
  const auto want = m.layers[1].self_attn.forward(h0, h0, h0, nullptr, nullptr);
  CHECK(diff(a[0], want.erase()) < 1e-5);

  // the pieces are programs planned by the backend, not nodes interpreted one by one
  const auto& plan = tree.plan();
  std::size_t segments = 0;
  for (const auto& c : plan.calls)
    for (const auto& s : c.steps) segments += s.is_call() ? 0 : 1;
  CHECK(segments > 0);
  CHECK(plan.calls.front().steps.size() == 4);  // layers.0, layers.1, layers.2, norm: no root nodes of its own
}

TEST_CASE("unflatten: called twice with other constants, a root buffer in every layer, a buffer written inside") {
  const net n = made_net();
  const auto x = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(n, x);
  auto tree = unflatten(ep);
  CHECK(tree.submodule("fc").calls() == std::vector<std::string>{"fc", "fc@1"});
  CHECK(tree.submodule("blocks").children() == std::vector<std::string>{"blocks.0", "blocks.1"});

  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({4, 8}, 6);
  auto flat = ep.exported_program::module();
  const auto want = flat({in.erase()});
  const auto got = tree({in.erase()});
  CHECK(diff(got[0], want[0]) < 1e-5);
  // the buffers written inside the submodules, given back to their owners: fc twice, each block once
  const named_tensors sd = tree.state_dict();
  CHECK(sd.at("fc.calls").data<float>()[0] == 2.0f);
  CHECK(sd.at("blocks.0.calls").data<float>()[0] == 1.0f);
  CHECK(sd.at("blocks.1.calls").data<float>()[0] == 1.0f);
  CHECK(diff(sd.at("fc.calls"), flat.buffer("fc.calls")) == 0.0);

  // each call of fc keeps its own constant: fc@1 scales by 3, fc by 2
  const auto x2 = in.erase();
  const auto first = tree.submodule("fc")({x2});
  const auto second = tree.submodule("fc").call("fc@1", {x2});
  const auto eager2 = mul(linear(in, n.fc.weight), 2.0);
  const auto eager3 = mul(linear(in, n.fc.weight), 3.0);
  CHECK(diff(first[0], eager2.erase()) < 1e-5);
  CHECK(diff(second[0], eager3.erase()) < 1e-5);
  CHECK(tree.submodule("fc").state_dict().at("calls").data<float>()[0] == 4.0f);  // (alone, it still counts)
  // a copy owns its buffers
  auto copy = tree;
  copy({in.erase()});
  CHECK(copy.state_dict().at("fc.calls").data<float>()[0] == 6.0f);
  CHECK(tree.state_dict().at("fc.calls").data<float>()[0] == 4.0f);
}

TEST_CASE("unflatten: after run_decompositions, and from a loaded archive") {
  const enc_stack m = made_stack();
  const auto ep = stack_program(m);
  const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<32>>>({2, 3, 32}, 8);
  const auto want = ep.exported_program::module()({x.erase()});

  const exported_program core = run_decompositions(ep);
  auto from_core = unflatten(core);
  CHECK(diff(from_core({x.erase()})[0], want[0]) < 1e-4);
  CHECK(diff(from_core.submodule("layers.0")({x.erase()})[0], m.layers[0](x).erase()) < 1e-4);

  const auto path = std::filesystem::temp_directory_path() / "typex_unflatten_test.pt2";
  save(ep, path);
  const exported_program back = load(path);
  auto loaded = unflatten(back);
  CHECK(diff(loaded({x.erase()})[0], want[0]) < 1e-5);
  CHECK(loaded.modules() == unflatten(ep).modules());
  std::filesystem::remove(path);
}

TEST_CASE("unflatten: a preserved submodule swapped for a hand-written equivalent") {
  const net n = made_net();
  const auto x = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(export_options{.preserve_module_call_signature = {"blocks.1"}}, n, x);
  auto tree = unflatten(ep);
  CHECK(tree.submodule("blocks.1").preserved());
  CHECK_FALSE(tree.submodule("blocks.0").preserved());
  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({3, 8}, 2);
  const auto want = tree({in.erase()});

  unflat_test::scaler_again again;
  again.weight = n.blocks[1].weight;
  again.calls = n.blocks[1].calls;
  again.k = 1.5;
  const auto replacement = export_program(again, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {}))));
  auto fresh = unflatten(ep);
  // the call takes (x, 1.5), the replacement (x): another input tree, refused without an adapter
  CHECK_THROWS_AS(fresh.submodule("blocks.1").swap(replacement), signature_error);
  CHECK_FALSE(fresh.submodule("blocks.1").swapped());
  // a flat-args adapter: the replacement's one input is the call's tensor input 0
  fresh.submodule("blocks.1").swap(replacement, flat_args_adapter{{0}});
  CHECK(fresh.submodule("blocks.1").swapped());
  CHECK(diff(fresh({in.erase()})[0], want[0]) < 1e-5);
  CHECK(fresh.state_dict().contains("blocks.1.weight"));

  // the wrong signatures: a replacement of another shape, a module whose signature was not kept
  const auto other = export_program(again, tensor_spec<f32, shape_c<3, 8>>());
  CHECK_THROWS_AS(fresh.submodule("blocks.1").swap(other, flat_args_adapter{{0}}), signature_error);
  CHECK_THROWS_AS(fresh.submodule("blocks.0").swap(replacement, flat_args_adapter{{0}}), signature_error);
  try {
    fresh.submodule("blocks.0").swap(replacement, flat_args_adapter{{0}});
    FAIL_CHECK("no error");
  } catch (const signature_error& e) {
    const std::string what = e.what();
    CHECK(what.find("blocks.0") != std::string::npos);
    CHECK(what.find("preserve_module_call_signature") != std::string::npos);
    CHECK(what.find("f32[batch, 8]") != std::string::npos);
  }
  // a copy made before the swap runs its own nodes; restore gives them back
  auto adapted = unflatten(ep);
  adapted.submodule("blocks.1").swap(replacement, flat_args_adapter{{0}});
  CHECK(diff(adapted({in.erase()})[0], want[0]) < 1e-5);
  CHECK_THROWS_AS(adapted.submodule("blocks.1").swap(replacement, flat_args_adapter{{3}}), signature_error);
  // restore: the program's own nodes again
  adapted.submodule("blocks.1").restore();
  CHECK_FALSE(adapted.submodule("blocks.1").swapped());
}

TEST_CASE("unflatten: bad input names the path") {
  const enc_stack m = made_stack();
  const auto ep = stack_program(m);
  auto tree = unflatten(ep);
  CHECK_THROWS_AS(tree.submodule("layers.7"), argument_error);
  try {
    (void)tree.submodule("layers.7");
    FAIL_CHECK("no error");
  } catch (const argument_error& e) {
    CHECK(std::string(e.what()).find("'layers.7'") != std::string::npos);
  }
  const auto wrong = typex_test::random_tensor<tensor<f32, fix<2>, fix<3>, fix<16>>>({2, 3, 16}, 1);
  CHECK_THROWS_AS(tree.submodule("layers.0")({wrong.erase()}), shape_error);
  CHECK_THROWS_AS(tree.submodule("layers.0")({}), argument_error);
  CHECK_THROWS_AS(tree.submodule("layers.0").call("layers.0@1", {}), argument_error);
  // an FQN preserved that no call has: an export error naming it
  const auto x = input<"x">(tensor_spec<f32, shape<batch, seq, fix<32>>>(shape<batch, seq, fix<32>>(batch(2), seq(5), {})));
  CHECK_THROWS_AS(export_program(export_options{.preserve_module_call_signature = {"layers.9"}}, m, x), argument_error);
}

TEST_CASE("unflatten: calls from several threads, the buffers serialized") {
  const net n = made_net();
  const auto x = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(n, x);
  auto tree = unflatten(ep);
  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({2, 8}, 6);
  const auto want = ep.exported_program::module()({in.erase()});
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i)
        if (diff(tree({in.erase()})[0], want[0]) > 1e-5) ++bad;
    });
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  CHECK(tree.state_dict().at("fc.calls").data<float>()[0] == 40.0f);
}
