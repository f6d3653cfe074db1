// Compile-fail pair "no_backend": this twin runs an exported program without including a backend
// (the export layer names none: the default, TYPEX_DEFAULT_BACKEND, is defined by the backend's
// header). One error, no cascade: g++'s first line names program_module<eigen_backend>, the next
// the sentence (which header to include); clang's first line is the sentence.
// expect: static assertion failed: typex: exported_program::module\(\) needs a backend that runs programs: include <typex/backend/eigen.hpp>
// expect-clang: error: static assertion failed.*needs a backend that runs programs: include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using mlp = typex::nn::Sequential<typex::nn::Linear<16, 4>, typex::nn::ReLU>;

int main() {
  const mlp model;
  using s = typex::shape<batch, typex::fix<16>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(2), {}))));
  auto run = program.module();
  const typex::tensor<typex::f32, batch, typex::fix<16>> x({3, 16});
  const auto y = run(x);
  return y.extents()[0] == 3 ? 0 : 1;
}
