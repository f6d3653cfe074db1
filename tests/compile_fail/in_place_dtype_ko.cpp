// Compile-fail pair "in_place_dtype": a model that scales its u8 image input in place
// (torch: image.div_(255), "result type Float can't be cast to the desired output type Byte"):
// an in-place op keeps its destination's dtype, and the message names the op, both dtypes and the
// fix; the program is exported and run afterwards.
// expect: typex::div_: the result is f32, which the destination, u8, cannot hold
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

struct classifier {
  typex::nn::Linear<64, 10> fc;
  template <class X>
  auto operator()(const X& image) const {
    typex::div_(image, 255.0);  // the mistake: u8 cannot hold the scaled values
    return fc(typex::to<typex::f32>(image));
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
