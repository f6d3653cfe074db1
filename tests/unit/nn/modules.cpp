// torch.nn modules ported models need: Conv2d without bias, Conv1d, ConvTranspose2d, GroupNorm,
// InstanceNorm2d, RMSNorm, TransformerEncoder. Each checked eagerly and exported against a direct
// loop over its definition (PyTorch's own numbers are the model zoo's: tests/unit/models/), with
// torch's state-dict names.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <cmath>
#include <vector>

using namespace typex;
using namespace typex::literals;

namespace {
using batch = sym<"batch", 1, 64>;

template <class T>
T rnd(std::initializer_list<index_t> e, std::uint64_t seed) {
  return typex_test::random_tensor<T>(e, seed);
}

template <class M>
void randomize(M& m, std::uint64_t seed) {
  for_each_module_tensor(m, [&](const std::string& fqn, tensor_role, bool, auto& t) {
    using T = std::remove_cvref_t<decltype(t)>;
    if constexpr (is_floating_point(T::scalar_type)) {
      init::generator g(seed, fqn);
      init::uniform_(t, -1.0, 1.0, g);
    }
  });
}

std::vector<std::string> keys(const named_tensors& sd) {
  std::vector<std::string> out;
  for (const auto& [k, v] : sd) out.push_back(k);
  return out;
}

double max_abs(const any_tensor& a, const std::vector<double>& b) {
  REQUIRE(static_cast<std::size_t>(a.numel()) == b.size());
  double d = 0;
  for (index_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(a.data<float>()[i] - b[static_cast<std::size_t>(i)]));
  return d;
}
}  // namespace

TEST_CASE("nn::Conv2d with bias = false: the weight alone, in the state dict and the program") {
  nn::Conv2d<3, 4, 3, conv2d_options{.stride = {2, 2}, .padding = {1, 1}, .bias = false}> conv;
  init_module(conv, 3);
  CHECK(keys(state_dict(conv)) == std::vector<std::string>{"weight"});
  const auto x = rnd<tensor<f32, batch, fix<3>, fix<8>, fix<8>>>({2, 3, 8, 8}, 1);
  const auto y = conv(x);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(y)>, host_tensor<f32, shape<batch, fix<4>, fix<4>, fix<4>>>>);
  const auto ref = conv2d<conv2d_options{.stride = {2, 2}, .padding = {1, 1}}>(x, conv.weight);
  CHECK(max_abs(y.erase(), std::vector<double>(ref.data(), ref.data() + ref.numel())) == 0.0);
  const auto ep = export_program(conv, input<"x">(x.spec()));
  CHECK(ep.to_string().find("aten.conv2d.default(x, p_weight, None, [2, 2], [1, 1]") != std::string::npos);
  const auto x3 = rnd<tensor<f32, batch, fix<3>, fix<8>, fix<8>>>({3, 3, 8, 8}, 2);
  CHECK(max_abs(ep.module()(x3).erase(), [&] { const auto r = conv(x3); return std::vector<double>(r.data(), r.data() + r.numel()); }()) == 0.0);
}

TEST_CASE("nn::Conv1d: torch's weight [out, in/groups, k], stride, padding, dilation, groups, with and without bias") {
  constexpr conv1d_options opt{.stride = 2, .padding = 3, .dilation = 2, .groups = 2};
  nn::Conv1d<4, 6, 3, opt> conv;
  randomize(conv, 5);
  CHECK(keys(state_dict(conv)) == std::vector<std::string>{"weight", "bias"});
  CHECK(conv.weight.shape().to_string() == "[6, 2, 3]");
  const auto x = rnd<tensor<f32, batch, fix<4>, fix<11>>>({2, 4, 11}, 4);
  const auto y = conv(x);  // L_out = (11 + 6 - 2 * 2 - 1) / 2 + 1 = 7
  REQUIRE(y.erase().extents() == std::vector<index_t>{2, 6, 7});
  std::vector<double> ref;
  for (index_t n = 0; n < 2; ++n)
    for (index_t o = 0; o < 6; ++o)
      for (index_t l = 0; l < 7; ++l) {
        double acc = conv.bias(o);
        const index_t g = o / 3;
        for (index_t c = 0; c < 2; ++c)
          for (index_t k = 0; k < 3; ++k) {
            const index_t at = l * 2 - 3 + k * 2;
            if (at >= 0 && at < 11) acc += double(conv.weight(o, c, k)) * x(n, g * 2 + c, at);
          }
        ref.push_back(acc);
      }
  CHECK(max_abs(y.erase(), ref) < 1e-5);
  const auto ep = export_program(conv, input<"x">(x.spec()));
  CHECK(max_abs(ep.module()(x).erase(), ref) < 1e-5);
  nn::Conv1d<4, 6, 3, conv1d_options{.bias = false}> plain;
  CHECK(keys(state_dict(plain)) == std::vector<std::string>{"weight"});
}

namespace {
// torch's conv_transpose2d by its definition: each input pixel scatters the kernel times its value.
template <index_t I, index_t O, index_t K, class X, class W>
std::vector<double> transposed_reference(const X& x, const W& w, const float* bias, index_t n, index_t h, index_t wd, index_t s,
                                         index_t p, index_t op) {
  const index_t oh = (h - 1) * s - 2 * p + K + op, ow = (wd - 1) * s - 2 * p + K + op;
  std::vector<double> y(static_cast<std::size_t>(n * O * oh * ow), 0.0);
  for (index_t b = 0; b < n; ++b)
    for (index_t o = 0; o < O; ++o)
      for (index_t i = 0; i < oh; ++i)
        for (index_t j = 0; j < ow; ++j) y[static_cast<std::size_t>(((b * O + o) * oh + i) * ow + j)] = bias ? bias[o] : 0.0;
  for (index_t b = 0; b < n; ++b)
    for (index_t c = 0; c < I; ++c)
      for (index_t i = 0; i < h; ++i)
        for (index_t j = 0; j < wd; ++j)
          for (index_t o = 0; o < O; ++o)
            for (index_t ki = 0; ki < K; ++ki)
              for (index_t kj = 0; kj < K; ++kj) {
                const index_t yi = i * s - p + ki, yj = j * s - p + kj;
                if (yi < 0 || yj < 0 || yi >= oh || yj >= ow) continue;
                y[static_cast<std::size_t>(((b * O + o) * oh + yi) * ow + yj)] += double(x(b, c, i, j)) * w(c, o, ki, kj);
              }
  return y;
}
}  // namespace

TEST_CASE("nn::ConvTranspose2d: the kernel tiling the output (UNet's up-convolution) and the general form") {
  {  // stride == kernel: one matmul and a pixel shuffle
    nn::ConvTranspose2d<3, 2, 2, conv_transpose2d_options{.stride = 2}> up;
    randomize(up, 7);
    CHECK(keys(state_dict(up)) == std::vector<std::string>{"weight", "bias"});
    CHECK(up.weight.shape().to_string() == "[3, 2, 2, 2]");
    const auto x = rnd<tensor<f32, batch, fix<3>, fix<4>, fix<5>>>({2, 3, 4, 5}, 8);
    const auto y = up(x);
    REQUIRE(y.erase().extents() == std::vector<index_t>{2, 2, 8, 10});
    const auto ref = transposed_reference<3, 2, 2>(x, up.weight, up.bias.data(), 2, 4, 5, 2, 0, 0);
    CHECK(max_abs(y.erase(), ref) < 1e-5);
    const auto ep = export_program(up, input<"x">(x.spec()));
    CHECK(max_abs(ep.module()(x).erase(), ref) < 1e-5);
  }
  {  // stride 2, padding 1, output_padding 1, kernel 3, no bias: spread, pad, convolve with the flipped kernel
    nn::ConvTranspose2d<2, 3, 3, conv_transpose2d_options{.stride = 2, .padding = 1, .output_padding = 1, .bias = false}> up;
    randomize(up, 9);
    CHECK(keys(state_dict(up)) == std::vector<std::string>{"weight"});
    const auto x = rnd<tensor<f32, fix<1>, fix<2>, fix<3>, fix<4>>>({1, 2, 3, 4}, 10);
    const auto y = up(x);
    REQUIRE(y.erase().extents() == std::vector<index_t>{1, 3, 6, 8});
    const auto ref = transposed_reference<2, 3, 3>(x, up.weight, nullptr, 1, 3, 4, 2, 1, 1);
    CHECK(max_abs(y.erase(), ref) < 1e-5);
    const auto ep = export_program(up, input<"x">(x.spec()));
    CHECK(max_abs(ep.module()(x).erase(), ref) < 1e-5);
  }
}

TEST_CASE("nn::GroupNorm, InstanceNorm2d and RMSNorm against their definitions") {
  const auto x = rnd<tensor<f32, batch, fix<4>, fix<3>, fix<2>>>({2, 4, 3, 2}, 11);
  const auto norm_ref = [&](index_t groups, const float* w, const float* b) {
    std::vector<double> y(48);
    const index_t per = 4 / groups;
    for (index_t n = 0; n < 2; ++n)
      for (index_t g = 0; g < groups; ++g) {
        double mean = 0, var = 0;
        for (index_t c = g * per; c < (g + 1) * per; ++c)
          for (index_t i = 0; i < 6; ++i) mean += x.data()[(n * 4 + c) * 6 + i];
        mean /= double(per * 6);
        for (index_t c = g * per; c < (g + 1) * per; ++c)
          for (index_t i = 0; i < 6; ++i) var += std::pow(x.data()[(n * 4 + c) * 6 + i] - mean, 2);
        var /= double(per * 6);
        for (index_t c = g * per; c < (g + 1) * per; ++c)
          for (index_t i = 0; i < 6; ++i) {
            const double v = (x.data()[(n * 4 + c) * 6 + i] - mean) / std::sqrt(var + 1e-5);
            y[static_cast<std::size_t>((n * 4 + c) * 6 + i)] = w ? v * w[c] + b[c] : v;
          }
      }
    return y;
  };
  nn::GroupNorm<2, 4> gn;
  randomize(gn, 12);
  CHECK(keys(state_dict(gn)) == std::vector<std::string>{"weight", "bias"});
  CHECK(max_abs(gn(x).erase(), norm_ref(2, gn.weight.data(), gn.bias.data())) < 1e-5);
  CHECK(max_abs(export_program(gn, input<"x">(x.spec())).module()(x).erase(), norm_ref(2, gn.weight.data(), gn.bias.data())) < 1e-5);
  nn::InstanceNorm2d<4> in;
  CHECK(state_dict(in).size() == 0);
  CHECK(max_abs(in(x).erase(), norm_ref(4, nullptr, nullptr)) < 1e-5);
  nn::InstanceNorm2d<4, true> affine;
  randomize(affine, 13);
  CHECK(max_abs(affine(x).erase(), norm_ref(4, affine.weight.data(), affine.bias.data())) < 1e-5);

  nn::RMSNorm<6> rms;
  randomize(rms, 14);
  const auto t = rnd<tensor<f32, batch, fix<6>>>({3, 6}, 15);
  for (const std::optional<double> eps : {std::optional<double>{}, std::optional<double>{1e-2}}) {
    rms.eps = eps;
    std::vector<double> ref;
    for (index_t r = 0; r < 3; ++r) {
      double ms = 0;
      for (index_t i = 0; i < 6; ++i) ms += double(t(r, i)) * t(r, i);
      ms /= 6;
      for (index_t i = 0; i < 6; ++i) ref.push_back(t(r, i) / std::sqrt(ms + eps.value_or(1.1920928955078125e-07)) * rms.weight(i));
    }
    CHECK(max_abs(rms(t).erase(), ref) < 1e-5);
    CHECK(max_abs(export_program(rms, input<"x">(t.spec())).module()(t).erase(), ref) < 1e-5);
  }
}

TEST_CASE("nn::TransformerEncoder: layers.0 ... with their own parameters, then the norm, as torch's") {
  using layer = nn::TransformerEncoderLayer<8, 2, 16, nn::activation::gelu, true, true>;
  nn::TransformerEncoder<layer, 2, nn::LayerNorm<8>> enc;
  nn::TransformerEncoder<layer, 3> bare;
  init_module(enc, 1);
  init_module(bare, 1);
  const auto k = keys(state_dict(enc));
  CHECK(k.front() == "layers.0.self_attn.in_proj_weight");
  CHECK(std::find(k.begin(), k.end(), "layers.1.norm2.bias") != k.end());
  CHECK(k.back() == "norm.bias");
  CHECK(keys(state_dict(bare)).back() == "layers.2.norm2.bias");
  const auto x = rnd<tensor<f32, batch, fix<5>, fix<8>>>({2, 5, 8}, 2);
  // = the layers called by hand, then the norm
  const auto by_hand = enc.norm(enc.layers[1](enc.layers[0](x)));
  const auto y = enc(x);
  CHECK(max_abs(y.erase(), std::vector<double>(by_hand.data(), by_hand.data() + by_hand.numel())) == 0.0);
  const auto ep = export_program(enc, input<"x">(x.spec()));
  CHECK(max_abs(ep.module()(x).erase(), std::vector<double>(by_hand.data(), by_hand.data() + by_hand.numel())) < 1e-5);
  // the module call graph has each layer's call
  std::vector<std::string> calls;
  for (const auto& e : ep.module_call_graph()) calls.push_back(e.fqn);
  CHECK(std::find(calls.begin(), calls.end(), "layers.1") != calls.end());
  CHECK(std::find(calls.begin(), calls.end(), "norm") != calls.end());
}
