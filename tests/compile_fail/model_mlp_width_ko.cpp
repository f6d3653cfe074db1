// Compile-fail pair "model_mlp_width": a Linear of the wrong width in the middle of an MLP, with the
// model run eagerly, exported, and both results used afterwards, as a user's file does. One error,
// the first, and it is the sentence (no cascade into the head, the eager result or the program).
// expect: typex::nn::Linear \(in_features = 256\) takes \[..., 256\]; its input is \[batch, 512\]: dim 1 is 512, not 256 \(make in_features 512
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
struct mlp {
  typex::nn::Linear<784, 512> fc1;
#ifdef TYPEX_CF_FIXED
  typex::nn::Linear<512, 512> fc2;
#else
  typex::nn::Linear<256, 512> fc2;  // the mistake: fc1 gives 512 features
#endif
  typex::nn::Linear<512, 10> head;
  template <class X>
  auto operator()(const X& x) const {
    const auto h1 = typex::relu(fc1(x));
    const auto h2 = typex::relu(fc2(h1));
    return head(h2);
  }
};
BOOST_HANA_ADAPT_STRUCT(mlp, fc1, fc2, head);

int main() {
  mlp model;
  typex::init_module(model, 1);
  using xs = typex::shape<batch, typex::fix<784>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(8), {}))));
  typex::tensor<typex::f32, batch, typex::fix<784>> x({4, 784}, "x");
  const auto eager = model(x);
  const auto run = program.module();
  const auto exported = run(x);
  const float a = eager(0, 9), b = exported(0, 9);
  return a == b && eager.shape().get<1>() == 10 ? 0 : 1;
}
