// Trains a small CNN (conv 3x3 1->16, ReLU, max-pool 2, conv 3x3 16->32, ReLU, max-pool 2, linear
// 128->10) on the 8x8 handwritten digits with a joint forward/backward program and Adam, printing
// a line per epoch; fails (exit 1) below 95% test accuracy.
// Usage: train_digits_cnn [path to examples/data/digits.txt] [--device cpu|cuda|emulated] [--epochs N] [--batches N] [--compare-cpu]
#include "digits.hpp"

namespace digits {
struct cnn {
  typex::nn::Conv2d<1, 16, 3, typex::conv2d_options{.padding = {1, 1}}> conv1;
  typex::nn::Conv2d<16, 32, 3, typex::conv2d_options{.padding = {1, 1}}> conv2;
  typex::nn::Linear<32 * 2 * 2, 10> fc;
  template <class X>
  auto operator()(const X& x) const {
    constexpr typex::pool2d_options pool{.kernel = {2, 2}};
    const auto h = typex::max_pool2d<pool>(typex::relu(conv1(x)));           // [batch, 16, 4, 4]
    const auto g = typex::max_pool2d<pool>(typex::relu(conv2(h)));           // [batch, 32, 2, 2]
    return fc(typex::flatten<1>(g));
  }
};
}  // namespace digits
BOOST_HANA_ADAPT_STRUCT(digits::cnn, conv1, conv2, fc);

int main(int argc, char** argv) try {
  using namespace typex;
  bool full = true;
  const double accuracy = digits::train<digits::cnn, shape<digits::batch, fix<1>, fix<8>, fix<8>>>(digits::parse(argc, argv), {1, 8, 8}, 16, 2e-3, full);
  std::printf("CNN test accuracy: %.1f%% (%s)\n", 100.0 * accuracy, full ? "target: at least 95%" : "a shortened run: no target");
  return !full || accuracy >= 0.95 ? 0 : 1;  // (fewer epochs: no target)
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_digits_cnn: %s\n", e.what());
  return 1;
}
