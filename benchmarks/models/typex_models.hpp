// The benchmark workloads (workloads.hpp) as typex models, and their weights filled from each
// parameter's name: the same models and numbers for every typex benchmark (the Eigen backend's,
// models_eigen.cpp, and the CUDA backend's, benchmarks/cuda/models_cuda.cpp).
#pragma once

#include "workloads.hpp"

#include <typex/typex.hpp>

#include <cstddef>

namespace bench {
using batch = typex::sym<"batch", 1, 1024>;
using mlp_model = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<512, 512>, typex::nn::ReLU,
                                        typex::nn::Linear<512, 10>>;
using cnn_model = typex::nn::Sequential<typex::nn::Conv2d<1, 32, 3>, typex::nn::ReLU, typex::nn::Conv2d<32, 64, 3>, typex::nn::ReLU,
                                        typex::nn::MaxPool2d<typex::pool2d_options{.kernel = {2, 2}}>, typex::nn::Flatten<>,
                                        typex::nn::Linear<64 * 12 * 12, 128>, typex::nn::ReLU, typex::nn::Linear<128, 10>>;
using transformer_model = typex::nn::TransformerEncoderLayer<256, 4, 1024, typex::nn::activation::gelu, false, true>;

// Each parameter from its name (workloads.hpp's fill_weights; fan-in: the elements per output row).
template <class M>
void fill(M& m) {
  for (auto& [name, t] : typex::named_parameters(m)) {
    const auto n = static_cast<std::size_t>(t.numel());
    fill_weights(name, t.template data<float>(), n, t.rank() >= 2 ? n / static_cast<std::size_t>(t.extents()[0]) : n);
  }
}
}  // namespace bench
