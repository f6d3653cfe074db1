// Programs whose sizes the data decide (nonzero, masked_select) on the CUDA backend, emulated: the
// compaction kernel (kernels/select.cuh) on sizes across its chunks and rounds, every item size,
// -0.0 and NaN as torch's nonzero sees them (f16 too), broadcast masks; programs run node by node on
// the device (the kit's stepwise engine) against the Eigen backend, with ops after the
// data-dependent ones that read their sizes, a weight, a call with no tensor argument; eager calls
// on device tensors; empty, 0-d and mis-shaped inputs. masked_scatter (masked_select's gradient),
// planned: against the Eigen backend's kernel across chunks, broadcast, every item size; the scan of
// more than 256 chunks; a source too short; a training step through masked_select.
#include "../cuda_patterns.hpp"
#include "../support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/data_dependent.hpp>
#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
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
// a loss through masked_select: its gradient is a masked_scatter of the incoming gradient
struct picked_loss {
  parameter<f32, fix<3>, fix<700>> w;
  template <class X, class M>
  auto operator()(const X& x, const M& m) const {
    return sum(mul(masked_select<"k">(mul(x, w), m), 0.5));
  }
};
// a product in a program run node by node (nonzero makes it so): the module's compile options reach it
struct product_after {
  parameter<f32, fix<24>, fix<16>> w;
  template <class X>
  auto operator()(const X& x) const {
    return std::tuple(nonzero<"n">(x), matmul(x, w));
  }
};
struct product_only {
  parameter<f32, fix<24>, fix<16>> w;
  template <class X>
  auto operator()(const X& x) const {
    return matmul(x, w);
  }
};
}  // namespace cuda_select_tests
BOOST_HANA_ADAPT_STRUCT(cuda_select_tests::product_after, w);
BOOST_HANA_ADAPT_STRUCT(cuda_select_tests::product_only, w);
BOOST_HANA_ADAPT_STRUCT(cuda_select_tests::picked_loss, w);
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

namespace {
// aten.masked_scatter(self, mask, source) of host tensors: on the device (a one-node program,
// planned: eager.hpp's run_call) and by the Eigen backend's kernel
any_tensor scatter_on(const std::shared_ptr<cuda::device_runtime>& gpu, const any_tensor& self, const any_tensor& mask, const any_tensor& source) {
  const any_tensor s = cuda::to_device(self, gpu), m = cuda::to_device(mask, gpu), src = cuda::to_device(source, gpu);
  const std::vector<const any_tensor*> tensors{&s, &m, &src};
  const std::vector<ir::argument> args{ir::value_ref{0}, ir::value_ref{1}, ir::value_ref{2}};
  return cuda::to_host(cuda::detail::run_call(ir::call_args(op_id_of<aten::masked_scatter>, args, tensors)));
}
any_tensor scatter_eigen(const any_tensor& self, const any_tensor& mask, const any_tensor& source) {
  const std::vector<const any_tensor*> tensors{&self, &mask, &source};
  const std::vector<ir::argument> args{ir::value_ref{0}, ir::value_ref{1}, ir::value_ref{2}};
  return eigen::find_kernel(op_id_of<aten::masked_scatter>)(ir::call_args(op_id_of<aten::masked_scatter>, args, tensors));
}
any_tensor bool_pattern(const std::vector<index_t>& extents, index_t period, index_t phase) {
  any_tensor m(dtype::b8, extents);
  for (index_t i = 0; i < m.numel(); ++i) m.data<bool>()[i] = (i * 7 + phase) % period < period / 2 + 1;
  return m;
}
}  // namespace

TEST_CASE("cuda data-dependent: masked_scatter runs planned on the device (count, scan, scatter passes) and equals the Eigen backend") {
  const auto gpu = cuda::make_emulated_device();
  SUBCASE("across chunks and rounds, self and mask broadcast, items of 4, 8 and 1 bytes") {
    struct shapes {
      std::vector<index_t> self, mask;
    };
    // (10,000 and 9,100 elements: three chunks of 4,096, their tails partial rounds)
    for (const shapes& sh : {shapes{{5, 2000}, {2000}}, shapes{{1, 2000}, {5, 2000}}, shapes{{70, 130}, {70, 1}}, shapes{{7}, {7}}}) {
      INFO("self " << any_tensor(dtype::f32, sh.self).to_string() << ", mask " << any_tensor(dtype::b8, sh.mask).to_string());
      const any_tensor mask = bool_pattern(sh.mask, 5, 3);
      const any_tensor self = typex_test::pattern(sh.self, 4);
      index_t out_n = 1;  // (the broadcast shape's element count: the most the mask can select)
      for (std::size_t k = 0; k < std::max(sh.self.size(), sh.mask.size()); ++k) {
        const index_t a = k < sh.self.size() ? sh.self[sh.self.size() - 1 - k] : 1, b = k < sh.mask.size() ? sh.mask[sh.mask.size() - 1 - k] : 1;
        out_n *= std::max(a, b);
      }
      const any_tensor source = typex_test::pattern({out_n + 3}, 9);  // (longer than needed: the rest unread)
      const any_tensor want = scatter_eigen(self, mask, source);
      const any_tensor got = scatter_on(gpu, self, mask, source);
      REQUIRE(got.extents() == want.extents());
      CHECK(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()) == 0);
      // int64 and bool items: the bits moved as they are
      any_tensor self64(dtype::i64, sh.self), source64(dtype::i64, {out_n});
      for (index_t i = 0; i < self64.numel(); ++i) self64.data<std::int64_t>()[i] = -i - 1;
      for (index_t i = 0; i < out_n; ++i) source64.data<std::int64_t>()[i] = (i << 33) + i;
      const any_tensor want64 = scatter_eigen(self64, mask, source64), got64 = scatter_on(gpu, self64, mask, source64);
      CHECK(std::memcmp(got64.raw_data(), want64.raw_data(), got64.nbytes()) == 0);
      const any_tensor selfb = bool_pattern(sh.self, 3, 1), sourceb = bool_pattern({out_n}, 4, 2);
      const any_tensor wantb = scatter_eigen(selfb, mask, sourceb), gotb = scatter_on(gpu, selfb, mask, sourceb);
      CHECK(std::memcmp(gotb.raw_data(), wantb.raw_data(), gotb.nbytes()) == 0);
    }
  }
  SUBCASE("torch's result on a small case: self [1, 3] broadcast against the mask [2, 3]") {
    // torch.tensor([[1., 2., 3.]]).masked_scatter(torch.tensor([[True, False, True], [False, True, False]]),
    //                                             torch.tensor([10., 20., 30., 40.])) = [[10, 2, 20], [1, 30, 3]]
    any_tensor self(dtype::f32, {1, 3}), mask(dtype::b8, {2, 3}), source(dtype::f32, {4});
    for (index_t i = 0; i < 3; ++i) self.data<float>()[i] = static_cast<float>(i + 1);
    const bool mk[6] = {true, false, true, false, true, false};
    std::memcpy(mask.raw_data(), mk, sizeof mk);
    for (index_t i = 0; i < 4; ++i) source.data<float>()[i] = 10.0f * static_cast<float>(i + 1);
    const float want[6] = {10, 2, 20, 1, 30, 3};
    for (const any_tensor& got : {scatter_eigen(self, mask, source), scatter_on(gpu, self, mask, source)}) {
      REQUIRE(got.extents() == std::vector<index_t>{2, 3});
      CHECK(std::memcmp(got.raw_data(), want, sizeof want) == 0);
    }
  }
  SUBCASE("a source shorter than the mask's count: an argument_error naming the node, no read past its end") {
    const any_tensor self = typex_test::pattern({3, 5}, 1), mask = bool_pattern({3, 5}, 3, 0);
    index_t selected = 0;
    for (index_t i = 0; i < mask.numel(); ++i) selected += mask.data<bool>()[i] ? 1 : 0;
    REQUIRE((selected > 1 && selected < 15));  // (some selected, some not)
    CHECK_THROWS_WITH_AS(scatter_on(gpu, self, mask, typex_test::pattern({selected - 1}, 2)),
                         doctest::Contains("(aten.masked_scatter.default)'s mask selects more elements than its source has"), argument_error);
    CHECK_THROWS_AS(scatter_eigen(self, mask, typex_test::pattern({selected - 1}, 2)), shape_error);  // (the host's check)
    // (exactly as many: fine)
    const any_tensor exact = typex_test::pattern({selected}, 2);
    CHECK(std::memcmp(scatter_on(gpu, self, mask, exact).raw_data(), scatter_eigen(self, mask, exact).raw_data(), 15 * sizeof(float)) == 0);
  }
  SUBCASE("the scan pass over more than 256 chunks, launched alone: each chunk's exclusive prefix sum") {
    cuda::select_params p;
    p.kind = cuda::select_kind::scan;
    p.n = 600 * cuda::select_chunk - 17;  // (600 chunks: three rounds of 256, the last partial)
    p.rank = 1;
    p.extent[0] = p.n;
    any_tensor counts(dtype::i64, {600});
    std::vector<std::int64_t> want(600);
    std::int64_t total = 0;
    for (index_t k = 0; k < 600; ++k) {
      counts.data<std::int64_t>()[k] = (k * 37) % 4097;
      want[static_cast<std::size_t>(k)] = total;
      total += (k * 37) % 4097;
    }
    const any_tensor dev = cuda::to_device(counts, gpu);
    p.counts = reinterpret_cast<std::int64_t*>(dev.raw_data());
    gpu->launch(cuda::select_launch(p), "the scan");
    gpu->synchronize();
    const any_tensor got = cuda::to_host(dev);
    CHECK(std::memcmp(got.raw_data(), want.data(), 600 * sizeof(std::int64_t)) == 0);
    // (a scatter without its error word is refused at launch)
    p.kind = cuda::select_kind::scatter;
    p.cond = dev.raw_data();
    p.offsets = p.counts;
    p.src = dev.raw_data();
    p.out = p.counts;
    p.itemsize = 8;
    CHECK_THROWS_AS(cuda::select_launch(p), argument_error);
  }
}

TEST_CASE("cuda data-dependent: a training step through masked_select on the device: its gradient, masked_scatter, equals the Eigen backend's") {
  cuda_select_tests::picked_loss m;
  for (index_t i = 0; i < 3 * 700; ++i) m.w.erase().data<float>()[i] = 0.01f * static_cast<float>(i % 97) - 0.3f;
  const exported_program ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<3>, fix<700>>>()),
                                             input<"m">(tensor_spec<b8, shape<fix<700>>>()));
  const exported_program joint = make_joint(ep);
  const auto gpu = cuda::make_emulated_device();
  const any_tensor x = typex_test::pattern({3, 700}, 5), mask = bool_pattern({700}, 3, 2);
  const auto want = program_module<eigen_backend>(joint)({x, mask});
  const auto got = program_module<cuda_backend>(joint, {.device = gpu})({cuda::to_device(x, gpu), cuda::to_device(mask, gpu)});
  REQUIRE(got.size() == want.size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    INFO("output " << o << " " << want[o].to_string());
    const any_tensor g = cuda::to_host(got[o]);
    REQUIRE(g.extents() == want[o].extents());
    float worst = 0.0f;  // (the sum's order differs: relative to the value's size)
    for (index_t i = 0; i < g.numel(); ++i)
      worst = std::max(worst, std::abs(g.data<float>()[i] - want[o].data<float>()[i]) / (1.0f + std::abs(want[o].data<float>()[i])));
    CHECK(worst <= 1e-5f);
  }
}

TEST_CASE("cuda data-dependent: a program run node by node takes the module's compile options (its products' precision), and refuses cuDNN where the build has none") {
  const auto gpu = cuda::make_emulated_device();
  cuda_select_tests::product_after stepwise;
  cuda_select_tests::product_only planned;
  const any_tensor w = typex_test::pattern({24, 16}, 5);
  std::memcpy(stepwise.w.data(), w.raw_data(), w.nbytes());
  std::memcpy(planned.w.data(), w.raw_data(), w.nbytes());
  const auto spec = input<"x">(tensor_spec<f32, shape<fix<12>, fix<24>>>());
  const exported_program ep_step = export_program(stepwise, spec);
  const exported_program ep_plan = export_program(planned, spec);
  const any_tensor x = typex_test::pattern({12, 24}, 9);
  const any_tensor xd = cuda::to_device(x, gpu);
  std::vector<any_tensor> at_f32;
  for (const cuda::matmul_precision p : {cuda::matmul_precision::f32, cuda::matmul_precision::tf32, cuda::matmul_precision::bf16,
                                         cuda::matmul_precision::f16}) {
    INFO(cuda::name(p));
    const cuda::compile_options o{.device = gpu, .matmul_precision = p};
    const any_tensor got = cuda::to_host(program_module<cuda_backend>(ep_step, o)({xd})[1]);
    const any_tensor want = cuda::to_host(program_module<cuda_backend>(ep_plan, o)({xd})[0]);
    REQUIRE(got.extents() == want.extents());
    // (the one-node product lowered as the planned program lowers it: the same rounding, bit for bit)
    CHECK(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()) == 0);
    if (p == cuda::matmul_precision::f32) at_f32.push_back(got);
    else CHECK(std::memcmp(got.raw_data(), at_f32.front().raw_data(), got.nbytes()) != 0);  // (the option took effect)
  }
  if (!cuda::has_cudnn()) {  // (as the planned engine: refused when the module is made, naming the option)
    const cuda::compile_options o{.device = gpu, .convolutions = cuda::conv_engine::cudnn};
    CHECK_THROWS_WITH_AS(program_module<cuda_backend>(ep_step, o)({xd}), doctest::Contains("conv_engine::cudnn"), unsupported_error);
    CHECK_THROWS_WITH_AS(program_module<cuda_backend>(ep_plan, o)({xd}), doctest::Contains("conv_engine::cudnn"), unsupported_error);
  }
}
