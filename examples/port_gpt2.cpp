// A PyTorch model ported to C++, end to end. examples/port_gpt2.py defines a GPT-2-style causal LM
// in PyTorch (nanoGPT's module names, a head tied to the token embedding, learned positions, a
// causal-mask buffer), trains it to continue counting and writes its state dict with
// tools/safetensors_writer.py. This program declares the same model in C++ (member names = torch's
// attribute names = the state dict's keys), loads the weights strictly, checks PyTorch's logits,
// exports the model once with the batch and the sequence symbolic, generates greedily with the
// program (one program for every length), and saves and loads the program archive.
//   port_gpt2 [weights.safetensors]        (default: examples/data/gpt2_counting.safetensors)
#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>
#include <typex/tensor/safetensors.hpp>
#include <typex/typex.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#ifndef TYPEX_EXAMPLES_DATA_DIR
#define TYPEX_EXAMPLES_DATA_DIR "examples/data"
#endif

using namespace typex::literals;
namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 64>;
using seq = typex::sym<"seq", 1, 16>;  // the position table's 16 rows

struct gpt_attention {                                // class Attention(nn.Module)
  nn::Linear<32, 96> c_attn;                          //   self.c_attn = nn.Linear(D, 3 * D)
  nn::Linear<32, 32> c_proj;                          //   self.c_proj = nn.Linear(D, D)
  typex::buffer<typex::f32, typex::fix<1>, typex::fix<1>, typex::fix<16>, typex::fix<16>> bias;  // register_buffer("bias", tril)
  template <class X>
  auto operator()(const X& x) const {
    using namespace typex;
    const auto b = x.shape().template get<0>();
    const auto t = x.shape().template get<1>();
    const auto qkv = c_attn(x);
    const auto heads = [&](const auto& part) { return transpose<1, 2>(view(part, reshape_to(b, t, 4_c, 8_c))); };
    const auto q = heads(slice<2, 0, 32>(qkv));       // q, k, v = self.c_attn(x).split(C, dim=2)
    const auto k = heads(slice<2, 32, 64>(qkv));
    const auto v = heads(slice<2, 64, 96>(qkv));
    const auto w = div(matmul(q, transpose<-2, -1>(k)), std::sqrt(8.0));
    const auto causal = slice<3>(slice<2>(bias, 0_c, t), 0_c, t);                 // self.bias[:, :, :T, :T]
    const auto p = softmax<-1>(masked_fill(w, eq(causal, 0.0), -INFINITY));
    return c_proj(reshape(transpose<1, 2>(matmul(p, v)), reshape_to(b, t, 32_c)));
  }
};
struct gpt_mlp {                                      // class MLP(nn.Module)
  nn::Linear<32, 128> c_fc;
  nn::GELU act{.approximate = typex::gelu_approximation::tanh};  // nn.GELU(approximate="tanh")
  nn::Linear<128, 32> c_proj;
  template <class X>
  auto operator()(const X& x) const { return c_proj(act(c_fc(x))); }
};
struct block {                                        // class Block(nn.Module)
  nn::LayerNorm<32> ln_1;
  gpt_attention attn;
  nn::LayerNorm<32> ln_2;
  gpt_mlp mlp;
  template <class X>
  auto operator()(const X& x) const {                 // x = x + self.attn(self.ln_1(x)); x + self.mlp(self.ln_2(x))
    const auto h = typex::add(x, attn(ln_1(x)));
    return typex::add(h, mlp(ln_2(h)));
  }
};
struct gpt {
  nn::Embedding<32, 32> wte;
  nn::Embedding<16, 32> wpe;
  std::array<block, 2> h;                             // nn.ModuleList([Block() for _ in range(2)])
  nn::LayerNorm<32> ln_f;
  nn::Linear<32, 32, false> lm_head;
  gpt() { lm_head.weight = wte.weight; }              // self.lm_head.weight = self.wte.weight (tied)
  template <class I>
  auto operator()(const I& idx) const {
    using namespace typex;
    auto x = add(wte(idx), wpe(arange(idx.shape().template get<1>(), device_of(idx))));
    for (const block& b : h) x = b(x);
    return lm_head(ln_f(x));
  }
};
// (one line each: the state dict's names are these members' names, torch's attribute names)
BOOST_HANA_ADAPT_STRUCT(gpt_attention, c_attn, c_proj, bias);
BOOST_HANA_ADAPT_STRUCT(gpt_mlp, c_fc, act, c_proj);
BOOST_HANA_ADAPT_STRUCT(block, ln_1, attn, ln_2, mlp);
BOOST_HANA_ADAPT_STRUCT(gpt, wte, wpe, h, ln_f, lm_head);

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : TYPEX_EXAMPLES_DATA_DIR "/gpt2_counting.safetensors";
  typex::named_tensors weights, ref;
  for (const auto& [name, t] : typex::load_safetensors(path)) {  // (the reference's tensors are named ref.*)
    if (name.rfind("ref.", 0) == 0) ref.insert(name.substr(4), t);
    else weights.insert(name, t);
  }

  gpt model;
  typex::load_state_dict(model, weights);  // strict: every key of PyTorch's state dict, nothing else
  typex::eval(model);

  using tokens = typex::tensor<typex::i64, batch, seq>;
  const tokens prompt = tokens::bind(ref.at("prompt"), "ref.prompt");
  const auto logits = model(prompt);  // eager
  const typex::any_tensor& expected = ref.at("logits");
  double worst = 0;
  for (typex::index_t i = 0; i < expected.numel(); ++i)
    worst = std::max(worst, double(std::abs(logits.data()[i] - expected.data<float>()[i])));
  std::printf("eager logits vs PyTorch: max |difference| %.2g\n", worst);

  // one program for every batch and length in range
  const auto program = typex::export_program(model, typex::input<"idx">(prompt.spec()));
  auto run = program.module();
  std::vector<std::int64_t> ids(prompt.data(), prompt.data() + prompt.numel());
  while (ids.size() < 16) {
    tokens in({1, static_cast<typex::index_t>(ids.size())});
    std::copy(ids.begin(), ids.end(), in.data());
    const auto out = run(in);  // [1, T, 32]
    const float* last = out.data() + (ids.size() - 1) * 32;
    ids.push_back(std::max_element(last, last + 32) - last);
  }
  const typex::any_tensor& generated = ref.at("generated");
  const bool same = std::equal(ids.begin(), ids.end(), generated.data<std::int64_t>());
  std::printf("generated:");
  for (const std::int64_t t : ids) std::printf(" %lld", static_cast<long long>(t));
  std::printf("  (%s PyTorch's)\n", same ? "the same as" : "NOT");

  // the program, saved and loaded, gives the same logits bit for bit
  typex::save(program, "/tmp/typex_port_gpt2.typex");
  const auto again = typex::load<decltype(program)>("/tmp/typex_port_gpt2.typex").module()(prompt);
  const bool reloaded = std::equal(again.data(), again.data() + again.numel(), run(prompt).data());
  std::printf("archive round trip: %s\n", reloaded ? "bit for bit" : "DIFFERS");
  return worst < 1e-4 && same && reloaded ? 0 : 1;
}
