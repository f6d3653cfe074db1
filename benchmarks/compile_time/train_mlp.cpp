// Compile-time unit: the mlp of export_mlp.cpp trained — exported with its loss, made a joint
// forward/backward program (typex/export/joint.hpp), one SGD step (the translation unit a user writes
// to train this model: typex.hpp, typex::nn, the joint program, an optimizer, the Eigen backend).
#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using net_t = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<512, 512>, typex::nn::ReLU, typex::nn::Linear<512, 10>>;
struct model_t {
  BOOST_HANA_DEFINE_STRUCT(model_t, (net_t, net));
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return typex::cross_entropy(net(x), y);
  }
};
using s = typex::shape<batch, typex::fix<784>>;

int train_step() {
  model_t model;
  typex::init_module(model, 1);
  const auto ep = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(32), {}))),
                                        typex::input<"y">(typex::tensor_spec<typex::i64, typex::shape<batch>>()));
  const typex::exported_program joint = typex::make_joint(ep);
  auto step = joint.module();
  typex::optim::sgd opt(step.parameters(), {.lr = 0.01});
  const auto out = step({typex::any_tensor(typex::dtype::f32, {32, 784}), typex::any_tensor(typex::dtype::i64, {32})});
  opt.step(typex::read_joint_outputs(joint, out).gradients);
  return static_cast<int>(out.size());
}
