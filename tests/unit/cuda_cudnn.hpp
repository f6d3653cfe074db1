// conv2d through cuDNN (compile_options::convolutions = conv_engine::cudnn), shared by the emulated
// tests (unit/cuda/cudnn.cpp) and the GPU's (unit/cuda_gpu/programs.cpp): convolutions at shapes
// that take each fact of cuDNN's descriptors (stride, padding, dilation, groups, a 1 x 1 kernel, an
// unbatched input) with their bias and activation, the reference CNN against PyTorch, and three
// training steps of it (the backward's convolutions through cuDNN too) against the Eigen backend,
// fused and not, CUDA graphs on and off.
#pragma once

#include "cuda_patterns.hpp"
#include "cuda_training.hpp"
#include "model_cases.hpp"
#include "support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/eigen.hpp>

#include <algorithm>
#include <memory>
#include <tuple>
#include <vector>

namespace cuda_cudnn_tests {
using namespace typex;

struct convs {
  template <class I, class W, class B, class V, class U>
  auto operator()(const I& img, const W& w, const B& b, const V& w1, const U& one) const {
    const auto c1 = relu(conv2d<conv2d_options{.stride = {2, 1}, .padding = {1, 2}, .dilation = {2, 1}, .groups = 2}>(img, w, b));
    const auto c2 = conv2d<conv2d_options{}>(img, w1);                                    // 1 x 1, no bias
    const auto c3 = tanh(conv2d<conv2d_options{.padding = {1, 1}, .groups = 2}>(one, w));  // [4, 9, 7], unbatched
    return std::tuple(c1, c2, c3);
  }
};
}  // namespace cuda_cudnn_tests
BOOST_HANA_ADAPT_STRUCT(cuda_cudnn_tests::convs);

namespace cuda_cudnn_tests {

inline exported_program conv_program() {
  convs f;
  return export_program(f, input<"img">(tensor_spec<f32, shape<fix<2>, fix<4>, fix<9>, fix<7>>>()),
                        input<"w">(tensor_spec<f32, shape<fix<6>, fix<2>, fix<3>, fix<3>>>()),
                        input<"b">(tensor_spec<f32, shape<fix<6>>>()), input<"w1">(tensor_spec<f32, shape<fix<5>, fix<4>, fix<1>, fix<1>>>()),
                        input<"one">(tensor_spec<f32, shape<fix<4>, fix<9>, fix<7>>>()));
}
inline std::vector<any_tensor> conv_inputs() {
  using typex_test::pattern;
  return {pattern({2, 4, 9, 7}, 1), pattern({6, 2, 3, 3}, 2), pattern({6}, 3), pattern({5, 4, 1, 1}, 4), pattern({4, 9, 7}, 5)};
}

// The largest difference between `ep` on the Eigen backend and on the CUDA backend with options `o`
// (its device's), over every output.
inline double worst_vs_eigen(const exported_program& ep, const std::vector<any_tensor>& in, const cuda::compile_options& o) {
  const program_module<eigen_backend> cpu(ep);
  const program_module<cuda_backend> gpu(ep, o);
  std::vector<any_tensor> dev;
  for (const any_tensor& t : in) dev.push_back(cuda::to_device(t, o.device));
  const auto want = cpu(in);
  for (int call = 0; call < 2; ++call) {  // (the second call: a captured graph's replay on a GPU)
    const auto got = gpu(dev);
    REQUIRE(got.size() == want.size());
    double w = 0;
    for (std::size_t i = 0; i < got.size(); ++i) w = std::max(w, cuda_training::worst(got[i], want[i]));
    if (call == 1) return w;
    CHECK(w <= 2e-5);
  }
  return 0;
}

// Everything above on device `gpu`.
inline void check_cudnn_programs(const std::shared_ptr<cuda::device_runtime>& gpu) {
  const auto cudnn = cuda::conv_engine::cudnn;
  for (const bool fuse : {true, false})
    for (const bool graphs : {true, false}) {
      INFO("fuse " << fuse << ", graphs " << graphs);
      CHECK(worst_vs_eigen(conv_program(), conv_inputs(), {.device = gpu, .fuse = fuse, .graphs = graphs, .convolutions = cudnn}) <= 2e-5);
    }
  const auto models = parity_models::read_models();
  const parity_models::model_case& mc = models.at("cnn");
  {
    parity_models::cnn m;
    load_state_dict(m, mc.state);
    const exported_program ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<1>, fix<12>, fix<12>>>()));
    const program_module<cuda_backend> run(ep, {.device = gpu, .convolutions = cudnn});
    CHECK(typex_test::worst_abs_error(cuda::to_host(run({cuda::to_device(mc.input, gpu)})[0]), mc.output) <= 2e-5);  // (PyTorch's)
  }
  for (const bool graphs : {true, false}) {
    INFO("training, graphs " << graphs);
    cuda_training_tests::cnn_step m;
    load_state_dict(m.net, mc.state);
    const exported_program joint = make_joint(export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, fix<1>, fix<12>, fix<12>>>()),
                                                             input<"y">(tensor_spec<i64, shape<fix<3>>>())));
    program_module<eigen_backend> cpu(joint);
    program_module<cuda_backend> dev(joint, {.device = gpu, .graphs = graphs, .convolutions = cudnn});
    const auto sgd = [](const optim::param_list& p) { return optim::sgd(p, {.lr = 0.05, .momentum = 0.9}); };
    auto cpu_opt = sgd(cpu.parameters());
    auto dev_opt = sgd(dev.parameters());
    const std::vector<any_tensor> in{typex_test::pattern({3, 1, 12, 12}, 2), cuda_training::labels(3, 4)};
    const std::vector<any_tensor> din{cuda::to_device(in[0], gpu), cuda::to_device(in[1], gpu)};
    for (int s = 0; s < 3; ++s) {
      INFO("step " << s);
      const joint_outputs w = read_joint_outputs(joint, cpu(in)), g = read_joint_outputs(joint, dev(din));
      CHECK(cuda_training::worst(g.loss, w.loss) <= 1e-5);
      REQUIRE(g.gradients.size() == w.gradients.size());
      for (const auto& [fqn, grad] : w.gradients) {
        INFO("gradient of " << fqn);
        CHECK(cuda_training::worst(g.gradients.at(fqn), grad) <= 1e-5);
      }
      cpu_opt.step(w.gradients);
      dev_opt.step(g.gradients);
    }
  }
}

}  // namespace cuda_cudnn_tests
