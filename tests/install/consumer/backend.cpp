// A consumer of typex's Eigen backend: a model exported and run, == eager. Built against the
// typex::eigen library (find_package: the installed library and its exported target;
// add_subdirectory: the library built from typex's sources) and header-only (vendored headers,
// without CMake).
#include <typex/backend/eigen.hpp>
#include <typex/nn.hpp>
#include <typex/typex.hpp>

#include <cstdio>

using batch = typex::sym<"batch", 1, 64>;
using net = typex::nn::Sequential<typex::nn::Linear<8, 16>, typex::nn::GELU, typex::nn::Linear<16, 4>>;

int main() {
  using namespace typex;
  net model;
  init_module(model, 3);
  using x_shape = shape<batch, fix<8>>;
  const auto program = export_program(model, input<"x">(tensor_spec<f32, x_shape>(x_shape(batch(2), {}))));
  tensor<f32, batch, fix<8>> x({5, 8});
  for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  const auto y = program.module()(x);
  const auto want = model(x);
  bool same = y.numel() == 20;
  for (index_t i = 0; same && i < y.numel(); ++i) same = y.data()[i] == want.data()[i];
#if defined(TYPEX_EIGEN_SEPARATE_COMPILATION)
  const char* form = "typex::eigen library";
#else
  const char* form = "header-only";
#endif
  std::printf("typex backend consumer (%s): %zu nodes, %s\n", form, program.graph().size(), same ? "ok" : "WRONG");
  return same ? 0 : 1;
}
