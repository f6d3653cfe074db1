// typex demo: export an MLP (784 -> 512 -> ReLU -> 512 -> ReLU -> 10) with the batch dynamic,
// print the exported program, run it on the Eigen backend, and check it against eager execution.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace demo {
using batch = typex::sym<"batch", 1, 1024>;

// A model is a struct of parameters and submodules with a templated call operator: called with
// tensors it computes, called with traced values it is recorded.
struct mlp {
  typex::nn::Linear<784, 512> fc1;
  typex::nn::Linear<512, 512> fc2;
  typex::nn::Linear<512, 10> head;

  template <class X>
  auto operator()(const X& x) const {
    const auto h1 = typex::relu(fc1(x));
    const auto h2 = typex::relu(fc2(h1));
    return head(h2);
  }
};
}  // namespace demo
BOOST_HANA_ADAPT_STRUCT(demo::mlp, fc1, fc2, head);

int main() try {
  using namespace typex;
  using demo::batch;

  demo::mlp model;
  init_module(model, /*seed=*/42);  // PyTorch's default init schemes, deterministic

  // 1. export: the input is f32[batch, 784], batch in [1, 1024] (an example value of 8)
  using x_shape = shape<batch, fix<784>>;
  const auto t0 = std::chrono::steady_clock::now();
  const auto program = export_program(model, input<"x">(tensor_spec<f32, x_shape>(x_shape(batch(8), {}))));
  const auto t1 = std::chrono::steady_clock::now();
  std::cout << program << '\n';
  std::printf("exported in %.1f us\n\n", std::chrono::duration<double, std::micro>(t1 - t0).count());

  // 2. run it on the Eigen backend for two batch sizes, and compare with eager execution
  const auto run = program.module();
  for (index_t b : {1, 64}) {
    tensor<f32, batch, fix<784>> x({b, 784}, "input 'x'");
    init::generator g(7, "x");
    init::uniform_(x, 0.0, 1.0, g);
    const auto exported = run(x);  // tensor<f32, batch, fix<10>>
    const auto eager = model(x);
    double worst = 0;
    for (index_t i = 0; i < eager.numel(); ++i)
      worst = std::max(worst, std::abs(double(exported.data()[i]) - double(eager.data()[i])));
    std::printf("batch %3lld: exported %s == eager %s, max |difference| = %g\n", static_cast<long long>(b),
                exported.to_string().c_str(), eager.to_string().c_str(), worst);
    if (worst != 0.0) {
      std::printf("MISMATCH between the exported program and eager execution\n");
      return 1;
    }
  }

  // 3. a wrong input is an error naming the input, the expected and the actual shape
  try {
    const auto erased = static_cast<const exported_program&>(program).module();
    (void)erased({any_tensor(dtype::f32, {2048, 784})});
  } catch (const typex::error& e) {
    std::printf("\nrejected at run time: %s\n", e.what());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
