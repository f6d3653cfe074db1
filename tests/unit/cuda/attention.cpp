// Fused attention on the emulated device (kernels/attention.cuh): scaled_dot_product_attention as
// one launch, against the Eigen backend's math path, at shapes that take every path of the kernel:
// query and key counts that are not multiples of the 32-row tiles, key and value head dims that
// differ, batch dims that broadcast (a key without the query's batch dim, a mask over heads), the
// causal mask with more queries than keys and fewer, boolean masks with rows that exclude every key
// (NaN, as PyTorch's math path), additive masks holding -inf, an explicit scale, the largest head
// dim (128: the 48 KiB of shared memory), and a head dim past it (the math path, several launches).
#include "../support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/backend/eigen.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace typex;

namespace {

any_tensor pattern(std::vector<index_t> extents, std::uint64_t seed, double amplitude = 1.0) {
  any_tensor t(dtype::f32, extents);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 11;
  for (index_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    t.data<float>()[i] = static_cast<float>(amplitude * (static_cast<double>(s % 20001) / 10000.0 - 1.0));
  }
  return t;
}

// Runs ep on the Eigen backend and on the emulated device; the largest difference over the output,
// NaN exactly where the Eigen backend has NaN. `launches`: the device's kernel launches of one call.
struct comparison {
  double worst = 0;
  std::size_t nans = 0, launches = 0;
};
comparison compare(const exported_program& ep, const std::vector<any_tensor>& inputs) {
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  const program_module<eigen_backend> cpu_run(ep);
  const program_module<cuda_backend> gpu_run(ep, {.device = gpu});
  std::vector<any_tensor> dev;
  for (const any_tensor& t : inputs) dev.push_back(cuda::to_device(t, gpu));
  const any_tensor want = cpu_run(inputs)[0];
  (void)gpu_run(dev);  // (the plan made)
  const std::size_t before = emu->launches();
  const any_tensor got = cuda::to_host(gpu_run(dev)[0]);
  comparison r;
  r.launches = emu->launches() - before;
  REQUIRE(got.extents() == want.extents());
  for (index_t i = 0; i < want.numel(); ++i) {
    const float a = got.data<float>()[i], b = want.data<float>()[i];
    if (std::isnan(b)) {
      ++r.nans;
      CHECK_MESSAGE(std::isnan(a), "element " << i << ": " << a << " where the Eigen backend has NaN");
      continue;
    }
    CHECK_MESSAGE(!std::isnan(a), "element " << i << ": NaN where the Eigen backend has " << b);
    r.worst = std::max(r.worst, std::abs(static_cast<double>(a) - static_cast<double>(b)));
  }
  return r;
}

bool runs_fused(const exported_program& ep) {
  for (const ir::node& n : ep.graph().nodes())
    if (n.op == ir::node_op::call_function && n.target == op_id_of<scaled_dot_product_attention_op>) return cuda::supports(ep.graph(), n);
  return false;
}

}  // namespace

namespace cuda_attention_tests {
struct plain {
  template <class Q, class K, class V>
  auto operator()(const Q& q, const K& k, const V& v) const { return scaled_dot_product_attention(q, k, v); }
};
struct causal {
  template <class Q, class K, class V>
  auto operator()(const Q& q, const K& k, const V& v) const { return scaled_dot_product_attention(q, k, v, nullptr, {.is_causal = true}); }
};
struct masked {
  template <class Q, class K, class V, class M>
  auto operator()(const Q& q, const K& k, const V& v, const M& m) const { return scaled_dot_product_attention(q, k, v, m); }
};
struct scaled {
  template <class Q, class K, class V>
  auto operator()(const Q& q, const K& k, const V& v) const { return scaled_dot_product_attention(q, k, v, nullptr, {.scale = 0.3}); }
};
}  // namespace cuda_attention_tests
BOOST_HANA_ADAPT_STRUCT(cuda_attention_tests::plain);
BOOST_HANA_ADAPT_STRUCT(cuda_attention_tests::causal);
BOOST_HANA_ADAPT_STRUCT(cuda_attention_tests::masked);
BOOST_HANA_ADAPT_STRUCT(cuda_attention_tests::scaled);

TEST_CASE("cuda attention: partial tiles, different key and value head dims and broadcast batch dims run as one launch equal to the math path") {
  // 37 queries (a tile and 5 rows), 45 keys (a tile and 13), E = 20, Ev = 24; the key and value
  // without the query's leading batch dim
  cuda_attention_tests::plain f;
  const exported_program ep =
      export_program(f, input<"q">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<37>, fix<20>>>()),
                     input<"k">(tensor_spec<f32, shape<fix<3>, fix<45>, fix<20>>>()), input<"v">(tensor_spec<f32, shape<fix<3>, fix<45>, fix<24>>>()));
  CHECK(runs_fused(ep));
  const comparison c = compare(ep, {pattern({2, 3, 37, 20}, 1, 2.0), pattern({3, 45, 20}, 2, 2.0), pattern({3, 45, 24}, 3)});
  CHECK(c.worst <= 2e-6);
  CHECK(c.nans == 0);
  CHECK(c.launches == 1);
}

TEST_CASE("cuda attention: the causal mask, top-left aligned, with more queries than keys and fewer") {
  cuda_attention_tests::causal f;
  {  // 70 queries over 33 keys: the rows past the keys attend to all of them
    const exported_program ep =
        export_program(f, input<"q">(tensor_spec<f32, shape<fix<2>, fix<70>, fix<16>>>()),
                       input<"k">(tensor_spec<f32, shape<fix<2>, fix<33>, fix<16>>>()), input<"v">(tensor_spec<f32, shape<fix<2>, fix<33>, fix<8>>>()));
    CHECK(runs_fused(ep));
    const comparison c = compare(ep, {pattern({2, 70, 16}, 4, 3.0), pattern({2, 33, 16}, 5, 3.0), pattern({2, 33, 8}, 6)});
    CHECK(c.worst <= 2e-6);
    CHECK(c.launches == 1);
  }
  {  // 40 queries over 100 keys: each tile stops at its last row's key
    const exported_program ep =
        export_program(f, input<"q">(tensor_spec<f32, shape<fix<1>, fix<2>, fix<40>, fix<32>>>()),
                       input<"k">(tensor_spec<f32, shape<fix<1>, fix<2>, fix<100>, fix<32>>>()),
                       input<"v">(tensor_spec<f32, shape<fix<1>, fix<2>, fix<100>, fix<33>>>()));
    const comparison c = compare(ep, {pattern({1, 2, 40, 32}, 7, 2.0), pattern({1, 2, 100, 32}, 8, 2.0), pattern({1, 2, 100, 33}, 9)});
    CHECK(c.worst <= 2e-6);
  }
}

TEST_CASE("cuda attention: a boolean mask that broadcasts, with rows that exclude every key (NaN), and an additive mask holding -inf") {
  cuda_attention_tests::masked f;
  {  // a [37, 45] boolean mask over every batch entry; rows 3 and 36 exclude every key
    any_tensor mask(dtype::b8, {37, 45});
    for (index_t i = 0; i < 37; ++i)
      for (index_t j = 0; j < 45; ++j) mask.data<bool>()[i * 45 + j] = i != 3 && i != 36 && (i * 7 + j * 3) % 5 != 0;
    const exported_program ep =
        export_program(f, input<"q">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<37>, fix<16>>>()),
                       input<"k">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<16>>>()),
                       input<"v">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<16>>>()), input<"m">(tensor_spec<b8, shape<fix<37>, fix<45>>>()));
    CHECK(runs_fused(ep));
    const comparison c = compare(ep, {pattern({2, 3, 37, 16}, 10, 2.0), pattern({2, 3, 45, 16}, 11, 2.0), pattern({2, 3, 45, 16}, 12), mask});
    CHECK(c.worst <= 2e-6);
    CHECK(c.nans == 2 * 3 * 2 * 16);  // (two rows of every batch entry)
    CHECK(c.launches == 1);
  }
  {  // an additive [2, 1, 1, 45] mask (per batch entry and key, over heads and queries), -inf on some keys
    any_tensor mask = pattern({2, 1, 1, 45}, 13, 4.0);
    for (index_t j = 0; j < 90; j += 7) mask.data<float>()[j] = -std::numeric_limits<float>::infinity();
    const exported_program ep =
        export_program(f, input<"q">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<33>, fix<8>>>()),
                       input<"k">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<8>>>()),
                       input<"v">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<8>>>()), input<"m">(tensor_spec<f32, shape<fix<2>, fix<1>, fix<1>, fix<45>>>()));
    CHECK(runs_fused(ep));
    const comparison c = compare(ep, {pattern({2, 3, 33, 8}, 14, 2.0), pattern({2, 3, 45, 8}, 15, 2.0), pattern({2, 3, 45, 8}, 16), mask});
    CHECK(c.worst <= 2e-6);
    CHECK(c.nans == 0);
  }
}

TEST_CASE("cuda attention: the largest head dim with an explicit scale, and a head dim past it that takes the math path") {
  cuda_attention_tests::scaled f;
  {  // E = Ev = 128: the query, key and value tiles fill the 48 KiB a block has without an opt-in
    const exported_program ep =
        export_program(f, input<"q">(tensor_spec<f32, shape<fix<2>, fix<33>, fix<128>>>()),
                       input<"k">(tensor_spec<f32, shape<fix<2>, fix<70>, fix<128>>>()), input<"v">(tensor_spec<f32, shape<fix<2>, fix<70>, fix<128>>>()));
    CHECK(runs_fused(ep));
    CHECK(cuda::attention_shared_bytes(128, 128) == 48 * 1024);
    const comparison c = compare(ep, {pattern({2, 33, 128}, 17), pattern({2, 70, 128}, 18), pattern({2, 70, 128}, 19)});
    CHECK(c.worst <= 2e-6);
    CHECK(c.launches == 1);
  }
  {  // E = 136: not the fused kernel (its decomposition: products, the scale, softmax)
    const exported_program ep =
        export_program(f, input<"q">(tensor_spec<f32, shape<fix<2>, fix<9>, fix<136>>>()),
                       input<"k">(tensor_spec<f32, shape<fix<2>, fix<11>, fix<136>>>()), input<"v">(tensor_spec<f32, shape<fix<2>, fix<11>, fix<8>>>()));
    CHECK_FALSE(runs_fused(ep));
    const comparison c = compare(ep, {pattern({2, 9, 136}, 20), pattern({2, 11, 136}, 21), pattern({2, 11, 8}, 22)});
    CHECK(c.worst <= 2e-6);
    CHECK(c.launches > 1);
  }
}

TEST_CASE("cuda attention: the launch record refuses what the kernel is not written for") {
  cuda::attention_params p{};
  float x = 0;
  p.q = p.k = p.v = &x;
  p.out = &x;
  p.l = 1, p.s = 1, p.e = 1, p.ev = 1;
  CHECK_NOTHROW((void)cuda::attention_launch(p));
  p.e = 129;
  CHECK_THROWS_AS((void)cuda::attention_launch(p), argument_error);
  p.e = 1;
  p.causal = true;
  p.mask_kind = cuda::attention_mask::boolean;
  p.mask = &x;
  CHECK_THROWS_AS((void)cuda::attention_launch(p), argument_error);
  p.causal = false;
  p.mask = nullptr;
  CHECK_THROWS_AS((void)cuda::attention_launch(p), argument_error);
}
