// Fused attention on the CUDA backend (kernels/attention.cuh), shared by the emulated tests
// (unit/cuda/attention.cpp) and the GPU's (unit/cuda_gpu/programs.cpp): programs of one
// scaled_dot_product_attention at shapes that take every path of the kernel, each run on the Eigen
// backend (the math path) and on a CUDA device, NaN exactly where the Eigen backend has NaN.
#pragma once

#include "cuda_axis.hpp"
#include "cuda_patterns.hpp"
#include "support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/eigen.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace cuda_attention_tests {
using namespace typex;

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

namespace cuda_attention_tests {
using namespace typex;

using typex_test::pattern;

// Whether the CUDA backend runs the program's attention node as the fused kernel.
inline bool runs_fused(const exported_program& ep) {
  for (const ir::node& n : ep.graph().nodes())
    if (n.op == ir::node_op::call_function && n.target == op_id_of<scaled_dot_product_attention_op>) return cuda::supports(ep.graph(), n);
  return false;
}

struct attention_case {
  std::string name;
  exported_program ep;
  std::vector<any_tensor> inputs;
  bool fused = true;       // the fused kernel (one launch), else the math path
  std::size_t nans = 0;    // NaN elements of the output (rows whose every key is masked out)
};

// The programs: partial tiles (37 queries, 45 keys), E != Ev and key / value without the query's
// leading batch dim; the causal mask with more queries than keys and fewer; a broadcast boolean
// mask with rows that exclude every key; an additive mask over batch entries holding -inf; the
// largest head dim (128) with an explicit scale; a head dim past it (the math path).
inline std::vector<attention_case> attention_cases() {
  std::vector<attention_case> cases;
  cases.push_back({"partial tiles, E 20 / Ev 24, broadcast batch",
                   export_program(plain{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<37>, fix<20>>>()),
                                  input<"k">(tensor_spec<f32, shape<fix<3>, fix<45>, fix<20>>>()),
                                  input<"v">(tensor_spec<f32, shape<fix<3>, fix<45>, fix<24>>>())),
                   {pattern({2, 3, 37, 20}, 1, 2.0), pattern({3, 45, 20}, 2, 2.0), pattern({3, 45, 24}, 3)}});
  cases.push_back({"causal, 70 queries over 33 keys",
                   export_program(causal{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<70>, fix<16>>>()),
                                  input<"k">(tensor_spec<f32, shape<fix<2>, fix<33>, fix<16>>>()),
                                  input<"v">(tensor_spec<f32, shape<fix<2>, fix<33>, fix<8>>>())),
                   {pattern({2, 70, 16}, 4, 3.0), pattern({2, 33, 16}, 5, 3.0), pattern({2, 33, 8}, 6)}});
  cases.push_back({"causal, 40 queries over 100 keys",
                   export_program(causal{}, input<"q">(tensor_spec<f32, shape<fix<1>, fix<2>, fix<40>, fix<32>>>()),
                                  input<"k">(tensor_spec<f32, shape<fix<1>, fix<2>, fix<100>, fix<32>>>()),
                                  input<"v">(tensor_spec<f32, shape<fix<1>, fix<2>, fix<100>, fix<33>>>())),
                   {pattern({1, 2, 40, 32}, 7, 2.0), pattern({1, 2, 100, 32}, 8, 2.0), pattern({1, 2, 100, 33}, 9)}});
  {  // a [37, 45] boolean mask over every batch entry; rows 3 and 36 exclude every key
    any_tensor mask(dtype::b8, {37, 45});
    for (index_t i = 0; i < 37; ++i)
      for (index_t j = 0; j < 45; ++j) mask.data<bool>()[i * 45 + j] = i != 3 && i != 36 && (i * 7 + j * 3) % 5 != 0;
    cases.push_back({"a broadcast boolean mask with fully masked rows",
                     export_program(masked{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<37>, fix<16>>>()),
                                    input<"k">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<16>>>()),
                                    input<"v">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<16>>>()),
                                    input<"m">(tensor_spec<b8, shape<fix<37>, fix<45>>>())),
                     {pattern({2, 3, 37, 16}, 10, 2.0), pattern({2, 3, 45, 16}, 11, 2.0), pattern({2, 3, 45, 16}, 12), mask},
                     true,
                     2 * 3 * 2 * 16});
  }
  {  // an additive [2, 1, 1, 45] mask (per batch entry and key, over heads and queries), -inf on some keys
    any_tensor mask = pattern({2, 1, 1, 45}, 13, 4.0);
    for (index_t j = 0; j < 90; j += 7) mask.data<float>()[j] = -std::numeric_limits<float>::infinity();
    cases.push_back({"an additive mask with -inf",
                     export_program(masked{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<33>, fix<8>>>()),
                                    input<"k">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<8>>>()),
                                    input<"v">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<8>>>()),
                                    input<"m">(tensor_spec<f32, shape<fix<2>, fix<1>, fix<1>, fix<45>>>())),
                     {pattern({2, 3, 33, 8}, 14, 2.0), pattern({2, 3, 45, 8}, 15, 2.0), pattern({2, 3, 45, 8}, 16), mask}});
  }
  {  // key and value with more batch dims than the query ([3, L, E] against [2, 3, S, E]), a rank-1
     // boolean mask over the keys
    any_tensor mask(dtype::b8, {45});
    for (index_t j = 0; j < 45; ++j) mask.data<bool>()[j] = j % 4 != 1;
    cases.push_back({"a query with fewer batch dims than the keys, a rank-1 mask",
                     export_program(masked{}, input<"q">(tensor_spec<f32, shape<fix<3>, fix<37>, fix<8>>>()),
                                    input<"k">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<8>>>()),
                                    input<"v">(tensor_spec<f32, shape<fix<2>, fix<3>, fix<45>, fix<12>>>()),
                                    input<"m">(tensor_spec<b8, shape<fix<45>>>())),
                     {pattern({3, 37, 8}, 23, 2.0), pattern({2, 3, 45, 8}, 24, 2.0), pattern({2, 3, 45, 12}, 25), mask}});
  }
  cases.push_back({"an additive [L, 1] mask (per query)",
                   export_program(masked{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<35>, fix<8>>>()),
                                  input<"k">(tensor_spec<f32, shape<fix<2>, fix<40>, fix<8>>>()),
                                  input<"v">(tensor_spec<f32, shape<fix<2>, fix<40>, fix<8>>>()),
                                  input<"m">(tensor_spec<f32, shape<fix<35>, fix<1>>>())),
                   {pattern({2, 35, 8}, 26, 2.0), pattern({2, 40, 8}, 27, 2.0), pattern({2, 40, 8}, 28), pattern({35, 1}, 29, 3.0)}});
  cases.push_back({"E = Ev = 128, scale 0.3",
                   export_program(scaled{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<33>, fix<128>>>()),
                                  input<"k">(tensor_spec<f32, shape<fix<2>, fix<70>, fix<128>>>()),
                                  input<"v">(tensor_spec<f32, shape<fix<2>, fix<70>, fix<128>>>())),
                   {pattern({2, 33, 128}, 17), pattern({2, 70, 128}, 18), pattern({2, 70, 128}, 19)}});
  cases.push_back({"E = 37, Ev = 72, causal: padded groups of the keys, four value columns per lane, the last tile's 3 keys one at a time",
                   export_program(causal{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<35>, fix<37>>>()),
                                  input<"k">(tensor_spec<f32, shape<fix<2>, fix<50>, fix<37>>>()),
                                  input<"v">(tensor_spec<f32, shape<fix<2>, fix<50>, fix<72>>>())),
                   {pattern({2, 35, 37}, 30), pattern({2, 50, 37}, 31), pattern({2, 50, 72}, 32)}});
  cases.push_back({"E = 136: the math path",
                   export_program(scaled{}, input<"q">(tensor_spec<f32, shape<fix<2>, fix<9>, fix<136>>>()),
                                  input<"k">(tensor_spec<f32, shape<fix<2>, fix<11>, fix<136>>>()),
                                  input<"v">(tensor_spec<f32, shape<fix<2>, fix<11>, fix<8>>>())),
                   {pattern({2, 9, 136}, 20), pattern({2, 11, 136}, 21), pattern({2, 11, 8}, 22)},
                   false});
  return cases;
}

// Runs every case on the Eigen backend and on `gpu` (graphs on and off where `both_graphs`);
// `launches`, where given, counts the device's launches of one call (the emulated device's).
inline void check_attention_cases(const std::shared_ptr<cuda::device_runtime>& gpu, bool both_graphs,
                                  const std::function<std::size_t()>& launches = {}) {
  for (const attention_case& c : attention_cases()) {
    INFO(c.name);
    CHECK(runs_fused(c.ep) == c.fused);
    const program_module<eigen_backend> cpu_run(c.ep);
    const any_tensor want = cpu_run(c.inputs)[0];
    std::vector<any_tensor> dev;
    for (const any_tensor& t : c.inputs) dev.push_back(cuda::to_device(t, gpu));
    for (const bool graphs : {true, false}) {
      if (!graphs && !both_graphs) break;
      INFO("graphs " << graphs);
      const program_module<cuda_backend> gpu_run(c.ep, {.device = gpu, .graphs = graphs});
      (void)gpu_run(dev);  // (the plan made, the graph captured)
      const std::size_t before = launches ? launches() : 0;
      const any_tensor got = cuda::to_host(gpu_run(dev)[0]);
      if (launches) {
        if (c.fused) CHECK(launches() - before == 1);
        else CHECK(launches() - before > 1);
      }
      REQUIRE(got.extents() == want.extents());
      double worst = 0;
      std::size_t nans = 0;
      for (index_t i = 0; i < want.numel(); ++i) {
        const float a = got.data<float>()[i], b = want.data<float>()[i];
        if (std::isnan(b)) {
          ++nans;
          CHECK_MESSAGE(std::isnan(a), "element " << i << ": " << a << " where the Eigen backend has NaN");
          continue;
        }
        CHECK_MESSAGE(!std::isnan(a), "element " << i << ": NaN where the Eigen backend has " << b);
        worst = std::max(worst, std::abs(static_cast<double>(a) - static_cast<double>(b)));
      }
      CHECK(nans == c.nans);
      CHECK(worst <= 2e-6);
    }
  }
}


// attention's backward ops (typex.attention_stats, then typex.scaled_dot_product_attention_backward
// for the query, the key and the value) at every case's shapes, masks and scale, with the output
// the Eigen backend computes and an output gradient: on the CUDA device (the fused kernels where
// the head dims are at most 64, the math path past it) against the Eigen backend's kernels, NaN
// exactly where it has NaN (rows whose every key is masked out).
// `launches`, where given, counts the device's launches of a call: where every node runs fused, one
// for the statistics, one for the query's gradient and one for the key's and the value's together.
inline void check_attention_backward_cases(const std::shared_ptr<cuda::device_runtime>& gpu, const std::function<std::size_t()>& launches = {}) {
  const typex_test::backend_under_test cpu = typex_test::eigen_backend_under_test();
  const typex_test::backend_under_test dev = typex_test::cuda_backend_under_test("cuda", gpu);
  std::size_t case_number = 0;
  for (const attention_case& c : attention_cases()) {
    INFO(c.name);
    // the gradients asked for: all three (the key's and value's in one pass), and on every third case
    // the value's before the key's (the pass found from the value's node), the key's alone, the value's alone
    std::vector<std::vector<std::int64_t>> asked{{0, 1, 2}};
    if (case_number++ % 3 == 0) asked.insert(asked.end(), {{2, 1}, {1}, {2}});
    for (const std::vector<std::int64_t>& grads : asked) {
    CAPTURE(grads.size());
    CAPTURE(grads.front());
    const ir::node* att = nullptr;
    for (const ir::node& n : c.ep.graph().nodes())
      if (n.op == ir::node_op::call_function && n.target == op_id_of<scaled_dot_product_attention_op>) att = &n;
    REQUIRE(att != nullptr);
    const bool causal = att->args.size() > 5 && std::holds_alternative<bool>(att->args[5]) && std::get<bool>(att->args[5]);
    const index_t e = c.inputs[0].extents().back(), ev = c.inputs[2].extents().back();
    const double scale = att->args.size() > 6 && std::holds_alternative<double>(att->args[6]) ? std::get<double>(att->args[6])
                                                                                             : 1.0 / std::sqrt(static_cast<double>(e));
    const bool masked = c.inputs.size() > 3;
    const any_tensor out = program_module<eigen_backend>(c.ep)(c.inputs)[0];
    const any_tensor g = pattern(out.extents(), 40, 1.5);
    ir::graph gr;
    const auto placeholder = [&](const any_tensor& t) {
      return ir::value_ref{gr.add_placeholder("arg", {t.scalar_type(), std::vector<ir::sym_expr>(t.extents().begin(), t.extents().end())})};
    };
    const auto call = [&](op_id op, std::vector<ir::argument> args) {
      std::vector<ir::tensor_meta> vals = ir::infer_meta(gr, op, args);
      return ir::value_ref{gr.add_call({.target = op, .args = std::move(args), .vals = std::move(vals)})};
    };
    const ir::value_ref pg = placeholder(g), pq = placeholder(c.inputs[0]), pk = placeholder(c.inputs[1]), pv = placeholder(c.inputs[2]),
                        po = placeholder(out);
    const ir::argument mask = masked ? ir::argument(placeholder(c.inputs[3])) : ir::argument(ir::none_t{});
    const ir::value_ref st = call(op_id_of<attention_stats_op>, {pq, pk, pg, po, mask, causal, scale});
    std::vector<ir::value_ref> outs{st};
    for (const std::int64_t which : grads) outs.push_back(call(op_id_of<attention_backward_op>, {pg, pq, pk, pv, st, mask, causal, scale, which}));
    gr.set_output(outs);
    std::vector<any_tensor> in{g, c.inputs[0], c.inputs[1], c.inputs[2], out};
    if (masked) in.push_back(c.inputs[3]);
    bool fused = true;
    for (const ir::node& n : gr.nodes())
      if (n.op == ir::node_op::call_function) fused = fused && cuda::supports(gr, n);
    CHECK(fused == (c.fused && e <= cuda::attention_backward_max_head && ev <= cuda::attention_backward_max_head));
    const std::vector<any_tensor> want = cpu.run(gr, in);
    const std::size_t before = launches ? launches() : 0;
    const std::vector<any_tensor> got = dev.run(gr, in);
    if (launches && fused) {
      const auto has = [&](std::int64_t w) { return std::find(grads.begin(), grads.end(), w) != grads.end(); };
      CHECK(launches() - before == 1 + (has(0) ? 1u : 0u) + (has(1) || has(2) ? 1u : 0u));
    }
    REQUIRE(got.size() == want.size());
    for (std::size_t o = 0; o < want.size(); ++o) {
      const std::int64_t which = o == 0 ? -1 : grads[o - 1];
      INFO((which < 0 ? "the statistics" : which == 0 ? "the query's gradient" : which == 1 ? "the key's gradient" : "the value's gradient"));
      REQUIRE(got[o].extents() == want[o].extents());
      double worst = 0;
      bool nans_agree = true;
      for (index_t i = 0; i < want[o].numel(); ++i) {
        const double a = got[o].data<float>()[i], b = want[o].data<float>()[i];
        if (std::isnan(a) || std::isnan(b) || std::isinf(b)) {
          nans_agree = nans_agree && (std::isnan(a) == std::isnan(b)) && (std::isnan(b) || a == b);
          continue;
        }
        worst = std::max(worst, std::abs(a - b) / (1.0 + std::abs(b)));
      }
      CHECK(nans_agree);
      CHECK(worst <= 1e-5);
    }
    }
  }
}
}  // namespace cuda_attention_tests
