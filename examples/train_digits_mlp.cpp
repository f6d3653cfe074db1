// Trains an MLP (64 -> 128 -> ReLU -> 64 -> ReLU -> 10) on the 8x8 handwritten digits with a joint
// forward/backward program and Adam, printing a line per epoch; fails (exit 1) below 95% test
// accuracy. Usage: train_digits_mlp [path to examples/data/digits.txt] [--device cpu|cuda|emulated] [--epochs N] [--batches N] [--compare-cpu]
#include "digits.hpp"

namespace digits {
struct mlp {
  typex::nn::Linear<64, 128> fc1;
  typex::nn::Linear<128, 64> fc2;
  typex::nn::Linear<64, 10> fc3;
  template <class X>
  auto operator()(const X& x) const {
    return fc3(typex::relu(fc2(typex::relu(fc1(x)))));
  }
};
}  // namespace digits
BOOST_HANA_ADAPT_STRUCT(digits::mlp, fc1, fc2, fc3);

int main(int argc, char** argv) try {
  bool full = true;
  const double accuracy = digits::train<digits::mlp, typex::shape<digits::batch, typex::fix<64>>>(digits::parse(argc, argv), {64}, 24, 2e-3, full);
  std::printf("MLP test accuracy: %.1f%% (%s)\n", 100.0 * accuracy, full ? "target: at least 95%" : "a shortened run: no target");
  return !full || accuracy >= 0.95 ? 0 : 1;  // (fewer epochs: no target)
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_digits_mlp: %s\n", e.what());
  return 1;
}
