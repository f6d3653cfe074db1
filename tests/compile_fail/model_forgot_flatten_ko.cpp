// Compile-fail pair "model_forgot_flatten": a Linear applied to a conv's [N, C, H, W] output without
// the Flatten in between (PyTorch would multiply the last dim only), the result used afterwards.
// expect: typex::nn::Linear \(in_features = 5408\) takes \[..., 5408\]; its input is \[batch, 32, 13, 13\]: dim 3 is 13, not 5408; its dims after the first hold 5408 elements: flatten them first
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 256>;
struct net {
  nn::Conv2d<1, 32, 3> conv;
  nn::MaxPool2d<typex::pool2d_options{.kernel = {2, 2}}> pool;
  nn::Linear<5408, 10> head;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = pool(typex::relu(conv(x)));
#ifdef TYPEX_CF_FIXED
    return typex::log_softmax<1>(head(typex::flatten<1>(h)));
#else
    return typex::log_softmax<1>(head(h));  // the mistake: no flatten
#endif
  }
};
BOOST_HANA_ADAPT_STRUCT(net, conv, pool, head);

int main() {
  net model;
  typex::init_module(model, 5);
  using xs = typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), {}, {}, {}))));
  typex::tensor<typex::f32, batch, typex::fix<1>, typex::fix<28>, typex::fix<28>> x({2, 1, 28, 28}, "x");
  const auto out = model(x);
  return out(0, 3) < 0 && program.graph().nodes().size() > 3 ? 0 : 1;
}
