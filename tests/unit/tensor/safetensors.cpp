// safetensors files: writing and reading every dtype, zero-copy mapping, PyTorch-trained weights
// loaded into typex modules by FQN (tests/data/safetensors/, tools/safetensors_reference.py), and
// load_state_dict's rules: every problem at once, dtype conversion only when asked, tied weights.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/tensor/safetensors.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <unistd.h>

using namespace typex;
using typex_test::message_of;

namespace st_models {
// torch's TinyLM in tools/safetensors_reference.py: the head shares the embedding's weight
struct tiny_lm {
  nn::Embedding<50, 16> emb;
  nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, false, true> block;
  nn::LayerNorm<16> norm;
  nn::Linear<16, 50, false> head;
  tiny_lm() { head.weight = emb.weight; }  // (tied: one storage under two names)
  template <class T>
  auto operator()(const T& tokens) const {
    return head(norm(block(emb(tokens))));
  }
};
struct cnn_bn {
  nn::Conv2d<1, 4, 3> conv;
  nn::BatchNorm2d<4> bn;
  nn::Linear<4 * 4 * 4, 3> fc;
  template <class X>
  auto operator()(const X& x) const {
    return fc(flatten<1>(max_pool2d<pool2d_options{.kernel = {2, 2}}>(relu(bn(conv(x))))));
  }
};
}  // namespace st_models
BOOST_HANA_ADAPT_STRUCT(st_models::tiny_lm, emb, block, norm, head);
BOOST_HANA_ADAPT_STRUCT(st_models::cnn_bn, conv, bn, fc);

namespace {
std::string data_path(const std::string& name) { return std::string(TYPEX_TEST_SOURCE_DIR) + "/data/safetensors/" + name; }

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("typex_test_" + std::to_string(::getpid()) + "_" + name);
}

std::vector<char> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}


named_tensors every_dtype() {
  named_tensors sd;
  index_t k = 0;
  for (const dtype d : all_dtypes) {
    any_tensor t(d, {2, 3});
    for (std::size_t b = 0; b < t.nbytes(); ++b)  // distinct bytes; bools 0/1
      t.raw_data()[b] = std::byte(static_cast<unsigned char>(d == dtype::b8 ? (b + static_cast<std::size_t>(k)) % 2 : 7 * b + 3 * static_cast<std::size_t>(k) + 1));
    sd.insert(std::string("t_") + std::string(name(d)), t);
    ++k;
  }
  sd.insert("empty", any_tensor(dtype::f32, {0, 4}));
  sd.insert("scalar", any_tensor(dtype::i64, {}));
  return sd;
}
}  // namespace

TEST_CASE("safetensors: every dtype round-trips through a file, mapped and aligned, metadata kept") {
  const named_tensors sd = every_dtype();
  const auto path = temp_path("every_dtype.safetensors");
  save_safetensors(path, sd, {{"format", "pt"}, {"note", "ünïcode"}});
  for (const read_mode mode : {read_mode::map, read_mode::copy}) {
    const safetensors_file f = safetensors_file::open(path, mode);
    CHECK(f.mapped() == (mode == read_mode::map));
    CHECK(f.data_offset() % 64 == 0);  // (typex pads the header: every tensor lies aligned)
    CHECK(f.metadata("format") == std::optional<std::string_view>("pt"));
    CHECK(f.metadata("note") == std::optional<std::string_view>("ünïcode"));
    CHECK(!f.metadata("nope"));
    REQUIRE(f.entries().size() == sd.size());
    for (const auto& [n, t] : sd) {
      const safetensors_entry* e = f.find(n);
      REQUIRE(e != nullptr);
      CHECK(e->dtype_name == safetensors_dtype_name(t.scalar_type()));
      const any_tensor back = f.tensor(n);
      CHECK(back.scalar_type() == t.scalar_type());
      CHECK(back.extents() == t.extents());
      CHECK(std::memcmp(back.raw_data(), t.raw_data(), t.nbytes()) == 0);
      if (t.nbytes() != 0) {
        CHECK(f.zero_copy(*e));
        const std::byte* file_bytes = f.bytes(*e).data();
        CHECK(back.raw_data() == file_bytes);  // (shares the mapping, or the buffer the file was read into)
      }
    }
  }
  // the same bytes in memory; the bytes parse as the file did
  const std::vector<std::byte> bytes = to_safetensors(sd, {{"format", "pt"}, {"note", "ünïcode"}});
  const std::vector<char> on_disk = read_bytes(path);
  REQUIRE(bytes.size() == on_disk.size());
  CHECK(std::memcmp(bytes.data(), on_disk.data(), bytes.size()) == 0);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: a mapped tensor is copy-on-write (writing it leaves the file as it was), and outlives the file object") {
  named_tensors sd;
  any_tensor w(dtype::f32, {4});
  for (int i = 0; i < 4; ++i) w.data<float>()[i] = float(i);
  sd.insert("w", w);
  const auto path = temp_path("cow.safetensors");
  save_safetensors(path, sd);
  const std::vector<char> before = read_bytes(path);
  any_tensor t = [&] { return safetensors_file::open(path).tensor("w"); }();  // (the file object is gone)
  t.data<float>()[2] = 42.0f;
  CHECK(t.data<float>()[3] == 3.0f);
  CHECK(read_bytes(path) == before);
  CHECK(safetensors_file::open(path).tensor("w").data<float>()[2] == 2.0f);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: save refuses what the format cannot say and leaves an existing file as it was") {
  named_tensors sd;
  sd.insert("__metadata__", any_tensor(dtype::f32, {1}));
  const auto path = temp_path("refused.safetensors");
  named_tensors ok;
  ok.insert("a", any_tensor(dtype::f32, {2}));
  save_safetensors(path, ok);
  const std::vector<char> before = read_bytes(path);
  CHECK(message_of<argument_error>([&] { save_safetensors(path, sd); }).find("'__metadata__'") != std::string::npos);
  CHECK(message_of<argument_error>([&] { save_safetensors(path, ok, {{"k", "1"}, {"k", "2"}}); }).find("metadata key 'k' is given twice") !=
        std::string::npos);
  named_tensors bad_name;
  bad_name.insert(std::string("bad\xff"), any_tensor(dtype::f32, {1}));
  CHECK(!message_of<argument_error>([&] { save_safetensors(path, bad_name); }).empty());
  CHECK(read_bytes(path) == before);
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path()))  // (no temporary left behind)
    CHECK_MESSAGE(e.path().string().find(path.filename().string() + ".typex-partial") == std::string::npos, e.path());
  // a directory that does not exist: file_error naming the path, nothing left behind
  const auto nowhere = temp_path("no_such_dir") / "x.safetensors";
  CHECK(message_of<file_error>([&] { save_safetensors(nowhere, ok); }).find("no_such_dir") != std::string::npos);
  CHECK(message_of<file_error>([&] { (void)safetensors_file::open(nowhere); }).find("No such file") != std::string::npos);
  CHECK(message_of<file_error>([&] { (void)safetensors_file::open(std::filesystem::temp_directory_path()); }).find("not a regular file") !=
        std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: saves of one path from several threads at once: each file whole, the last one stays") {
  const auto path = temp_path("threads.safetensors");
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      named_tensors sd;
      any_tensor t(dtype::f32, {1024});
      for (index_t i = 0; i < 1024; ++i) t.data<float>()[i] = static_cast<float>(k);
      sd.insert("w", t);
      for (int r = 0; r < 20; ++r) save_safetensors(path, sd);
    });
  }
  for (auto& t : threads) t.join();
  const any_tensor w = safetensors_file::open(path).tensor("w");  // (valid: one writer's whole file)
  const float k = w.data<float>()[0];
  for (index_t i = 0; i < 1024; ++i) REQUIRE(w.data<float>()[i] == k);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: a PyTorch-trained tiny LM (tied head, transformer block) loads by FQN and gives PyTorch's logits") {
  const safetensors_file f = safetensors_file::open(data_path("tiny_lm.safetensors"));
  // save_model wrote the tied weight once and named the alias in the metadata
  CHECK(!f.contains("head.weight"));
  CHECK(f.metadata("head.weight") == std::optional<std::string_view>("emb.weight"));
  st_models::tiny_lm m;
  typex::eval(m);
  const load_result r = load_state_dict(m, f.tensors());  // strict: head.weight comes with emb.weight
  CHECK(r.empty());
  CHECK(m.head.weight.get_storage().data() == m.emb.weight.get_storage().data());  // still tied
  const safetensors_file io = safetensors_file::open(data_path("tiny_lm_io.safetensors"));
  const any_tensor tokens = io.tensor("input"), want = io.tensor("output");
  const auto x = tensor<i64, fix<2>, fix<6>>::bind(tokens, "tokens");
  CHECK(typex_test::worst_abs_error(m(x).erase(), want) <= 2e-5);
  const auto ep = export_program(m, input<"tokens">(x.spec()));
  CHECK(typex_test::worst_abs_error(program_module<eigen_backend>(ep)({tokens})[0], want) <= 2e-5);
}

TEST_CASE("safetensors: a PyTorch-trained CNN with batch norm (i64 num_batches_tracked) loads and matches") {
  st_models::cnn_bn m;
  typex::eval(m);
  CHECK(load_state_dict(m, load_safetensors(data_path("cnn_bn.safetensors"))).empty());
  CHECK(m.bn.num_batches_tracked.data()[0] == 25);  // (torch trained it 25 steps)
  const safetensors_file io = safetensors_file::open(data_path("cnn_bn_io.safetensors"));
  const auto x = tensor<f32, fix<2>, fix<1>, fix<10>, fix<10>>::bind(io.tensor("input"), "x");
  CHECK(typex_test::worst_abs_error(m(x).erase(), io.tensor("output")) <= 1e-5);
}

TEST_CASE("safetensors: bf16 weights into an f32 model: refused naming every tensor, converted when asked") {
  st_models::cnn_bn m;
  typex::eval(m);
  const named_tensors half = load_safetensors(data_path("cnn_bn_bf16.safetensors"));
  const named_tensors before = state_dict(m);
  std::vector<float> conv_before(m.conv.weight.data(), m.conv.weight.data() + 36);
  const std::string msg = message_of<dtype_error>([&] { load_state_dict(m, half); });
  CHECK(msg.find("8 problems, nothing was loaded") != std::string::npos);
  for (const char* fqn : {"conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "fc.weight", "fc.bias"})
    CHECK_MESSAGE(msg.find(std::string("'") + fqn + "' is f32") != std::string::npos, fqn);
  CHECK(msg.find("convert_dtypes = true") != std::string::npos);
  CHECK(std::equal(conv_before.begin(), conv_before.end(), m.conv.weight.data()));  // nothing copied
  CHECK(load_state_dict(m, half, load_options{.convert_dtypes = true}).empty());
  const safetensors_file io = safetensors_file::open(data_path("cnn_bn_bf16_io.safetensors"));
  const auto x = tensor<f32, fix<2>, fix<1>, fix<10>, fix<10>>::bind(io.tensor("input"), "x");
  CHECK(typex_test::worst_abs_error(m(x).erase(), io.tensor("output")) <= 1e-5);
}

TEST_CASE("load_state_dict: missing, unexpected, wrong-shape and wrong-dtype names in one message, nothing loaded") {
  st_models::cnn_bn m;
  named_tensors sd = state_dict(m);
  named_tensors bad;
  for (const auto& [n, t] : sd) {
    if (n == "fc.bias") continue;                                                    // missing
    if (n == "conv.bias") bad.insert(n, any_tensor(dtype::f32, {5}));                // wrong shape
    else if (n == "bn.weight") bad.insert(n, any_tensor(dtype::f64, {4}));           // wrong dtype
    else bad.insert(n, t);
  }
  bad.insert("fc.bias_typo", any_tensor(dtype::f32, {3}));  // unexpected
  m.fc.weight.data()[0] = 7.0f;
  const std::string msg = message_of<shape_error>([&] { load_state_dict(m, bad); });
  CHECK(msg.find("4 problems, nothing was loaded") != std::string::npos);
  CHECK(msg.find("missing keys: 'fc.bias'") != std::string::npos);
  CHECK(msg.find("unexpected keys: 'fc.bias_typo'") != std::string::npos);
  CHECK(msg.find("size mismatch: 'conv.bias' is f32[4] in the module but f32[5] in the state dict") != std::string::npos);
  CHECK(msg.find("dtype mismatch: 'bn.weight' is f32[4] in the module but f64[4] in the state dict") != std::string::npos);
  CHECK(m.fc.weight.data()[0] == 7.0f);
  // not strict: the names still count, the mismatches are still errors (torch's rule for sizes)
  const std::string loose = message_of<shape_error>([&] { load_state_dict(m, bad, load_options{.strict = false}); });
  CHECK(loose.find("2 problems") != std::string::npos);
  CHECK(loose.find("missing keys") == std::string::npos);
}

TEST_CASE("load_state_dict: tied weights load once from either name, and two different values for them are refused") {
  st_models::tiny_lm m;
  named_tensors full = state_dict(m);  // (both names: torch's own state_dict() has both too)
  REQUIRE(full.contains("head.weight"));
  named_tensors only_head;  // the alias alone is enough too
  for (const auto& [n, t] : full) {
    if (n == "emb.weight") continue;
    only_head.insert(n, n == "head.weight" ? any_tensor(t.scalar_type(), t.extents()) : t);
  }
  only_head.at("head.weight").data<float>()[5] = 3.5f;
  CHECK(load_state_dict(m, only_head).empty());
  CHECK(m.emb.weight.data()[5] == 3.5f);
  named_tensors differ;
  for (const auto& [n, t] : full) differ.insert(n, n == "head.weight" ? any_tensor(t.scalar_type(), t.extents()) : t);
  differ.at("head.weight").data<float>()[0] = 1.0f;
  const std::string msg = message_of<argument_error>([&] { load_state_dict(m, differ); });
  CHECK(msg.find("'emb.weight' and 'head.weight' share storage in the module (tied weights) but differ in the state dict") != std::string::npos);
}

TEST_CASE("convert_elements: torch's copy_ conversions") {
  any_tensor d(dtype::f64, {5});
  const double v[] = {-2.7, 0.0, 1.5, 65504.0, 1e-8};
  std::memcpy(d.raw_data(), v, sizeof v);
  any_tensor i(dtype::i32, {5}), b(dtype::b8, {5}), h(dtype::f16, {5}), bf(dtype::bf16, {5});
  detail::convert_elements(d, i);
  detail::convert_elements(d, b);
  detail::convert_elements(d, h);
  detail::convert_elements(h, bf);
  CHECK(i.data<std::int32_t>()[0] == -2);  // (toward zero)
  CHECK(i.data<std::int32_t>()[2] == 1);
  CHECK(b.data<bool>()[0]);
  CHECK(!b.data<bool>()[1]);
  CHECK(b.data<bool>()[4]);
  CHECK(float(h.data<half>()[3]) == 65504.0f);
  CHECK(float(bf.data<bfloat16>()[2]) == 1.5f);
}
