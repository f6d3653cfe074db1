// Fused attention on the emulated device (kernels/attention.cuh): scaled_dot_product_attention as
// one launch, against the Eigen backend's math path, at shapes that take every path of the kernel
// (cuda_attention.hpp: partial tiles, E != Ev, broadcast batch dims, the causal mask with more
// queries than keys and fewer, boolean masks with rows that exclude every key (NaN, as PyTorch's
// math path), additive masks holding -inf, an explicit scale, the largest head dim (128: the 48 KiB
// of shared memory), and a head dim past it (the math path, several launches)); the launch
// record's checks.
#include "../cuda_attention.hpp"

#include <typex/backend/cuda/emulated_device.hpp>

using namespace typex;

TEST_CASE("cuda attention: partial tiles, broadcast batch dims, causal and boolean / additive masks run as one launch equal to the math path") {
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  cuda_attention_tests::check_attention_cases(gpu, false, [emu] { return emu->launches(); });
  CHECK(cuda::attention_shared_bytes(128, 128) == 48 * 1024);  // (the largest head dim: no opt-in)
}

TEST_CASE("cuda attention: the backward's statistics and the query's, key's and value's gradients (fused up to head dim 64) equal the Eigen backend's") {
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  cuda_attention_tests::check_attention_backward_cases(gpu, [emu] { return emu->launches(); });
  // (the key's and value's pass keeps two weight tiles: still within 48 KiB at head dim 64)
  CHECK(cuda::attention_backward_shared_bytes(64, 64, true) <= 48 * 1024);
}

TEST_CASE("cuda attention: the shared tiles' rows (queries to a multiple of 4, keys to a power of two of at least 32, values 64 or 128)") {
  const auto same = [](cuda::attention_layout a, int q, int k, int v) { return a.q_stride == q && a.k_stride == k && a.v_stride == v; };
  CHECK(same(cuda::attention_tiles(20, 24), 20, 32, 64));
  CHECK(same(cuda::attention_tiles(37, 72), 40, 64, 128));
  CHECK(same(cuda::attention_tiles(64, 64), 64, 64, 64));
  CHECK(same(cuda::attention_tiles(65, 65), 68, 128, 128));
  CHECK(same(cuda::attention_tiles(128, 128), 128, 128, 128));
  CHECK(same(cuda::attention_tiles(0, 1), 0, 32, 64));
  CHECK(cuda::attention_value_columns(64) == 2);
  CHECK(cuda::attention_value_columns(65) == 4);
  CHECK(cuda::attention_shared_bytes(64, 64) == 24 * 1024);
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
