// Programs whose sizes the data decide (nonzero, masked_select) on the CUDA backend, emulated: the
// compaction kernel (kernels/select.cuh) on sizes across its chunks and rounds, every item size,
// -0.0 and NaN as torch's nonzero sees them (f16 too), broadcast masks; programs run node by node on
// the device (the kit's stepwise engine) against the Eigen backend, with ops after the
// data-dependent ones that read their sizes, a weight, a call with no tensor argument; eager calls
// on device tensors; empty, 0-d and mis-shaped inputs.
#include "../cuda_patterns.hpp"
#include "../support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/data_dependent.hpp>
#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/backend/eigen.hpp>
#include <typex/ir/call.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

using namespace typex;

namespace cuda_select_tests {
// nonzero and masked_select, and ops after them on their data-dependent sizes
struct pick {
  parameter<f32, fix<5>> w;  // (a weight: the stepwise engine uploads it)
  template <class X, class M>
  auto operator()(const X& x, const M& m) const {
    const auto hits = nonzero<"hits">(x);              // [hits, 2]
    const auto kept = masked_select<"kept">(x, m);     // [kept]: the mask [N] expands to x's rows
    const auto cols = select<1>(hits, 1);              // [hits]
    return std::tuple(hits, mul(kept, 2.0), sum(kept), add(cols, 1), nonzero<"big">(gt(x, 0.5)), mul(w, 3.0));
  }
};
struct pick_ints {
  template <class X, class M>
  auto operator()(const X& x, const M& m) const {
    return std::tuple(nonzero<"n">(x), masked_select<"k">(x, m), masked_select<"b">(m, m));
  }
};
// a call with no tensor argument (arange) of a data-dependent size
struct ranks {
  template <class X>
  auto operator()(const X& x) const {
    const auto hits = nonzero<"h">(x);
    return add(arange(hits.shape().template get<0>(), device_of(x)), select<1>(hits, 1));
  }
};
}  // namespace cuda_select_tests
BOOST_HANA_ADAPT_STRUCT(cuda_select_tests::pick, w);
BOOST_HANA_ADAPT_STRUCT(cuda_select_tests::pick_ints);
BOOST_HANA_ADAPT_STRUCT(cuda_select_tests::ranks);

namespace {
// x [3, n]: zeros every third element, -0.0 (zero to nonzero) every seventh, NaN (not zero) every
// 101st, the rest the pattern's values; the mask [n] keeps each column whose index is not 2 mod 5
// and never a NaN's column.
std::vector<any_tensor> pick_inputs(index_t n) {
  any_tensor x = typex_test::pattern({3, n}, 11);
  float* d = x.data<float>();
  for (index_t i = 0; i < x.numel(); ++i) {
    if (i % 3 == 0) d[i] = 0.0f;
    if (i % 7 == 0) d[i] = -0.0f;
    if (i % 101 == 50) d[i] = std::numeric_limits<float>::quiet_NaN();
  }
  any_tensor m(dtype::b8, {n});
  for (index_t i = 0; i < n; ++i) {
    bool nan_column = false;
    for (index_t r = 0; r < 3; ++r) nan_column = nan_column || std::isnan(d[r * n + i]);
    m.data<bool>()[i] = i % 5 != 2 && !nan_column;
  }
  return {x, m};
}

// Every output equal: i64 and bool exactly, f32 exactly but for the sum (its order), NaN where NaN.
void check_same(const std::vector<any_tensor>& got_dev, const std::vector<any_tensor>& want, std::size_t sum_at) {
  REQUIRE(got_dev.size() == want.size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    INFO("output " << o);
    const any_tensor got = cuda::to_host(got_dev[o]);
    REQUIRE(got.scalar_type() == want[o].scalar_type());
    REQUIRE(got.extents() == want[o].extents());
    if (o == sum_at) {
      CHECK(std::abs(got.data<float>()[0] - want[o].data<float>()[0]) <= 1e-3f);
      continue;
    }
    CHECK(std::memcmp(got.raw_data(), want[o].raw_data(), got.nbytes()) == 0);
  }
}
}  // namespace

TEST_CASE("cuda data-dependent: nonzero and masked_select run node by node on the device, equal the Eigen backend, across chunks and rounds") {
  cuda_select_tests::pick m;
  for (index_t i = 0; i < 5; ++i) m.w.data()[i] = 0.5f * static_cast<float>(i);
  const auto gpu = cuda::make_emulated_device();
  // (n: one round, a round's edge, a partial round, two chunks with a tail: 4096 elements a chunk)
  for (const index_t n : {index_t{1}, index_t{85}, index_t{256}, index_t{1400}, index_t{2731}}) {
    INFO("x [3, " << n << "]");
    using N = sym<"n", 1, 4096>;
    const exported_program ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, N>>(shape<fix<3>, N>({}, N(n)))),
                                               input<"m">(tensor_spec<b8, shape<N>>(shape<N>(N(n)))));
    const std::vector<any_tensor> in = pick_inputs(n);
    const program_module<eigen_backend> cpu(ep);
    const program_module<cuda_backend> dev(ep, {.device = gpu});
    const auto want = cpu(in);
    const auto got = dev({cuda::to_device(in[0], gpu), cuda::to_device(in[1], gpu)});
    check_same(got, want, 2);
    // (the data give sizes in [0, numel]: a run with every element zero gives empty results)
    any_tensor zero(dtype::f32, {3, n});
    std::memset(zero.raw_data(), 0, zero.nbytes());
    any_tensor none(dtype::b8, {n});
    std::memset(none.raw_data(), 0, none.nbytes());
    const auto empty = dev({cuda::to_device(zero, gpu), cuda::to_device(none, gpu)});
    CHECK(empty[0].extents() == std::vector<index_t>{0, 2});
    CHECK(empty[1].extents() == std::vector<index_t>{0});
    CHECK(cuda::to_host(empty[2]).data<float>()[0] == 0.0f);
  }
}

TEST_CASE("cuda data-dependent: every item size: nonzero of int64, masked_select of int64 and of bool, a mask [N, 1] expanded") {
  cuda_select_tests::pick_ints f;
  const auto gpu = cuda::make_emulated_device();
  const index_t rows = 70, cols = 130;  // (9100 elements: three chunks)
  any_tensor x(dtype::i64, {rows, cols});
  for (index_t i = 0; i < x.numel(); ++i) x.data<std::int64_t>()[i] = i % 4 == 0 ? 0 : (i * 2654435761LL) % 1000 - 500;
  any_tensor m(dtype::b8, {rows, 1});
  for (index_t r = 0; r < rows; ++r) m.data<bool>()[r] = r % 3 != 1;
  const exported_program ep = export_program(f, input<"x">(tensor_spec<i64, shape<fix<70>, fix<130>>>()),
                                             input<"m">(tensor_spec<b8, shape<fix<70>, fix<1>>>()));
  const auto want = program_module<eigen_backend>(ep)({x, m});
  const auto got = program_module<cuda_backend>(ep, {.device = gpu})({cuda::to_device(x, gpu), cuda::to_device(m, gpu)});
  check_same(got, want, want.size());
  CHECK(want[1].extents()[0] == 47 * 130);  // (rows not 1 mod 3: 47 of 70)
}

TEST_CASE("cuda data-dependent: the compaction kernel's count and write passes, launched alone, on a 3-d strided condition") {
  // (the kernel as the engine launches it, against a host loop: a condition read through strides,
  // f64 with -0.0 and NaN, three chunks)
  const auto gpu = cuda::make_emulated_device();
  const index_t a = 5, b = 41, c = 47;  // 9635 elements
  std::vector<double> cond(static_cast<std::size_t>(a * b * c));
  for (std::size_t i = 0; i < cond.size(); ++i) cond[i] = i % 5 == 0 ? 0.0 : i % 11 == 0 ? -0.0 : i % 13 == 0 ? NAN : double(i);
  std::vector<std::int64_t> want;
  for (index_t i = 0; i < a; ++i)
    for (index_t j = 0; j < b; ++j)
      for (index_t k = 0; k < c; ++k)
        if (cond[static_cast<std::size_t>((i * b + j) * c + k)] != 0.0) want.insert(want.end(), {i, j, k});
  any_tensor host(dtype::f64, {a, b, c});
  std::memcpy(host.raw_data(), cond.data(), host.nbytes());
  const any_tensor dev = cuda::to_device(host, gpu);
  std::vector<const any_tensor*> tensors{&dev};
  const std::vector<ir::argument> args{ir::value_ref{0}};
  const ir::call_args call(op_id_of<aten::nonzero>, args, tensors);
  const any_tensor got = cuda::to_host(cuda::nonzero_on_device(call));
  REQUIRE(got.extents() == std::vector<index_t>{static_cast<index_t>(want.size() / 3), 3});
  CHECK(std::memcmp(got.raw_data(), want.data(), got.nbytes()) == 0);
  // the launch refuses what the kernel does not take
  cuda::select_params bad;
  bad.n = 10;
  bad.rank = 1;
  bad.extent[0] = 10;
  bad.cond = dev.raw_data();
  bad.cond_itemsize = 3;
  CHECK_THROWS_AS(cuda::select_launch(bad), argument_error);
}

namespace {
any_tensor call_on_device(op_id op, const std::vector<const any_tensor*>& tensors) {
  std::vector<ir::argument> args;
  for (std::size_t k = 0; k < tensors.size(); ++k) args.emplace_back(ir::value_ref{static_cast<ir::node_id>(k)});
  const ir::call_args call(op, args, tensors);
  return cuda::to_host(op == op_id_of<aten::nonzero> ? cuda::nonzero_on_device(call) : cuda::masked_select_on_device(call));
}
}  // namespace

TEST_CASE("cuda data-dependent: a call without tensors of a data-dependent size, eager calls on device tensors, 0-d, empty and mis-shaped inputs, f16 signs") {
  const auto gpu = cuda::make_emulated_device();
  {  // arange(hits) + hits[:, 1]: the arange has no tensor to say its device; the engine's runtime runs it
    cuda_select_tests::ranks f;
    const exported_program ep = export_program(f, input<"x">(tensor_spec<f32, shape<fix<4>, fix<6>>>()));
    any_tensor x = typex_test::pattern({4, 6}, 3);
    for (index_t i = 0; i < x.numel(); i += 3) x.data<float>()[i] = 0.0f;
    const auto want = program_module<eigen_backend>(ep)({x});
    const auto got = cuda::to_host(program_module<cuda_backend>(ep, {.device = gpu})({cuda::to_device(x, gpu)})[0]);
    REQUIRE(got.extents() == want[0].extents());
    CHECK(std::memcmp(got.raw_data(), want[0].raw_data(), got.nbytes()) == 0);
  }
  {  // eager: nonzero and masked_select of device tensors, typed as on the host
    host_tensor<f32, shape_c<3, 4>> z;
    for (index_t i = 0; i < 12; ++i) z.data()[i] = (i % 5 == 0) ? 1.5f : 0.0f;
    host_tensor<b8, shape_c<4>> cols;
    for (index_t i = 0; i < 4; ++i) cols.data()[i] = (i % 2 == 0);
    const auto dz = cuda::to_device(z, gpu);
    const auto idx = nonzero<"hits">(dz);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(idx)>, cuda::device_tensor<i64, shape<sym<"hits", 0, 12>, fix<2>>>>);
    const auto want = nonzero<"hits">(z).erase();
    const any_tensor got = cuda::to_host(idx.erase());
    REQUIRE(got.extents() == want.extents());
    CHECK(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()) == 0);
    const any_tensor kept = cuda::to_host(masked_select<"kept">(dz, cuda::to_device(cols, gpu)).erase());
    const any_tensor kept_host = masked_select<"kept">(z, cols).erase();
    REQUIRE(kept.extents() == kept_host.extents());
    CHECK(std::memcmp(kept.raw_data(), kept_host.raw_data(), kept.nbytes()) == 0);
  }
  const auto on = [&](const any_tensor& t) { return cuda::to_device(t, gpu); };
  {  // a 0-d self: [1, 0] or [0, 0]; an empty one: [0, rank]
    any_tensor one(dtype::f32, {}), zero(dtype::f32, {}), empty(dtype::f32, {0, 3});
    one.data<float>()[0] = 2.0f;
    zero.data<float>()[0] = -0.0f;
    const any_tensor d1 = on(one), d0 = on(zero), de = on(empty);
    CHECK(call_on_device(op_id_of<aten::nonzero>, {&d1}).extents() == std::vector<index_t>{1, 0});
    CHECK(call_on_device(op_id_of<aten::nonzero>, {&d0}).extents() == std::vector<index_t>{0, 0});
    CHECK(call_on_device(op_id_of<aten::nonzero>, {&de}).extents() == std::vector<index_t>{0, 2});
  }
  {  // f16: +0 and -0 are zero; NaN, a subnormal and 1 are not (the sign bit ignored, the rest compared)
    any_tensor h(dtype::f16, {6});
    const std::uint16_t bits[6] = {0x0000, 0x8000, 0x7E00, 0x0001, 0x3C00, 0x8000};
    std::memcpy(h.raw_data(), bits, sizeof bits);
    const any_tensor dh = on(h);
    const any_tensor got = call_on_device(op_id_of<aten::nonzero>, {&dh});
    REQUIRE(got.extents() == std::vector<index_t>{3, 1});
    CHECK((got.data<std::int64_t>()[0] == 2 && got.data<std::int64_t>()[1] == 3 && got.data<std::int64_t>()[2] == 4));
  }
  {  // masks that do not expand to self, or are not bool: a shape_error naming both, nothing read past them
    const any_tensor self = on(typex_test::pattern({3, 4}, 1));
    any_tensor wide(dtype::b8, {5}), deep(dtype::b8, {2, 3, 4});
    std::memset(wide.raw_data(), 1, wide.nbytes());
    std::memset(deep.raw_data(), 1, deep.nbytes());
    const any_tensor dw = on(wide), dd = on(deep), df = on(typex_test::pattern({4}, 2));
    for (const any_tensor* m : {&dw, &dd, &df}) {
      CHECK_THROWS_WITH_AS(call_on_device(op_id_of<aten::masked_select>, {&self, m}), doctest::Contains("a bool mask that expands to self's"),
                           shape_error);
    }
  }
}
