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

// A buffer of the root handed to every layer as an argument (pytorch issue 127643).
struct adder {
  parameter<f32, fix<8>> bias;
  template <class X, class P>
  auto operator()(const X& x, const P& pe) const {
    const module_scope scope(*this, x, pe);
    return scope.returns(add(add(x, pe), bias));
  }
};
struct pe_net {
  std::array<adder, 2> layers;
  buffer<f32, fix<8>> pe;
  template <class X>
  auto operator()(const X& x) const {
    return layers[1](layers[0](x, pe), pe);
  }
};

// Two affine layers; b swapped for a hand-written equivalent through the typed tree.
struct affine {
  parameter<f32, fix<8>, fix<8>> weight;
  template <class X>
  auto operator()(const X& x) const {
    const module_scope scope(*this, x);
    return scope.returns(linear(x, weight));
  }
};
struct affine_by_hand {
  parameter<f32, fix<8>, fix<8>> weight;
  template <class X>
  auto operator()(const X& x) const {
    return mul(linear(x, weight), 1.0);
  }
};
struct two {
  affine a;
  affine b;
  template <class X>
  auto operator()(const X& x) const {
    return b(relu(a(x)));
  }
};

// A buffer written in one layer, its new value handed to the next as an argument.
struct writer {
  buffer<f32, fix<8>> cache;
  template <class X>
  auto operator()(const X& x) const {
    const module_scope scope(*this, x);
    copy_(cache, add(cache, x));
    return scope.returns(mul(x, 2.0));
  }
};
struct reader {
  parameter<f32, fix<8>> scale;
  template <class X, class C>
  auto operator()(const X& x, const C& c) const {
    const module_scope scope(*this, x, c);
    return scope.returns(add(mul(x, scale), c));
  }
};
struct cache_net {
  writer w;
  reader r;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = w(x);
    return r(h, w.cache);
  }
};

// Tied weights, a Sequential, and a slice of an array of layers.
struct containers {
  affine a;
  affine b;  // (its weight tied to a's)
  nn::Sequential<affine, nn::ReLU, affine> seq;
  std::array<affine, 4> layers;
  template <class X>
  auto operator()(const X& x) const {
    auto h = seq(b(a(x)));
    return layers[2](layers[1](h));  // (layers 1 and 2 only: a slice)
  }
};
}  // namespace unflat_test
BOOST_HANA_ADAPT_STRUCT(unflat_test::containers, a, b, seq, layers);
BOOST_HANA_ADAPT_STRUCT(unflat_test::writer, cache);
BOOST_HANA_ADAPT_STRUCT(unflat_test::reader, scale);
BOOST_HANA_ADAPT_STRUCT(unflat_test::cache_net, w, r);
BOOST_HANA_ADAPT_STRUCT(unflat_test::affine, weight);
BOOST_HANA_ADAPT_STRUCT(unflat_test::affine_by_hand, weight);
BOOST_HANA_ADAPT_STRUCT(unflat_test::two, a, b);
BOOST_HANA_ADAPT_STRUCT(unflat_test::adder, bias);
BOOST_HANA_ADAPT_STRUCT(unflat_test::pe_net, layers, pe);
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

TEST_CASE("unflatten: a transformer stack, each layer alone matching the flat program's intermediate values") {
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
  // traced as self-attention (one value three times): other tensors there would be ignored
  CHECK_THROWS_AS(attn({h0.erase(), h1.erase(), h1.erase()}), signature_error);

  // an identity call (eval-mode dropout: no nodes) alone returns a copy of its input
  const auto d = tree.submodule("layers.1.dropout1")({h0.erase()});
  REQUIRE(d.size() == 1);
  CHECK(diff(d[0], h0.erase()) == 0.0);
  CHECK(d[0].raw_data() != h0.erase().raw_data());
  // the pieces are programs planned by the backend, not nodes interpreted one by one
  const auto& plan = tree.plan();
  std::size_t segments = 0;
  for (const auto& c : plan.calls)
    for (const auto& s : c.steps) segments += s.is_call() ? 0 : 1;
  CHECK(segments > 0);
  CHECK(plan.calls.front().steps.size() == 4);  // layers.0, layers.1, layers.2, norm: no root nodes of its own
  CHECK(plan.calls.front().whole.has_value());   // (and the whole call as one program, while nothing is swapped)

  // the same tree step by step: layer 1's second norm swapped for a program of a copy of it, so
  // the root and layer 1 run their steps (the other layers still whole)
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, seq, fix<32>>>(shape<batch, seq, fix<32>>(batch(2), seq(5), {})));
  auto stepwise = unflatten(export_program(export_options{.preserve_module_call_signature = {"layers.1.norm2"}}, m, spec));
  stepwise.submodule("layers.1.norm2").swap(export_program(m.layers[1].norm2, spec));
  CHECK(diff(stepwise({x.erase()})[0], flat[0]) < 1e-5);
  CHECK(diff(stepwise.submodule("layers.1")({h0.erase()})[0], h1.erase()) < 1e-5);
  stepwise.submodule("layers.1.norm2").restore();
  CHECK(diff(stepwise({x.erase()})[0], flat[0]) < 1e-5);
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

TEST_CASE("unflatten: a root buffer passed into every layer is the root's, handed explicitly") {
  pe_net n;
  init_module(n, 4);
  for (int i = 0; i < 8; ++i) n.pe.data()[i] = 0.5f * static_cast<float>(i);
  const auto x = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(n, x);
  auto tree = unflatten(ep);
  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({3, 8}, 5);
  CHECK(diff(tree({in.erase()})[0], ep.exported_program::module()({in.erase()})[0]) < 1e-6);
  // each layer's call takes (x, pe): alone, the caller hands pe
  const auto layer = tree.submodule("layers.1");
  CHECK(layer.signature().in_spec.to_string() == "TreeSpec(tuple, None, [*, *])");
  const auto h = n.layers[0](in, n.pe);
  CHECK(diff(layer({h.erase(), n.pe.erase()})[0], n.layers[1](h, n.pe).erase()) < 1e-6);
  CHECK(tree.state_dict().contains("pe"));
  // another tensor where the call reads the root's buffer: refused, not ignored
  const auto other_pe = typex_test::random_tensor<tensor<f32, fix<8>>>({8}, 9);
  CHECK_THROWS_AS(layer({h.erase(), other_pe.erase()}), signature_error);
  // a moved-from tree says so
  auto moved = std::move(tree);
  CHECK_THROWS_AS(tree({in.erase()}), state_error);
  CHECK(diff(moved({in.erase()})[0], ep.exported_program::module()({in.erase()})[0]) < 1e-6);
  CHECK_FALSE(layer.state_dict().contains("pe"));  // (the root's, not the layer's)
}

TEST_CASE("unflatten: re-export gives the program back, with a swap the replacement inlined") {
  const enc_stack m = made_stack();
  const auto ep = stack_program(m);
  const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<32>>>({2, 4, 32}, 3);
  const auto want = ep.exported_program::module()({x.erase()});
  const exported_program again = unflatten(ep).reexport();
  // the same graph up to names, the same signature, the same outputs
  CHECK(again.graph().size() == ep.graph().size());
  CHECK(again.signature().input_specs() == ep.signature().input_specs());
  CHECK(again.signature().output_specs().size() == ep.signature().output_specs().size());
  std::vector<std::string> targets_before, targets_after;
  for (const ir::node& n : ep.graph().nodes()) targets_before.push_back(std::string(n.target ? n.target.name() : ""));
  for (const ir::node& n : again.graph().nodes()) targets_after.push_back(std::string(n.target ? n.target.name() : ""));
  CHECK(targets_after == targets_before);
  std::vector<std::string> calls_before, calls_after;
  for (const auto& e : ep.module_call_graph()) calls_before.push_back(e.fqn);
  for (const auto& e : again.module_call_graph()) calls_after.push_back(e.fqn);
  CHECK(calls_after == calls_before);
  CHECK(diff(again.module()({x.erase()})[0], want[0]) < 1e-6);
  CHECK(unflatten(again).modules() == unflatten(ep).modules());  // (and it unflattens again)

  // with buffers written and a module swapped: the tree's state, the replacement's nodes
  const net n = made_net();
  const auto xs = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep2 = export_program(export_options{.preserve_module_call_signature = {"blocks.1"}}, n, xs);
  unflat_test::scaler_again hand;
  hand.weight = n.blocks[1].weight;
  hand.calls = n.blocks[1].calls;
  hand.k = 1.5;
  const auto replacement = export_program(hand, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {}))));
  auto tree = unflatten(ep2);
  tree.submodule("blocks.1").swap(replacement, flat_args_adapter{{0}});
  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({3, 8}, 2);
  (void)tree({in.erase()});  // (fc.calls is 2 now: the re-exported program starts from there)
  const exported_program swapped = tree.reexport();
  {
    const exported_program snapshot = tree.reexport();  // (its tensors are copies: later calls leave it alone)
    (void)tree({in.erase()});
    CHECK(snapshot.state_dict().at("fc.calls").data<float>()[0] == 2.0f);
    (void)swapped;
  }
  CHECK(swapped.state_dict().at("fc.calls").data<float>()[0] == 2.0f);
  CHECK(swapped.state_dict().contains("blocks.1.weight"));
  auto run = swapped.module();
  const auto got = run({in.erase()});
  CHECK(diff(got[0], tree({in.erase()})[0]) < 1e-5);
  CHECK(run.buffer("fc.calls").data<float>()[0] == 4.0f);
  CHECK(unflatten(swapped).modules().size() > 1);  // (the re-exported program unflattens again)
  // (the replacement's count, under its module's path: 1 from the tree's call, 1 from this one)
  CHECK(run.buffer("blocks.1.calls").data<float>()[0] == 2.0f);
}

TEST_CASE("unflatten: the typed tree, reached through the model's members") {
  const enc_stack m = made_stack();
  const auto ep = stack_program(m);
  const auto tree = unflatten(ep, m);
  const auto layer1 = tree.at(&enc_stack::layers)[1];
  CHECK(layer1.fqn() == "layers.1");
  CHECK(layer1.at(&enc::self_attn).fqn() == "layers.1.self_attn");
  CHECK(tree.at(&enc_stack::norm).fqn() == "norm");
  CHECK_THROWS_AS(tree.at(&enc_stack::layers)[3], argument_error);
  const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<32>>>({2, 5, 32}, 7);
  const auto h0 = m.layers[0](x);
  const auto y = layer1(h0);  // typed in, typed out: the type the layer returns eagerly
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(y)>, std::remove_cvref_t<decltype(m.layers[1](h0))>>);
  CHECK(diff(y.erase(), m.layers[1](h0).erase()) < 1e-5);

  // a module called with two constants: the call traced with the number given
  const net n = made_net();
  const auto xs = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto typed_net = unflatten(export_program(n, xs), n);
  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({4, 8}, 6);
  const auto fc = typed_net.at(&net::fc);
  CHECK(diff(fc(in, 2.0).erase(), mul(linear(in, n.fc.weight), 2.0).erase()) < 1e-5);
  CHECK(diff(fc(in, 3.0).erase(), mul(linear(in, n.fc.weight), 3.0).erase()) < 1e-5);
  CHECK_THROWS_AS(fc(in, 4.0), argument_error);
  CHECK(diff(typed_net.at(&net::blocks)[1](in, 1.5).erase(), mul(linear(in, n.blocks[1].weight), 1.5).erase()) < 1e-5);

  // a typed swap: checked at compile time (compile_fail/unflatten_swap_ko.cpp: another output type) and at run time
  two t;
  init_module(t, 12);
  const auto ex = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep2 = export_program(export_options{.preserve_module_call_signature = {"b"}}, t, ex);
  const auto t2 = unflatten(ep2, t);
  const auto before = t2(in);
  affine_by_hand hand;
  hand.weight = t.b.weight;
  t2.at(&two::b).swap(export_program(hand, ex));
  CHECK(t2.untyped().submodule("b").swapped());
  CHECK(diff(t2(in).erase(), before.erase()) < 1e-6);
}

TEST_CASE("unflatten: a buffer written in one layer and handed to the next") {
  cache_net n;
  init_module(n, 3);
  const auto x = input<"x">(tensor_spec<f32, shape_c<8>>());
  const auto ep = export_program(n, x);
  auto tree = unflatten(ep);
  auto flat = ep.exported_program::module();
  const auto in = typex_test::random_tensor<tensor<f32, fix<8>>>({8}, 4);
  for (int i = 0; i < 3; ++i) CHECK(diff(tree({in.erase()})[0], flat({in.erase()})[0]) < 1e-6);  // (the cache grows each call)
  CHECK(diff(tree.state_dict().at("w.cache"), flat.buffer("w.cache")) == 0.0);
  // the reader alone: its second input is the writer's buffer, the tree's tensor
  const auto cache = tree.state_dict().at("w.cache");
  const auto r = tree.submodule("r")({in.erase(), cache});
  const auto want = add(mul(in, n.r.scale), typex::host_tensor<f32, shape_c<8>>::bind(cache, "cache"));
  CHECK(diff(r[0], want.erase()) < 1e-6);
}

TEST_CASE("unflatten: tied weights, a Sequential, a slice of an array of layers") {
  containers m;
  init_module(m, 21);
  m.b.weight = m.a.weight;  // tied
  const auto x = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(m, x);
  auto tree = unflatten(ep);
  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({3, 8}, 1);
  CHECK(diff(tree({in.erase()})[0], ep.exported_program::module()({in.erase()})[0]) < 1e-6);
  // tied: b computes with a's weight, and its state dict names it as its own
  CHECK(diff(tree.submodule("b")({in.erase()})[0], m.b(in).erase()) < 1e-6);
  CHECK(diff(tree.submodule("b").state_dict().at("weight"), tree.submodule("a").state_dict().at("weight")) == 0.0);
  // the Sequential's children by number, alone
  CHECK(tree.submodule("seq").children() == std::vector<std::string>{"seq.0", "seq.1", "seq.2"});
  const auto h = m.b(m.a(in));
  CHECK(diff(tree.submodule("seq.2")({relu(m.seq.get<0>()(h)).erase()})[0], m.seq(h).erase()) < 1e-6);
  CHECK(diff(tree.submodule("seq")({h.erase()})[0], m.seq(h).erase()) < 1e-6);
  // the slice: layers 1 and 2 are modules of the tree, layers 0 and 3 were never called
  CHECK(tree.submodule("layers").children() == std::vector<std::string>{"layers.1", "layers.2"});
  CHECK_THROWS_AS(tree.submodule("layers.0"), argument_error);
  // typed: the Sequential's child through get<I>()
  const auto typed = unflatten(ep, m);
  CHECK(typed.at(&containers::seq).get<2>().fqn() == "seq.2");
  CHECK(diff(typed.at(&containers::layers)[1](h).erase(), m.layers[1](h).erase()) < 1e-6);
}

TEST_CASE("unflatten: load_state_dict gives the whole tree new weights, names and shapes checked") {
  const net n = made_net();
  const auto xs = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(n, xs);
  auto tree = unflatten(ep);
  net other = made_net();
  init_module(other, 77);
  const auto other_ep = export_program(other, xs);
  const auto in = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({2, 8}, 3);
  const named_tensors sd = other_ep.state_dict();
  (void)tree.load_state_dict(sd);
  // the tree computes as the other program, whole and in pieces
  auto want = other_ep.exported_program::module();
  CHECK(diff(tree({in.erase()})[0], want({in.erase()})[0]) < 1e-6);
  CHECK(diff(tree.submodule("blocks.0")({in.erase()})[0], mul(linear(in, other.blocks[0].weight), 0.5).erase()) < 1e-6);
  CHECK(tree.state_dict().at("fc.calls").data<float>()[0] == 2.0f);  // (the loaded buffer, then one call: fc twice)
  // a wrong shape or a missing name: an error, and nothing changes
  named_tensors bad;
  for (const auto& [fqn, t] : sd) bad.insert(fqn, fqn == "fc.weight" ? typex_test::random_tensor<tensor<f32, fix<8>, fix<4>>>({8, 4}, 2).erase() : t);
  CHECK_THROWS_AS(tree.load_state_dict(bad), shape_error);
  named_tensors missing;
  for (const auto& [fqn, t] : sd)
    if (fqn != "blocks.1.weight") missing.insert(fqn, t);
  CHECK_THROWS_AS(tree.load_state_dict(missing), argument_error);
  CHECK(diff(tree({in.erase()})[0], want({in.erase()})[0]) < 1e-6);
}
