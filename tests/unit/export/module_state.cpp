// Module state is traced, never frozen: an op whose only tensor operands are the module's own
// state (a parameter, a buffer, or a value computed from them) is a node of the program reading the
// lifted placeholders, not a constant computed at export. Each form a ported PyTorch model uses —
// a ViT's class token expanded to the batch, a position table sliced to the sequence, a causal-mask
// buffer sliced and turned into a boolean mask, a weight transposed or reshaped before use, a
// parameter used alone, a tied embedding read through a transpose, a step counter written from
// itself — is exported with a static and a symbolic batch, then new weights are loaded into the
// program's module and its result compared with the eager model holding the same weights; saved,
// loaded, and differentiated (a joint program's gradients against central differences).
#include "../support.hpp"
#include "round_trip.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>

#include <cmath>

using namespace typex;
using namespace typex::literals;

namespace state_models {
using batch = sym<"batch", 1, 64>;
using seq = sym<"seq", 1, 16>;

// ViT: torch.cat([cls_token.expand(B, -1, -1), x], dim=1), then a projection.
struct class_token {
  parameter<f32, fix<1>, fix<1>, fix<8>> cls;
  nn::Linear<8, 8> proj;
  template <class X>
  auto operator()(const X& x) const {  // x: [B, 4, 8]
    const auto b = x.shape().template get<0>();
    return proj(cat<1>(tensors(expand(cls, reshape_to(b, 1_c, 8_c)), x)));
  }
};

// GPT-2 / ViT: x + pos[:, :seq] (a learned table longer than any sequence).
struct position_table {
  parameter<f32, fix<1>, fix<16>, fix<8>> pos;
  template <class X>
  auto operator()(const X& x) const {  // x: [B, seq, 8]
    return relu(add(x, slice<1>(pos, 0_c, x.shape().template get<1>())));
  }
};

// A causal-mask buffer (lower-triangular ones) sliced to the sequence and made boolean, then used
// to mask the scores: bias[:seq, :seq] == 0 -> masked_fill(-1e4).
struct causal_mask {
  buffer<f32, fix<16>, fix<16>> tri;
  parameter<f32, fix<8>, fix<8>> wq;
  template <class X>
  auto operator()(const X& x) const {  // x: [B, seq, 8]
    const auto s = x.shape().template get<1>();
    const auto q = matmul(x, wq);
    const auto scores = matmul(q, transpose<1, 2>(x));
    const auto m = eq(slice<1>(slice<0>(tri, 0_c, s), 0_c, s), 0.0);
    return softmax<-1>(masked_fill(scores, m, -1e4));
  }
};

// x @ w.t() and x @ v.reshape(8, 6): a weight transposed, another reshaped (sharing its memory).
struct weight_views {
  parameter<f32, fix<6>, fix<8>> w;
  parameter<f32, fix<48>> v;
  template <class X>
  auto operator()(const X& x) const {  // x: [B, 8]
    return add(matmul(x, transpose<0, 1>(w)), matmul(x, reshape(v, reshape_to(8_c, 6_c))));
  }
};

// A parameter used alone: x * log_scale.exp() + shift * 2.
struct scale_alone {
  parameter<f32, fix<8>> log_scale;
  parameter<f32, fix<8>> shift;
  template <class X>
  auto operator()(const X& x) const {  // x: [B, 8]
    return add(mul(x, exp(log_scale)), mul(shift, 2.0));
  }
};

// GPT-2's tied head: logits = h @ wte.weight.t().
struct tied_head {
  nn::Embedding<12, 8> wte;
  nn::LayerNorm<8> ln;
  template <class I>
  auto operator()(const I& ids) const {  // ids: [B, seq] i64
    return matmul(ln(wte(ids)), transpose<0, 1>(wte.weight));
  }
};

// A step counter written from itself (steps.add_(1)) and a running total of a parameter's square.
struct self_written {
  buffer<i64> steps;
  buffer<f32, fix<8>> total;
  parameter<f32, fix<8>> w;
  template <class X>
  auto operator()(const X& x) const {
    add_(steps, 1);
    copy_(total, add(total, mul(w, w)));
    return mul(x, total);
  }
};

// Writes to values computed from state: an eager result written in place, a view of a buffer
// taken before the buffer is written, a tensor the forward makes and fills from a parameter.
struct written_results {
  parameter<f32, fix<4>> w;
  buffer<f32, fix<4>> buf;
  template <class X>
  auto operator()(const X& x) const {
    auto t = mul(w, 2.0);
    add_(t, 1.0);                                      // t = 2w + 1
    const auto v = reshape(buf, reshape_to(2_c, 2_c));  // a view of buf, before buf is written
    add_(buf, 1.0);                                    // the view sees it, as in PyTorch
    tensor<f32, fix<4>> acc({4});                      // made by the forward, filled from w
    copy_(acc, w);
    add_(acc, w);                                      // acc = 2w
    return mul(add(mul(x, t), reshape(v, reshape_to(4_c))), acc);
  }
};
// A slice of a table whose length cancels in the type: seq + (16 - seq) rows, 16 in the graph.
struct cancelling {
  parameter<f32, fix<16>> pos;
  template <class X>
  auto operator()(const X& x) const {  // x: [seq]
    return cat<0>(tensors(x, slice<0>(pos, x.shape().template get<0>(), 16_c)));
  }
};
// Dropout of a parameter: recorded, and exporting draws nothing from the thread's stream.
struct state_dropout {
  parameter<f32, fix<8>> w;
  template <class X>
  auto operator()(const X& x) const {
    return add(x, dropout(w, 0.5, true));
  }
};

// The loss a joint program differentiates: sum(model(x)).
template <class M>
struct loss_of {
  BOOST_HANA_DEFINE_STRUCT(loss_of, (M, m));
  template <class X>
  auto operator()(const X& x) const {
    return sum(m(x));
  }
};
}  // namespace state_models
BOOST_HANA_ADAPT_STRUCT(state_models::class_token, cls, proj);
BOOST_HANA_ADAPT_STRUCT(state_models::position_table, pos);
BOOST_HANA_ADAPT_STRUCT(state_models::causal_mask, tri, wq);
BOOST_HANA_ADAPT_STRUCT(state_models::weight_views, w, v);
BOOST_HANA_ADAPT_STRUCT(state_models::scale_alone, log_scale, shift);
BOOST_HANA_ADAPT_STRUCT(state_models::tied_head, wte, ln);
BOOST_HANA_ADAPT_STRUCT(state_models::self_written, steps, total, w);
BOOST_HANA_ADAPT_STRUCT(state_models::written_results, w, buf);
BOOST_HANA_ADAPT_STRUCT(state_models::cancelling, pos);
BOOST_HANA_ADAPT_STRUCT(state_models::state_dropout, w);

namespace {
using state_models::batch;
using state_models::seq;

// Every floating parameter and buffer of m uniform in [-1, 1) from `seed` (the causal mask's
// triangle kept: it is structure, not a weight).
template <class M>
void randomize(M& m, std::uint64_t seed) {
  for_each_module_tensor(m, [&](const std::string& fqn, tensor_role, bool, auto& t) {
    using T = std::remove_cvref_t<decltype(t)>;
    if constexpr (is_floating_point(T::scalar_type)) {
      if (fqn.ends_with("tri")) {
        for (index_t i = 0; i < 16; ++i)
          for (index_t j = 0; j < 16; ++j) t.data()[i * 16 + j] = j <= i ? 1.0f : 0.0f;
        return;
      }
      init::generator g(seed, fqn);
      init::uniform_(t, -1.0, 1.0, g);
    }
  });
}

double max_abs_diff(const any_tensor& a, const any_tensor& b) {
  REQUIRE(a.extents() == b.extents());
  double d = 0;
  for (index_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return d;
}

// No tensor of the model's state reaches the program as a constant: every input is a parameter,
// a buffer or a user input, and the program holds no constants.
void check_nothing_frozen(const exported_program& ep) {
  CHECK(ep.constants().size() == 0);
  for (const input_spec& s : ep.signature().input_specs()) CHECK_MESSAGE(s.kind != input_kind::constant_tensor, s.arg);
  CHECK(ep.to_string().find("lifted_tensor") == std::string::npos);
}

// Exports m for input x (spec `in`), then loads new weights into the program's module and into m:
// the program must follow them, on x and on `other` (another batch where the spec is symbolic).
template <class M, class Spec, class X, class Y>
void check_follows_weights(M& m, const Spec& in, const X& x, const Y& other) {
  randomize(m, 1);
  const auto ep = export_program(m, input<"x">(in));
  check_nothing_frozen(ep);
  auto mod = ep.module();
  CHECK(max_abs_diff(mod(x).erase(), m(x).erase()) < 1e-5);
  randomize(m, 2);  // new weights, in the eager model and (through the state dict) in the program's module
  mod.load_state_dict(state_dict(m));
  CHECK(max_abs_diff(mod(x).erase(), m(x).erase()) < 1e-5);
  CHECK(max_abs_diff(mod(other).erase(), m(other).erase()) < 1e-5);
  typex_test::check_round_trip(ep, {x.erase()});
}

template <class T>
T random_input(std::initializer_list<index_t> extents, std::uint64_t seed) {
  return typex_test::random_tensor<T>(extents, seed);
}

// d sum(model(x)) / d p for every parameter p, from the joint program, against central differences
// of the eager model (in f64 arithmetic on f32 values: h = 1e-2, the models are smooth there).
template <class M, class X>
void check_gradients(M& m, const X& x) {
  state_models::loss_of<M> l{m};
  const auto ep = export_program(l, input<"x">(x.spec()));
  check_nothing_frozen(ep);
  const exported_program joint = make_joint(ep);
  const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x.erase()}));
  int checked = 0;
  for_each_module_tensor(l, [&](const std::string& fqn, tensor_role role, bool, auto& t) {
    if (role != tensor_role::parameter) return;
    const any_tensor* g = r.gradients.find(fqn);
    REQUIRE_MESSAGE(g != nullptr, fqn);
    for (index_t i = 0; i < t.numel(); i += std::max<index_t>(1, t.numel() / 5)) {
      const float keep = t.data()[i];
      t.data()[i] = keep + 1e-2f;
      const double up = l(x).data()[0];
      t.data()[i] = keep - 1e-2f;
      const double down = l(x).data()[0];
      t.data()[i] = keep;
      const double fd = (up - down) / 2e-2;
      CHECK_MESSAGE(std::abs(g->data<float>()[i] - fd) <= 2e-2 * std::max(1.0, std::abs(fd)), fqn << "[" << i << "]");
      ++checked;
    }
  });
  CHECK(checked > 0);
}
}  // namespace

TEST_CASE("module state: a class token expanded to the batch is a node reading the parameter (static and symbolic batch)") {
  state_models::class_token m;
  using S = shape<fix<3>, fix<4>, fix<8>>;
  using D = shape<batch, fix<4>, fix<8>>;
  const auto xs = random_input<tensor<f32, fix<3>, fix<4>, fix<8>>>({3, 4, 8}, 7);
  check_follows_weights(m, tensor_spec<f32, S>(), xs, xs);
  const auto xd = random_input<tensor<f32, batch, fix<4>, fix<8>>>({3, 4, 8}, 7);
  const auto xd5 = random_input<tensor<f32, batch, fix<4>, fix<8>>>({5, 4, 8}, 8);
  check_follows_weights(m, tensor_spec<f32, D>(D(batch(3), {}, {})), xd, xd5);
  // the graph expands the parameter's placeholder to the symbolic batch
  randomize(m, 1);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, D>(D(batch(3), {}, {}))));
  const std::string printed = ep.to_string();
  CHECK(printed.find("aten.expand.default(p_cls, [batch, 1, 8])") != std::string::npos);
  check_gradients(m, xd);
}

TEST_CASE("module state: a position table sliced to the sequence length (static and symbolic seq)") {
  state_models::position_table m;
  using S = shape<fix<2>, fix<5>, fix<8>>;
  using D = shape<batch, seq, fix<8>>;
  const auto xs = random_input<tensor<f32, fix<2>, fix<5>, fix<8>>>({2, 5, 8}, 3);
  check_follows_weights(m, tensor_spec<f32, S>(), xs, xs);
  const auto xd = random_input<tensor<f32, batch, seq, fix<8>>>({2, 5, 8}, 3);
  const auto xd2 = random_input<tensor<f32, batch, seq, fix<8>>>({3, 11, 8}, 4);
  check_follows_weights(m, tensor_spec<f32, D>(D(batch(2), seq(5), {})), xd, xd2);
  check_gradients(m, xd);
}

TEST_CASE("module state: a causal-mask buffer sliced and compared is recorded, with the scores it masks") {
  state_models::causal_mask m;
  using D = shape<batch, seq, fix<8>>;
  const auto xs = random_input<tensor<f32, fix<2>, fix<6>, fix<8>>>({2, 6, 8}, 5);
  check_follows_weights(m, tensor_spec<f32, shape<fix<2>, fix<6>, fix<8>>>(), xs, xs);
  const auto xd = random_input<tensor<f32, batch, seq, fix<8>>>({2, 6, 8}, 5);
  const auto xd2 = random_input<tensor<f32, batch, seq, fix<8>>>({1, 13, 8}, 6);
  check_follows_weights(m, tensor_spec<f32, D>(D(batch(2), seq(6), {})), xd, xd2);
  // a buffer that changes (a mask of another shape, loaded) changes the program's result too
  randomize(m, 1);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, D>(D(batch(2), seq(6), {}))));
  auto mod = ep.module();
  for (index_t i = 0; i < 16 * 16; ++i) m.tri.data()[i] = 1.0f;  // no mask at all
  mod.load_state_dict(state_dict(m));
  CHECK(max_abs_diff(mod(xd).erase(), m(xd).erase()) < 1e-5);
}

TEST_CASE("module state: a weight transposed, another reshaped (sharing its memory), before the matmul") {
  state_models::weight_views m;
  const auto xs = random_input<tensor<f32, fix<3>, fix<8>>>({3, 8}, 9);
  check_follows_weights(m, tensor_spec<f32, shape<fix<3>, fix<8>>>(), xs, xs);
  const auto xd = random_input<tensor<f32, batch, fix<8>>>({3, 8}, 9);
  const auto xd2 = random_input<tensor<f32, batch, fix<8>>>({7, 8}, 10);
  check_follows_weights(m, tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(3), {})), xd, xd2);
  // the reshape reads p_v itself (an eager reshape shares the parameter's memory; its value in the
  // graph is its own node, not the parameter's placeholder)
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, fix<8>>>()));
  const std::string printed = ep.to_string();
  CHECK(printed.find("aten.transpose.int(p_w, 0, 1)") != std::string::npos);
  CHECK(printed.find("aten.reshape.default(p_v, [8, 6])") != std::string::npos);
  check_gradients(m, xd);
}

TEST_CASE("module state: a parameter used alone (log_scale.exp(), shift * 2)") {
  state_models::scale_alone m;
  const auto xs = random_input<tensor<f32, fix<4>, fix<8>>>({4, 8}, 11);
  check_follows_weights(m, tensor_spec<f32, shape<fix<4>, fix<8>>>(), xs, xs);
  const auto xd = random_input<tensor<f32, batch, fix<8>>>({4, 8}, 11);
  const auto xd2 = random_input<tensor<f32, batch, fix<8>>>({1, 8}, 12);
  check_follows_weights(m, tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(4), {})), xd, xd2);
  check_gradients(m, xd);
}

TEST_CASE("module state: a tied embedding read through a transpose (GPT-2's head)") {
  state_models::tied_head m;
  using I = tensor<i64, batch, seq>;
  I ids({2, 5});
  I ids2({3, 9});
  for (index_t i = 0; i < ids.numel(); ++i) ids.data()[i] = (i * 7) % 12;
  for (index_t i = 0; i < ids2.numel(); ++i) ids2.data()[i] = (i * 5 + 3) % 12;
  randomize(m, 1);
  const auto ep = export_program(m, input<"x">(tensor_spec<i64, shape<batch, seq>>(shape<batch, seq>(batch(2), seq(5)))));
  check_nothing_frozen(ep);
  auto mod = ep.module();
  randomize(m, 2);
  mod.load_state_dict(state_dict(m));
  CHECK(max_abs_diff(mod(ids).erase(), m(ids).erase()) < 1e-5);
  CHECK(max_abs_diff(mod(ids2).erase(), m(ids2).erase()) < 1e-5);
  typex_test::check_round_trip(ep, {ids.erase()});
  // one gradient for the tied weight, the sum of both uses
  state_models::loss_of<state_models::tied_head> l{m};
  const exported_program joint = make_joint(export_program(l, input<"x">(ids.spec())));
  const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({ids.erase()}));
  const any_tensor& g = r.gradients.at("m.wte.weight");
  auto& w = l.m.wte.weight;
  for (index_t i = 0; i < w.numel(); i += 7) {
    const float keep = w.data()[i];
    w.data()[i] = keep + 1e-2f;
    const double up = l(ids).data()[0];
    w.data()[i] = keep - 1e-2f;
    const double down = l(ids).data()[0];
    w.data()[i] = keep;
    const double fd = (up - down) / 2e-2;
    CHECK_MESSAGE(std::abs(g.data<float>()[i] - fd) <= 2e-2 * std::max(1.0, std::abs(fd)), i);
  }
}

TEST_CASE("module state: buffers written from themselves are buffer mutations, and exporting leaves the model's buffers alone") {
  state_models::self_written m;
  randomize(m, 1);
  const auto before = m.total.clone();
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {}))));
  check_nothing_frozen(ep);
  // exporting ran nothing into the model's state
  CHECK(m.steps.data()[0] == 0);
  CHECK(max_abs_diff(m.total.erase(), before.erase()) == 0.0);
  int mutations = 0;
  for (const output_spec& o : ep.signature().output_specs()) mutations += o.kind == output_kind::buffer_mutation;
  CHECK(mutations == 2);
  auto mod = ep.module();
  const auto x = random_input<tensor<f32, batch, fix<8>>>({2, 8}, 3);
  for (int call = 0; call < 3; ++call) CHECK(max_abs_diff(mod(x).erase(), m(x).erase()) < 1e-4);  // each call writes both
  CHECK(mod.state_dict().at("steps").data<std::int64_t>()[0] == 3);
  CHECK(m.steps.data()[0] == 3);
  CHECK(max_abs_diff(mod.state_dict().at("total"), m.total.erase()) < 1e-4);
}

TEST_CASE("module state: writes to results computed from state, to a view's base, to a tensor the forward made") {
  state_models::written_results m;
  randomize(m, 1);
  const auto x = random_input<tensor<f32, batch, fix<4>>>({3, 4}, 2);
  const auto before = m.buf.clone();
  const auto ep = export_program(m, input<"x">(x.spec()));
  CHECK(max_abs_diff(m.buf.erase(), before.erase()) == 0.0);  // exporting wrote nothing into the model
  auto mod = ep.module();
  for (int call = 0; call < 3; ++call)  // (both write their buffer each call)
    CHECK(max_abs_diff(mod(x).erase(), m(x).erase()) < 1e-5);
  CHECK(max_abs_diff(mod.state_dict().at("buf"), m.buf.erase()) == 0.0);
  randomize(m, 3);  // new weights in both
  mod.load_state_dict(state_dict(m));
  CHECK(max_abs_diff(mod(x).erase(), m(x).erase()) < 1e-5);
}

TEST_CASE("module state: a length that cancels (seq + (16 - seq)) loads back into its typed program") {
  state_models::cancelling m;
  randomize(m, 1);
  using S = shape<seq>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, S>(S(seq(5)))));
  CHECK(ep.to_string().find("\"f32[16]\"") != std::string::npos);
  const auto x = random_input<tensor<f32, seq>>({5}, 4);
  typex_test::check_round_trip(ep, {x.erase()});  // (a typed program: through a file and typex::load<P> too)
  CHECK(max_abs_diff(ep.module()(x).erase(), m(x).erase()) == 0.0);
}

TEST_CASE("module state: a random op on a parameter is recorded, and exporting it draws nothing") {
  state_models::state_dropout m;
  randomize(m, 1);
  manual_seed(7);
  const rng_state seeded = get_rng_state();
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<8>>>()));
  CHECK(get_rng_state() == seeded);
  CHECK(ep.to_string().find("aten.dropout.default(p_w, 0.5, True)") != std::string::npos);
  const auto x = random_input<tensor<f32, fix<8>>>({8}, 5);
  const auto eager = m(x);  // the draws from the seeded stream
  set_rng_state(seeded);
  CHECK(max_abs_diff(ep.module()(x).erase(), eager.erase()) == 0.0);  // the same mask, from the same state
}
