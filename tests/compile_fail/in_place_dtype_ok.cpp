// Compile-fail pair "in_place_dtype": this twin must build. See in_place_dtype_ko.cpp: the image is
// converted first, then scaled (in place, on the f32 copy).
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

struct classifier {
  typex::nn::Linear<64, 10> fc;
  template <class X>
  auto operator()(const X& image) const {
    const auto x = typex::to<typex::f32>(image);
    typex::div_(x, 255.0);
    return fc(x);
  }
};
BOOST_HANA_ADAPT_STRUCT(classifier, fc);

int main() {
  classifier model;
  typex::init_module(model, 3);
  using xs = typex::shape<typex::fix<4>, typex::fix<64>>;
  const auto program = typex::export_program(model, typex::input<"image">(typex::tensor_spec<typex::u8, xs>()));
  const auto logits = program.module()(typex::tensor<typex::u8, typex::fix<4>, typex::fix<64>>());
  return logits(0, 0) == logits(0, 0) ? 0 : 1;
}
