// Attention masks against PyTorch: tests/data/parity/attention.txt (tools/attention_parity.py)
// holds torch.nn.MultiheadAttention calls with bool and float attn_mask (2-D and per head),
// key_padding_mask, need_weights (averaged and per head), batch-first and [L, N, E] inputs, and
// scaled_dot_product_attention with bool and float masks and is_causal. Each is run with typex's
// module and op, eagerly and as an exported program, and compared (atol 1e-5).
//
// The conventions differ in PyTorch itself and typex follows both: MultiheadAttention's bool mask
// is true where a query may NOT attend; scaled_dot_product_attention's is true where it may.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

using namespace typex;

namespace {
constexpr index_t E = 8, H = 2, L = 3, S = 4, N = 2;

using case_tensors = std::map<std::string, any_tensor>;

any_tensor read_tensor(std::istringstream& in) {
  std::string dt;
  std::size_t rank = 0;
  in >> dt >> rank;
  REQUIRE((dt == "f32" || dt == "b8"));
  std::vector<index_t> e(rank);
  for (auto& v : e) in >> v;
  any_tensor t(dt == "f32" ? dtype::f32 : dtype::b8, e);
  for (index_t i = 0; i < t.numel(); ++i) {
    std::string v;
    in >> v;
    if (dt == "f32") t.data<float>()[i] = std::stof(v);
    else t.data<bool>()[i] = v == "1";
  }
  REQUIRE_MESSAGE(static_cast<bool>(in), "attention.txt: a tensor is cut short");
  return t;
}

const std::map<std::string, case_tensors>& cases() {
  static const std::map<std::string, case_tensors> all = [] {
    const std::string path = std::string(TYPEX_TEST_SOURCE_DIR) + "/data/parity/attention.txt";
    std::ifstream file(path);
    REQUIRE_MESSAGE(file.good(), "cannot open " << path);
    std::map<std::string, case_tensors> out;
    std::string line, current;
    while (std::getline(file, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream in(line);
      std::string word;
      in >> word;
      if (word == "case") {
        in >> current;
      } else if (word == "tensor") {
        std::string name;
        in >> name;
        out[current][name] = read_tensor(in);
      } else {
        REQUIRE_MESSAGE(word == "end", "attention.txt: unexpected line " << line);
      }
    }
    return out;
  }();
  return all;
}

double worst_error(const any_tensor& got, const any_tensor& want) {
  REQUIRE(got.extents() == want.extents());
  double worst = 0;
  for (index_t i = 0; i < want.numel(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    if (std::isnan(w)) worst = std::isnan(g) ? worst : INFINITY;
    else worst = std::max(worst, std::abs(g - w));
  }
  return worst;
}

// MultiheadAttention<E, H, BF> called as forward<Weights, Average>(q, k, v, kpm, attn_mask, causal)
// with the masks a case has, as a model of its own (so that it exports).
template <bool BF, bool Weights, bool Average, class KPM, class AM>
struct mha_call {
  using attn_t = nn::MultiheadAttention<E, H, BF>;
  BOOST_HANA_DEFINE_STRUCT(mha_call, (attn_t, attn));
  bool is_causal = false;
  template <class Q, class K, class V, class... M>
  auto operator()(const Q& q, const K& k, const V& v, const M&... masks) const {
    const std::tuple<const M&...> m(masks...);
    if constexpr (std::is_same_v<KPM, void> && std::is_same_v<AM, void>) {
      return attn.template forward<Weights, Average>(q, k, v, nullptr, nullptr, is_causal);
    } else if constexpr (std::is_same_v<KPM, void>) {
      return attn.template forward<Weights, Average>(q, k, v, nullptr, std::get<0>(m), is_causal);
    } else if constexpr (std::is_same_v<AM, void>) {
      return attn.template forward<Weights, Average>(q, k, v, std::get<0>(m), nullptr, is_causal);
    } else {
      return attn.template forward<Weights, Average>(q, k, v, std::get<0>(m), std::get<1>(m), is_causal);
    }
  }
};
}  // namespace


namespace {
template <class T>
T bound(const case_tensors& c, const std::string& name) {
  return T::bind(c.at(name), name);
}

// One MHA case: masks given by type (void: none), compared eagerly and exported.
template <bool BF, bool Weights, bool Average, class KPM, class AM>
void check_mha(const std::string& name, bool is_causal = false, const std::string& data = "") {
  INFO("case " << name);
  const case_tensors& c = cases().at(data.empty() ? name : data);
  mha_call<BF, Weights, Average, KPM, AM> m;
  m.is_causal = is_causal;
  named_tensors sd;
  for (const char* k : {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}) sd.insert(k, c.at(k));
  load_state_dict(m.attn, sd);
  using q_t = std::conditional_t<BF, tensor<f32, fix<N>, fix<L>, fix<E>>, tensor<f32, fix<L>, fix<N>, fix<E>>>;
  using k_t = std::conditional_t<BF, tensor<f32, fix<N>, fix<S>, fix<E>>, tensor<f32, fix<S>, fix<N>, fix<E>>>;
  const auto q = bound<q_t>(c, "query");
  const auto k = bound<k_t>(c, "key");
  const auto v = bound<k_t>(c, "value");
  auto compare = [&](const std::vector<any_tensor>& got, const char* how) {
    INFO(how);
    CHECK(worst_error(got.at(0), c.at("output")) <= 1e-5);
    if constexpr (Weights) CHECK(worst_error(got.at(1), c.at("weights")) <= 1e-5);
  };
  auto flat = [](const auto& r) {
    if constexpr (Weights) return std::vector<any_tensor>{std::get<0>(r).erase(), std::get<1>(r).erase()};
    else return std::vector<any_tensor>{r.erase()};
  };
  auto run_with = [&](const auto&... masks) {
    compare(flat(m(q, k, v, masks...)), "eager");
    const auto ep = export_program(m, q, k, v, masks...);
    std::vector<any_tensor> in{q.erase(), k.erase(), v.erase(), masks.erase()...};
    compare(program_module<eigen_backend>(ep)(in), "exported");
  };
  if constexpr (std::is_same_v<KPM, void> && std::is_same_v<AM, void>) run_with();
  else if constexpr (std::is_same_v<KPM, void>) run_with(bound<AM>(c, "attn_mask"));
  else if constexpr (std::is_same_v<AM, void>) run_with(bound<KPM>(c, "key_padding_mask"));
  else run_with(bound<KPM>(c, "key_padding_mask"), bound<AM>(c, "attn_mask"));
}

using mask_b = tensor<b8, fix<L>, fix<S>>;
using mask_f = tensor<f32, fix<L>, fix<S>>;
using head_mask_b = tensor<b8, fix<N * H>, fix<L>, fix<S>>;
using pad_b = tensor<b8, fix<N>, fix<S>>;
using pad_f = tensor<f32, fix<N>, fix<S>>;

template <bool BF>
void check_all_mha(const std::string& tag) {
  check_mha<BF, false, true, void, void>("mha_" + tag + "_nomask");
  check_mha<BF, false, true, void, mask_b>("mha_" + tag + "_bool_causal");
  check_mha<BF, false, true, void, mask_f>("mha_" + tag + "_float_causal");
  check_mha<BF, false, true, void, mask_b>("mha_" + tag + "_bool_random");
  check_mha<BF, false, true, void, head_mask_b>("mha_" + tag + "_bool_per_head");
  check_mha<BF, false, true, pad_b, void>("mha_" + tag + "_padding");
  check_mha<BF, false, true, pad_f, void>("mha_" + tag + "_padding_float");
  check_mha<BF, true, true, pad_b, mask_b>("mha_" + tag + "_both_weights");
  check_mha<BF, true, false, void, mask_b>("mha_" + tag + "_weights_per_head");
  // is_causal is torch's hint that attn_mask is the causal mask: the same numbers
  check_mha<BF, false, true, void, mask_b>("mha_" + tag + "_is_causal", true, "mha_" + tag + "_bool_causal");
}
}  // namespace

TEST_CASE("nn::MultiheadAttention masks follow torch: bool attn_mask true = may not attend, float added, key_padding_mask, "
          "need_weights") {
  REQUIRE(cases().size() == 22);
  check_all_mha<true>("bf");
  check_all_mha<false>("lnd");
}

TEST_CASE("nn::MultiheadAttention: the bool mask is not added (the convention followed backwards is caught)") {
  // A causal bool mask read the other way round (true = attends) gives different numbers: the data
  // tells the conventions apart, so the parity above cannot pass with the wrong one.
  const case_tensors& c = cases().at("mha_bf_bool_causal");
  any_tensor flipped = c.at("attn_mask").clone();
  for (index_t i = 0; i < flipped.numel(); ++i) flipped.data<bool>()[i] = !flipped.data<bool>()[i];
  mha_call<true, false, true, void, mask_b> m;
  named_tensors sd;
  for (const char* k : {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}) sd.insert(k, c.at(k));
  load_state_dict(m.attn, sd);
  const auto q = bound<tensor<f32, fix<N>, fix<L>, fix<E>>>(c, "query");
  const auto kv = bound<tensor<f32, fix<N>, fix<S>, fix<E>>>(c, "key");
  const auto vv = bound<tensor<f32, fix<N>, fix<S>, fix<E>>>(c, "value");
  CHECK(worst_error(m(q, kv, vv, mask_b::bind(flipped)).erase(), c.at("output")) > 1e-2);
}

TEST_CASE("nn::MultiheadAttention: is_causal without attn_mask is an error, as in torch") {
  nn::MultiheadAttention<E, H, true> attn;
  const tensor<f32, fix<N>, fix<L>, fix<E>> q;
  CHECK(typex_test::message_of<argument_error>([&] { (void)attn.forward(q, q, q, nullptr, nullptr, true); })
            .find("is_causal is a hint that attn_mask is the causal mask") != std::string::npos);
}

TEST_CASE("scaled_dot_product_attention follows torch: bool mask true = may attend, float added, is_causal") {
  using qkv = tensor<f32, fix<N>, fix<H>, fix<L>, fix<E>>;
  using kv = tensor<f32, fix<N>, fix<H>, fix<S>, fix<E>>;
  auto check = [&](const std::string& name, auto mask_type, attention_options o) {
    INFO("case " << name);
    const case_tensors& c = cases().at(name);
    const auto q = bound<qkv>(c, "query");
    const auto k = bound<kv>(c, "key");
    const auto v = bound<kv>(c, "value");
    using M = typename decltype(mask_type)::type;
    if constexpr (std::is_same_v<M, void>) {
      CHECK(worst_error(scaled_dot_product_attention(q, k, v, nullptr, o).erase(), c.at("output")) <= 1e-5);
    } else {
      const auto m = bound<M>(c, "attn_mask");
      CHECK(worst_error(scaled_dot_product_attention(q, k, v, m, o).erase(), c.at("output")) <= 1e-5);
    }
  };
  check("sdpa_nomask", std::type_identity<void>{}, {});
  check("sdpa_bool_attends", std::type_identity<mask_b>{}, {});
  check("sdpa_float", std::type_identity<mask_f>{}, {});
  check("sdpa_is_causal", std::type_identity<void>{}, {.is_causal = true});
}
