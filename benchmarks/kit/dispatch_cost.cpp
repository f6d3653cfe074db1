// The backend kit's dispatch cost on the Eigen backend (issue 35): N calls of a small MLP (64-64-10,
// batch 4) as a planned program ("p") or eagerly ("e"). Small on purpose: the per-call work outside
// the kernels (the executor, supports, the kernel registry, the eager runner) is what a refactor of
// the dispatch changes. Compare two builds by instruction counts (no hardware counters on this VM):
//   valgrind --tool=callgrind ./typex_kit_dispatch 200 p   (and 1 p: the difference / 199 per call)
// benchmarks/README.md, "The backend kit", has the numbers.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>
#include <cstdio>
#include <cstdlib>
using namespace typex;
using batch = sym<"batch", 1, 1024>;
struct mlp {
  nn::Linear<64, 64> fc1;
  nn::Linear<64, 64> fc2;
  nn::Linear<64, 10> head;
  template <class X>
  auto operator()(const X& x) const { return head(relu(fc2(relu(fc1(x))))); }
};
BOOST_HANA_ADAPT_STRUCT(mlp, fc1, fc2, head);
int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100;
  const bool eager = argc > 2 && argv[2][0] == 'e';
  mlp model;
  init_module(model, 1);
  using xs = shape<batch, fix<64>>;
  const auto ep = export_program(model, input<"x">(tensor_spec<f32, xs>(xs(batch(8), {}))));
  const program_module<eigen_backend> run(static_cast<const exported_program&>(ep));
  tensor<f32, batch, fix<64>> x({4, 64});
  std::vector<any_tensor> in{x.erase()}, out;
  double s = 0;
  for (int i = 0; i < n; ++i) {
    if (eager) {
      const auto y = model(x);
      s += y.data()[0];
    } else {
      run.run(in, out);
      s += out[0].data<float>()[0];
    }
  }
  std::printf("%g\n", s);
}
