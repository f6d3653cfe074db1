// typex::save / typex::load: the archive format (golden description), files that any safetensors
// reader reads, the typed load naming the first difference, the version policy, and descriptions
// that break the schema or the program's invariants (format_error naming where). The round trip of
// every program the suite exports is checked where it is exported (round_trip.hpp).
#include "round_trip.hpp"

#include <boost/hana/adapt_struct.hpp>

using namespace typex;
using typex_test::message_of;

namespace archive_models {
using batch = sym<"batch", 1, 64>;
struct small {
  nn::Linear<4, 8> fc1;
  nn::Linear<8, 3> fc2;
  template <class X>
  auto operator()(const X& x) const {
    return fc2(relu(fc1(x)));
  }
};
}  // namespace archive_models
BOOST_HANA_ADAPT_STRUCT(archive_models::small, fc1, fc2);

namespace archive_models {
struct scale_op {  // (a user op the reader learns by registration)
  static constexpr std::string_view target = "archive_test.scale.default";
};
}  // namespace archive_models

namespace {
using archive_models::batch;
using x_spec = tensor_spec<f32, shape<batch, fix<4>>>;

auto small_program() {
  archive_models::small m;
  init_module(m, 3);
  return export_program(m, input<"x">(x_spec(shape<batch, fix<4>>(batch(2), {}))));
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("typex_archive_" + std::to_string(::getpid()) + "_" + name);
}

// The archive of `ep` with its description passed through `edit` (a text substitution), as bytes.
storage edited(const exported_program& ep, const std::string& from, const std::string& to, std::string version = "1.0") {
  const std::vector<std::byte> bytes = save_to_bytes(ep);
  storage s(bytes.size());
  std::memcpy(s.data(), bytes.data(), bytes.size());
  const safetensors_file f = safetensors_file::parse(s);
  std::string program(*f.metadata("typex.program"));
  if (!from.empty()) {
    const auto at = program.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    program.replace(at, from.size(), to);
  }
  const std::vector<std::byte> out =
      to_safetensors(f.tensors(), {{"format", "typex.exported_program"}, {"typex.format_version", version}, {"typex.program", program}});
  storage r(out.size());
  std::memcpy(r.data(), out.data(), out.size());
  return r;
}

std::string load_error(const storage& bytes) {
  try {
    (void)load_from_bytes(bytes, "edited.typex");
  } catch (const format_error& e) {
    return e.what();
  }
  return "(loaded)";
}
}  // namespace

TEST_CASE("archive: the description is the documented format (golden), and a file any safetensors reader reads") {
  const auto ep = small_program();
  typex_test::check_golden("archive_small.json", describe_archive(ep) + "\n");
  const auto path = temp_path("small.typex");
  save(ep, path);
  // the weights under their FQNs, for any safetensors reader
  const safetensors_file f = safetensors_file::open(path);
  CHECK(f.metadata("format") == std::optional<std::string_view>("typex.exported_program"));
  CHECK(f.metadata("typex.format_version") == std::optional<std::string_view>("1.0"));
  for (const auto& [fqn, t] : ep.state_dict()) CHECK(typex_test::same_bytes(f.tensor(fqn), t));
  CHECK(f.entries().size() == ep.state_dict().size());  // (exported from a spec: no example inputs)
  // loaded from the file: mapped, the weights not copied, the same program
  const exported_program back = load(path);
  CHECK(back.to_string() == ep.to_string());
  // (mapped, not copied: two weights lie as far apart in memory as in the file)
  const auto* w1 = f.find("fc1.weight");
  const auto* w2 = f.find("fc2.weight");
  CHECK(back.state_dict().at("fc2.weight").raw_data() - back.state_dict().at("fc1.weight").raw_data() ==
        static_cast<std::ptrdiff_t>(w2->begin) - static_cast<std::ptrdiff_t>(w1->begin));
  const exported_program copied = load(path, read_mode::copy);
  CHECK(copied.to_string() == ep.to_string());
  any_tensor x(dtype::f32, {5, 4});
  for (index_t i = 0; i < 20; ++i) x.data<float>()[i] = float(i) / 7.0f - 1.0f;
  typex_test::check_round_trip(ep, {x});
  std::filesystem::remove(path);
}

TEST_CASE("archive: a typed load checks the program type and names the first difference") {
  const auto ep = small_program();
  const auto path = temp_path("typed.typex");
  save(ep, path);
  const auto typed = load<decltype(ep)>(path);
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<4>>>({3, 4}, 5);
  typex_test::check_round_trip(ep, {x.erase()});
  CHECK(typex_test::same_bytes(typed.module()(x).erase(), ep.module()(x).erase()));
  archive_models::small m;
  using other_batch = sym<"batch", 1, 32>;
  const auto narrower_range = export_program(m, input<"x">(tensor_spec<f32, shape<other_batch, fix<4>>>(shape<other_batch, fix<4>>(other_batch(2), {}))));
  const std::string range_msg = message_of<argument_error>([&] { (void)load<decltype(narrower_range)>(path); });
  CHECK(range_msg.find("symbol 'batch' has the range VR[1, 64] in the archive, but the type declares VR[1, 32]") != std::string::npos);
  const auto fixed = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<4>>>()));
  const std::string dim_msg = message_of<argument_error>([&] { (void)load<decltype(fixed)>(path); });
  CHECK(dim_msg.find("input 'x' is f32[batch, 4] in the archive, but the type expects") != std::string::npos);
  CHECK(dim_msg.find("(dim 0 differs)") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("archive: versions: older and newer minor versions load, a newer major version is refused") {
  const auto ep = small_program();
  CHECK(load_from_bytes(edited(ep, "", "", "1.0")).to_string() == ep.to_string());
  // a newer minor version may add fields: ignored
  CHECK(load_from_bytes(edited(ep, "{\"graph\":", "{\"added_in_1_7\":[1,2],\"graph\":", "1.7")).to_string() == ep.to_string());
  const std::string msg = message_of<unsupported_error>([&] { (void)load_from_bytes(edited(ep, "", "", "2.0"), "new.typex"); });
  CHECK(msg == "typex: new.typex: the archive's format version is 2.0, newer than this typex reads (1.x and older): load it with a newer typex");
  CHECK(load_error(edited(ep, "", "", "one")).find("typex.format_version: expected \"major.minor\"") != std::string::npos);
}

TEST_CASE("archive: a safetensors file that is not an archive, and descriptions that break the schema or the program") {
  named_tensors plain;
  plain.insert("w", any_tensor(dtype::f32, {2}));
  const std::vector<std::byte> b = to_safetensors(plain, {{"format", "pt"}});
  storage s(b.size());
  std::memcpy(s.data(), b.data(), b.size());
  CHECK(load_error(s).find("a safetensors file, but not a typex program archive") != std::string::npos);

  const auto ep = small_program();
  struct bad_case {
    std::string from, to, expect;
  };
  const bad_case cases[] = {
      {"\"target\":\"aten.relu.default\"", "\"target\":\"my.gelu2.default\"",
       "graph node 6 ('relu'): op 'my.gelu2.default' is not one this program knows (a user-defined op: register it with typex::register_op<Op>() before loading)"},
      {"{\"node\":\"relu\",\"output\":0}", "{\"node\":\"linear_1\",\"output\":0}", "reads 'linear_1', which no earlier node defines"},
      {"{\"node\":\"relu\",\"output\":0}", "{\"node\":\"relu\",\"output\":3}", "reads output 3 of 'relu', which has no such output"},
      {"{\"node\":\"relu\",\"output\":0}", "{\"int\":1,\"str\":\"2\"}", "an argument object has one tag"},
      {"{\"node\":\"relu\",\"output\":0}", "{\"strr\":\"a\"}", "unknown argument tag 'strr'"},
      {"\"dtype\":\"f32\"", "\"dtype\":\"f31\"", "unknown dtype 'f31'"},
      {"\"name\":\"linear\"", "\"name\":\"lin-ear\"", "the name 'lin-ear' is not a unique identifier"},
      {"\"op\":\"call_function\"", "\"op\":\"call_method\"", "'call_method' is none of placeholder call_function output"},
      {"\"kind\":\"PARAMETER\"", "\"kind\":\"PARAM\"", "signature input: 'PARAM' is none of"},
      {"\"tensor\":\"fc1.bias\"", "\"tensor\":\"fc9.bias\"", "state_dict: names the tensor 'fc9.bias', which the file does not hold"},
      {"\"min\":1", "\"min\":100", "symbol 'batch' has an empty range VR[100, 64]"},
      {"\"graph\":{\"nodes\":", "\"graph\":{\"nodez\":", "graph: no 'nodes' field"},
      // verifies as data, breaks the program: the signature names a placeholder the graph does not have
      {"\"arg\":\"p_fc1_weight\"", "\"arg\":\"p_fc1_weightz\"", "the program it describes is not valid"},
      // the lifted weight's shape against its placeholder
      {"{\"dtype\":\"f32\",\"shape\":[8,4]}", "{\"dtype\":\"f32\",\"shape\":[8,5]}", "the program it describes is not valid"},
  };
  for (const auto& c : cases) {
    const std::string msg = load_error(edited(ep, c.from, c.to));
    CHECK_MESSAGE(msg.find(c.expect) != std::string::npos, c.to, " -> ", msg);
    CHECK_MESSAGE(msg.starts_with("typex: edited.typex: "), msg);
  }
}

TEST_CASE("archive: a registered user op loads, an unregistered one is named") {
  const auto ep = small_program();
  // (the description names the op; registering it makes the name known to the reader)
  CHECK(load_error(edited(ep, "\"target\":\"aten.relu.default\"", "\"target\":\"archive_test.scale.default\"")).find("register it") !=
        std::string::npos);
  register_op<archive_models::scale_op>();
  const std::string msg = load_error(edited(ep, "\"target\":\"aten.relu.default\"", "\"target\":\"archive_test.scale.default\""));
  CHECK(msg == "(loaded)");
}

TEST_CASE("archive: recorded shapes are checked at load time against each op's rule: a lying record is a format_error naming the node") {
  const auto ep = small_program();
  CHECK(message_of<format_error>([&] {
    (void)load_from_bytes(edited(ep, "{\"dtype\":\"f32\",\"shape\":[\"batch\",8]}", "{\"dtype\":\"f32\",\"shape\":[\"batch\",9]}"),
                          "lying.typex");
  }) == "typex: lying.typex: the program it describes is not valid: typex::ir::verify: node 'linear': aten.linear.default: the node records "
        "f32[batch, 9] where the op's rule gives f32[batch, 8]");
  CHECK(message_of<format_error>([&] {
    (void)load_from_bytes(edited(ep, "{\"dtype\":\"f32\",\"shape\":[\"batch\",8]}", "{\"dtype\":\"f64\",\"shape\":[\"batch\",8]}"),
                          "lying.typex");
  }).find("node 'linear'") != std::string::npos);
  // an honest file: every op has a rule, so its records are the rules' and the plan is made at once
  exported_program honest = load_from_bytes(edited(ep, "", ""), "honest.typex");
  CHECK(honest.trusted_shapes());
  auto loaded = program_module<eigen_backend>(honest);
  auto original = program_module<eigen_backend>(ep);
  for (const index_t rows : {2, 2, 5, 2}) {
    any_tensor in(dtype::f32, {rows, 4});
    for (index_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = std::sin(0.3f * static_cast<float>(i));
    const any_tensor want = original({in})[0], got = loaded({in})[0];
    for (index_t i = 0; i < want.numel(); ++i) CHECK(got.data<float>()[i] == doctest::Approx(want.data<float>()[i]).epsilon(1e-6));
  }
}

TEST_CASE("archive: a program with a user op that has no run-time rule is not trusted: its first call per shape is checked") {
  const auto ep = small_program();
  register_op<archive_models::scale_op>();
  const exported_program p = load_from_bytes(edited(ep, "\"target\":\"aten.relu.default\"", "\"target\":\"archive_test.scale.default\""),
                                             "user_op.typex");
  CHECK_FALSE(p.trusted_shapes());
  CHECK((ir::find_description(op_id_of<archive_models::scale_op>)->infer == nullptr));
}
