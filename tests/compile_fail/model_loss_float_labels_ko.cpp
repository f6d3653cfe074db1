// Compile-fail pair "model_loss_float_labels": a classifier's loss computed with class labels
// stored as f32 (as read from a CSV) instead of i64 indices: the message says what cross_entropy
// reads a float target as, and what class indices must be; the loss is used afterwards.
// expect: typex::cross_entropy: the target f32\[batch\] holds floating-point values, so it is read as class probabilities, which must have the shape of the input \[batch, 10\]; for class indices pass an i64 tensor
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 256>;
struct classifier {
  typex::nn::Linear<20, 10> fc;
  template <class X, class Y>
  auto operator()(const X& x, const Y& labels) const {
    return typex::cross_entropy(fc(x), labels);
  }
};
BOOST_HANA_ADAPT_STRUCT(classifier, fc);

int main() {
  classifier model;
  typex::init_module(model, 9);
#ifdef TYPEX_CF_FIXED
  using label_dtype = typex::i64;
#else
  using label_dtype = typex::f32;  // the mistake: class indices as floats
#endif
  using xs = typex::shape<batch, typex::fix<20>>;
  using ys = typex::shape<batch>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(4), {}))),
                                             typex::input<"labels">(typex::tensor_spec<label_dtype, ys>(ys(batch(4)))));
  const auto loss = program.module()(typex::tensor<typex::f32, batch, typex::fix<20>>({4, 20}, "x"),
                                     typex::tensor<label_dtype, batch>({4}, "labels"));
  return loss() >= 0.0f ? 0 : 1;
}
