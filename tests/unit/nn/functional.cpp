// Padding and upsampling (nn/functional.hpp) against PyTorch (tools/functional_reference.py): each
// case eagerly, exported (batch symbolic where the op allows it), and its input gradient from a
// joint program against torch.autograd's.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/tensor/safetensors.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>

using namespace typex;

namespace {
using batch = sym<"batch", 1, 64>;

const named_tensors& reference() {
  static const named_tensors ref = load_safetensors(std::string(TYPEX_TEST_SOURCE_DIR) + "/data/zoo/functional.safetensors");
  return ref;
}

void check_close(const any_tensor& a, const any_tensor& b, const std::string& what) {
  REQUIRE_MESSAGE(a.extents() == b.extents(), what << ": " << a.to_string() << " vs " << b.to_string());
  double worst = 0;
  for (index_t i = 0; i < b.numel(); ++i) worst = std::max(worst, double(std::abs(a.data<float>()[i] - b.data<float>()[i])));
  CHECK_MESSAGE(worst <= 1e-5, what << ": worst difference " << worst);
}

// f as a model: sum(f(x) * r) is its loss.
template <class F>
struct loss_model {
  BOOST_HANA_DEFINE_STRUCT(loss_model);
  template <class X, class R>
  auto operator()(const X& x, const R& r) const {
    return sum(mul(F{}(x), r));
  }
};
template <class F>
struct plain_model {
  BOOST_HANA_DEFINE_STRUCT(plain_model);
  template <class X>
  auto operator()(const X& x) const {
    return F{}(x);
  }
};

template <class X, class F>
void check_case(const std::string& name) {
  INFO("case " << name);
  const named_tensors& ref = reference();
  const X x = X::bind(ref.at(name + ".x"), "x");
  const auto y = F{}(x);
  check_close(y.erase(), ref.at(name + ".y"), "eager");
  plain_model<F> m;
  const auto ep = export_program(m, input<"x">(x.spec()));
  check_close(ep.module()(x).erase(), ref.at(name + ".y"), "exported");
  using Y = std::remove_cvref_t<decltype(y)>;
  const Y r = Y::bind(ref.at(name + ".r"), "r");
  loss_model<F> l;
  const exported_program joint = make_joint(export_program(l, input<"x">(x.spec()), input<"r">(r.spec())), {.input_gradients = {"x"}});
  const joint_outputs out = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x.erase(), r.erase()}));
  check_close(out.input_gradients.at("x"), ref.at(name + ".grad"), "gradient");
}

#define TYPEX_FN(NAME, ...)                        \
  struct NAME {                                    \
    template <class X>                             \
    auto operator()(const X& x) const {            \
      return __VA_ARGS__;                          \
    }                                              \
  }
TYPEX_FN(pad_constant, typex::pad<1, 2, 0, 1>(x, pad_mode::constant, 0.5));
TYPEX_FN(pad_reflect, typex::pad<2, 1, 1, 2>(x, pad_mode::reflect));
TYPEX_FN(pad_replicate, typex::pad<1, 2, 2, 1>(x, pad_mode::replicate));
TYPEX_FN(pad_reflect_1d, typex::pad<2, 3>(x, pad_mode::reflect));
TYPEX_FN(nearest_2, typex::upsample_nearest<2>(x));
TYPEX_FN(nearest_2_3, typex::upsample_nearest<2, 3>(x));
TYPEX_FN(bilinear_7_9, (typex::upsample_bilinear<7, 9, false>(x)));
TYPEX_FN(bilinear_7_9_corners, (typex::upsample_bilinear<7, 9, true>(x)));
TYPEX_FN(bilinear_down_3_2, (typex::upsample_bilinear<3, 2, false>(x)));
#undef TYPEX_FN
using image = tensor<f32, batch, fix<3>, fix<4>, fix<5>>;
}  // namespace

TEST_CASE("nn functional: F.pad constant, reflect and replicate equal PyTorch, eagerly, exported and in gradients") {
  check_case<image, pad_constant>("pad_constant");
  check_case<image, pad_reflect>("pad_reflect");
  check_case<image, pad_replicate>("pad_replicate");
  check_case<tensor<f32, batch, fix<3>, fix<6>>, pad_reflect_1d>("pad_reflect_1d");
  // a reflect pad as wide as the dim: PyTorch's rule, as a run-time error for a symbolic extent
  const tensor<f32, batch, fix<3>, sym<"len", 1, 64>> narrow({1, 3, 2});
  const auto too_wide = [&] { return typex::pad<2, 0>(narrow, pad_mode::reflect); };
  CHECK_THROWS_WITH_AS((void)too_wide(), doctest::Contains("a pad must be smaller than the extent"), shape_error);
}

TEST_CASE("nn functional: F.interpolate nearest (integer scales) and bilinear (both align_corners, up and down) equal PyTorch") {
  check_case<image, nearest_2>("nearest_2");
  check_case<tensor<f32, batch, fix<2>, fix<3>, fix<4>>, nearest_2_3>("nearest_2_3");
  check_case<image, bilinear_7_9>("bilinear_7_9");
  check_case<image, bilinear_7_9_corners>("bilinear_7_9_corners");
  check_case<tensor<f32, batch, fix<2>, fix<6>, fix<5>>, bilinear_down_3_2>("bilinear_down_3_2");
}

TEST_CASE("nn functional: the modules (ZeroPad2d, ReflectionPad2d, Upsample, UpsamplingBilinear2d) are their functions") {
  const auto x = typex_test::random_tensor<tensor<f32, fix<1>, fix<2>, fix<3>, fix<4>>>({1, 2, 3, 4}, 3);
  const auto same = [](const auto& a, const auto& b) {
    return a.erase().extents() == b.erase().extents() && std::equal(a.data(), a.data() + a.numel(), b.data());
  };
  CHECK(same(nn::ZeroPad2d<1>{}(x), typex::pad<1, 1, 1, 1>(x)));
  nn::ConstantPad2d<1, 0, 2, 0> c;
  c.value = 3.0;
  CHECK(same(c(x), typex::pad<1, 0, 2, 0>(x, pad_mode::constant, 3.0)));
  CHECK(same(nn::ReflectionPad2d<1, 2, 1, 0>{}(x), typex::pad<1, 2, 1, 0>(x, pad_mode::reflect)));
  CHECK(same(nn::ReplicationPad2d<2>{}(x), typex::pad<2, 2, 2, 2>(x, pad_mode::replicate)));
  CHECK(same(nn::Upsample<2>{}(x), typex::upsample_nearest<2>(x)));
  CHECK(same(nn::UpsamplingBilinear2d<2>{}(x), typex::upsample_bilinear<6, 8, true>(x)));
}
