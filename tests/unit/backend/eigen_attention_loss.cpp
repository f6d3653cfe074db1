// scaled_dot_product_attention, dropout, group_norm, training-mode batch norm and the losses:
// typed results, eager values against their definitions (finite sums written out here), the
// running-statistic update, dropout's statistics and seeding, and a causal-attention program equal
// to eager (tolerance 0).
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cmath>
#include <limits>

using namespace typex;

TEST_CASE("scaled_dot_product_attention: the definition, causal masks, bool and additive masks") {
  const auto q = typex_test::random_tensor<tensor<f32, fix<2>, fix<3>, fix<4>>>({2, 3, 4}, 1);
  const auto k = typex_test::random_tensor<tensor<f32, fix<2>, fix<5>, fix<4>>>({2, 5, 4}, 2);
  const auto v = typex_test::random_tensor<tensor<f32, fix<2>, fix<5>, fix<6>>>({2, 5, 6}, 3);
  const auto o = scaled_dot_product_attention(q, k, v);
  static_assert(std::is_same_v<decltype(o), const tensor<f32, fix<2>, fix<3>, fix<6>>>);
  // written out: softmax(q k^T / sqrt(4)) v, with an optional mask
  auto reference = [&](int b, int i, int c, auto allowed, auto bias) {
    double s[5], mx = -INFINITY, sum = 0, out = 0;
    for (int j = 0; j < 5; ++j) {
      s[j] = 0;
      for (int e = 0; e < 4; ++e) s[j] += double(q(b, i, e)) * double(k(b, j, e));
      s[j] = allowed(i, j) ? s[j] / 2.0 + bias(i, j) : -INFINITY;
      mx = std::max(mx, s[j]);
    }
    for (double& x : s) sum += (x = std::exp(x - mx));
    for (int j = 0; j < 5; ++j) out += s[j] / sum * double(v(b, j, c));
    return out;
  };
  auto all = [](int, int) { return true; };
  auto zero = [](int, int) { return 0.0; };
  CHECK(o(1, 2, 5) == doctest::Approx(reference(1, 2, 5, all, zero)).epsilon(1e-5));

  const auto oc = scaled_dot_product_attention(q, k, v, nullptr, {.is_causal = true});
  auto causal = [](int i, int j) { return j <= i; };
  CHECK(oc(0, 0, 1) == doctest::Approx(reference(0, 0, 1, causal, zero)).epsilon(1e-5));
  CHECK(oc(1, 2, 3) == doctest::Approx(reference(1, 2, 3, causal, zero)).epsilon(1e-5));

  tensor<b8, fix<3>, fix<5>> keep;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) keep(i, j) = (i + j) % 3 != 0;
  const auto om = scaled_dot_product_attention(q, k, v, keep);
  CHECK(om(1, 1, 0) == doctest::Approx(reference(1, 1, 0, [&](int i, int j) { return bool(keep(i, j)); }, zero)).epsilon(1e-5));

  const auto add = typex_test::random_tensor<tensor<f32, fix<3>, fix<5>>>({3, 5}, 9);
  const auto oa = scaled_dot_product_attention(q, k, v, add);
  CHECK(oa(0, 2, 4) == doctest::Approx(reference(0, 2, 4, all, [&](int i, int j) { return double(add(i, j)); })).epsilon(1e-5));

  tensor<b8, fix<3>, fix<5>> none;  // every key masked out: NaN, as PyTorch's math path
  CHECK(std::isnan(scaled_dot_product_attention(q, k, v, none)(0, 0, 0)));
  CHECK_THROWS_AS((void)scaled_dot_product_attention(q, k, v, keep, {.is_causal = true}), argument_error);
}

TEST_CASE("dropout: identity in eval, zero or scaled in training, seeded") {
  tensor<f32, fix<100>, fix<100>> x;
  x.fill(1.0f);
  const auto e = dropout(x, 0.3, false);
  for (index_t i = 0; i < e.numel(); ++i) REQUIRE(e.data()[i] == 1.0f);
  eigen::manual_seed(7);
  const auto t = dropout(x, 0.3, true);
  index_t zeros = 0;
  for (index_t i = 0; i < t.numel(); ++i) {
    const float v = t.data()[i];
    REQUIRE((v == 0.0f || v == doctest::Approx(1.0 / 0.7)));
    zeros += v == 0.0f;
  }
  CHECK(zeros > 2700);  // 3000 expected; the bounds are 6 standard deviations (46) wide
  CHECK(zeros < 3300);
  eigen::manual_seed(7);
  const auto again = dropout(x, 0.3, true);
  for (index_t i = 0; i < t.numel(); ++i) REQUIRE(again.data()[i] == t.data()[i]);
  CHECK_THROWS_AS((void)dropout(x, 1.5, true), argument_error);
}

TEST_CASE("group_norm and training-mode batch norm (with the running-statistic update)") {
  const auto x = typex_test::random_tensor<tensor<f32, fix<2>, fix<4>, fix<3>>>({2, 4, 3}, 5);
  tensor<f32, fix<4>> w, b;
  for (int c = 0; c < 4; ++c) {
    w(c) = 1.0f + 0.5f * float(c);
    b(c) = -0.25f * float(c);
  }
  const auto g = group_norm<2>(x, w, b);
  // sample 1, group 1 = channels 2 and 3
  double mean = 0, var = 0;
  for (int c = 2; c < 4; ++c)
    for (int j = 0; j < 3; ++j) mean += x(1, c, j) / 6.0;
  for (int c = 2; c < 4; ++c)
    for (int j = 0; j < 3; ++j) var += (x(1, c, j) - mean) * (x(1, c, j) - mean) / 6.0;
  CHECK(g(1, 3, 2) == doctest::Approx((x(1, 3, 2) - mean) / std::sqrt(var + 1e-5) * w(3) + b(3)).epsilon(1e-5));

  nn::BatchNorm2d<3> bn;
  init::generator gen(1);
  bn.reset_parameters(gen);
  bn.training = true;
  const auto img = typex_test::random_tensor<tensor<f32, fix<4>, fix<3>, fix<2>, fix<2>>>({4, 3, 2, 2}, 6);
  const auto y = bn(img);
  double m1 = 0, v1 = 0;
  for (int n = 0; n < 4; ++n)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) m1 += img(n, 1, i, j) / 16.0;
  for (int n = 0; n < 4; ++n)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) v1 += (img(n, 1, i, j) - m1) * (img(n, 1, i, j) - m1);
  CHECK(y(2, 1, 1, 0) == doctest::Approx((img(2, 1, 1, 0) - m1) / std::sqrt(v1 / 16.0 + 1e-5)).epsilon(1e-5));
  CHECK(bn.running_mean(1) == doctest::Approx(0.1 * m1).epsilon(1e-5));               // 0.9 * 0 + 0.1 * mean
  CHECK(bn.running_var(1) == doctest::Approx(0.9 + 0.1 * v1 / 15.0).epsilon(1e-5));   // unbiased
  CHECK(bn.num_batches_tracked.data()[0] == 1);
  bn.training = false;
  const auto z = bn(img);  // eval: the running statistics
  CHECK(z(2, 1, 1, 0) == doctest::Approx((img(2, 1, 1, 0) - bn.running_mean(1)) / std::sqrt(bn.running_var(1) + 1e-5)).epsilon(1e-5));
}

TEST_CASE("losses: cross_entropy (ignore_index, label smoothing, weights, probabilities), nll_loss, mse_loss") {
  const auto logits = typex_test::random_tensor<tensor<f32, fix<3>, fix<4>>>({3, 4}, 8);
  const auto target = tensor<i64, fix<3>>::from_values({}, {2, 0, -100});
  auto logp = [&](int n, int c) {
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < 4; ++j) mx = std::max(mx, double(logits(n, j)));
    for (int j = 0; j < 4; ++j) s += std::exp(logits(n, j) - mx);
    return logits(n, c) - mx - std::log(s);
  };
  const auto l = cross_entropy(logits, target);
  static_assert(std::is_same_v<decltype(l), const tensor<f32>>);
  CHECK(l.data()[0] == doctest::Approx(-(logp(0, 2) + logp(1, 0)) / 2).epsilon(1e-5));  // the ignored row is out of the mean
  const auto each = cross_entropy<loss_reduction::none>(logits, target, {.label_smoothing = 0.2});
  static_assert(std::is_same_v<decltype(each)::shape_type, shape_c<3>>);
  double smooth = 0;
  for (int c = 0; c < 4; ++c) smooth -= logp(1, c);
  CHECK(each(1) == doctest::Approx(-0.8 * logp(1, 0) + 0.2 / 4 * smooth).epsilon(1e-5));
  CHECK(each(2) == 0.0f);
  const auto w = tensor<f32, fix<4>>::from_values({}, {1.0f, 2.0f, 0.5f, 1.0f});
  const auto lw = cross_entropy(logits, target, w);
  CHECK(lw.data()[0] == doctest::Approx(-(0.5 * logp(0, 2) + 1.0 * logp(1, 0)) / 1.5).epsilon(1e-5));  // w[2], w[0]
  const auto ls = nll_loss<loss_reduction::sum>(log_softmax<1>(logits), target);
  CHECK(ls.data()[0] == doctest::Approx(-(logp(0, 2) + logp(1, 0))).epsilon(1e-5));
  const auto bad = tensor<i64, fix<3>>::from_values({}, {2, 4, 0});
  CHECK_THROWS_WITH_AS((void)cross_entropy(logits, bad), "aten.cross_entropy_loss.default: target class 4 is out of range for 4 classes",
                       argument_error);

  const auto y = typex_test::random_tensor<tensor<f32, fix<3>, fix<4>>>({3, 4}, 10);
  double se = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) se += (logits(i, j) - y(i, j)) * (logits(i, j) - y(i, j));
  CHECK(mse_loss(logits, y).data()[0] == doctest::Approx(se / 12).epsilon(1e-5));
  CHECK(mse_loss<loss_reduction::sum>(logits, y).data()[0] == doctest::Approx(se).epsilon(1e-5));
}

namespace attention_models {
using seq = sym<"seq", 1, 64>;
// Causal self-attention over a symbolic sequence: the program runs every length in range.
struct causal_attention {
  nn::Linear<8, 24> qkv;
  template <class X>
  auto operator()(const X& x) const {
    const auto [q, k, v] = chunk<-1, 3>(qkv(x));
    return scaled_dot_product_attention(q, k, v, nullptr, {.is_causal = true});
  }
};
}  // namespace attention_models
BOOST_HANA_ADAPT_STRUCT(attention_models::causal_attention, qkv);

TEST_CASE("a causal-attention program equals eager for every sequence length it is run with") {
  using seq = attention_models::seq;
  attention_models::causal_attention m;
  init_module(m, 3);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, seq, fix<8>>>(shape<fix<2>, seq, fix<8>>({}, seq(5), {}))));
  CHECK_MESSAGE(ep.to_string().find("aten.scaled_dot_product_attention.default(slice, slice_1, slice_2, None, 0.0, True, None)") !=
                    std::string::npos,
                ep.to_string());
  auto run = program_module<eigen_backend>(ep);
  for (index_t s : {5, 1, 9}) {
    const auto x = typex_test::random_tensor<tensor<f32, fix<2>, seq, fix<8>>>({2, s, 8}, std::uint64_t(s));
    const auto eager = m(x).erase();
    const auto out = run({x.erase()});
    REQUIRE(out[0].extents() == eager.extents());
    for (index_t i = 0; i < eager.numel(); ++i) CHECK(out[0].template data<float>()[i] == eager.template data<float>()[i]);
  }
}
