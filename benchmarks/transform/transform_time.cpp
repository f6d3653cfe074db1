// Time of program transformations on deep programs: run_decompositions (passes::decompose with the
// default table, everything to core), the verifier (with every node's shape rule), the passes
// (DCE, CSE, folding) and the DOT picture, on
//   - an MLP of N layers (linear + GELU), built directly with the graph builder;
//   - a stack of N transformer encoder layers: one exported TransformerEncoderLayer's graph
//     stamped N times, each layer reading the previous one's output and its own parameters.
// Each row is the median of 5 runs (after one warm-up), with the time per node, so that linear
// growth reads as a constant column. Not a test: `./build/<preset>/benchmarks/typex_transform_time`.
#include <typex/typex.hpp>
#include <typex/export/decompositions.hpp>
#include <typex/ir/dot.hpp>
#include <typex/passes/cse.hpp>
#include <typex/passes/dce.hpp>
#include <typex/passes/decompose.hpp>
#include <typex/passes/fold.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {
using namespace typex;

// a + b + ... as one string (not "x" + std::to_string(i): g++ 12 -O2 warns falsely about that, -Wrestrict)
template <class... T>
std::string cat(const T&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

ir::graph deep_mlp(int layers) {
  ir::graph g;
  const ir::sym_expr batch = ir::sym_expr::symbol("batch");
  const ir::sym_expr width(index_t{64});
  std::vector<std::pair<ir::node_id, ir::node_id>> params;
  for (int i = 0; i < layers; ++i)
    params.emplace_back(g.add_placeholder(cat("p_", std::to_string(i), "_weight"), {dtype::f32, {width, width}}),
                        g.add_placeholder(cat("p_", std::to_string(i), "_bias"), {dtype::f32, {width}}));
  const ir::node_id x = g.add_placeholder("x", {dtype::f32, {batch, width}});
  passes::graph_builder b(g);
  ir::value_ref h{x};
  for (int i = 0; i < layers; ++i) {
    b.set_origin({{std::to_string(i), "typex::nn::Linear<64, 64>"}}, "bench.cpp:1 in forward");
    h = b.emit(op_id_of<linear_op>, {h, ir::value_ref{params[static_cast<std::size_t>(i)].first},
                                     ir::value_ref{params[static_cast<std::size_t>(i)].second}});
    h = b.emit(op_id_of<gelu_op>, {h});
  }
  g.set_output({h});
  return g;
}

// One exported encoder layer's graph, stamped `layers` times.
ir::graph deep_transformer(int layers) {
  using batch = sym<"batch", 1, 64>;
  using seq = sym<"seq", 1, 512>;
  const nn::TransformerEncoderLayer<64, 4, 128, nn::activation::gelu, false, true> layer{};
  using s = shape<batch, seq, fix<64>>;
  const auto ep = export_program(layer, input<"src">(tensor_spec<f32, s>(s(batch(2), seq(16), {}))));
  const ir::graph& one = ep.graph();
  const std::vector<ir::node_id> ph = one.placeholders();
  const ir::node_id src = ph.back();  // (the user input comes last)
  ir::graph g;
  std::vector<std::vector<ir::node_id>> params(static_cast<std::size_t>(layers));
  for (int l = 0; l < layers; ++l)
    for (std::size_t k = 0; k + 1 < ph.size(); ++k)
      params[static_cast<std::size_t>(l)].push_back(
          g.add_placeholder(cat("l", std::to_string(l), "_", one[ph[k]].name), one[ph[k]].vals.front()));
  ir::value_ref h{g.add_placeholder("src", one[src].vals.front())};
  for (int l = 0; l < layers; ++l) {
    std::vector<ir::value_ref> remap(one.size(), ir::value_ref{0});
    for (std::size_t k = 0; k + 1 < ph.size(); ++k) remap[ph[k]] = ir::value_ref{params[static_cast<std::size_t>(l)][k]};
    remap[src] = h;
    const auto moved = [&](ir::argument a) {
      if (auto* r = std::get_if<ir::value_ref>(&a)) *r = ir::value_ref{remap[r->node].node, r->index};
      else if (auto* rs = std::get_if<std::vector<ir::value_ref>>(&a))
        for (auto& x : *rs) x = ir::value_ref{remap[x.node].node, x.index};
      return a;
    };
    for (ir::node_id i = 0; i < one.size(); ++i) {
      const ir::node& n = one[i];
      if (n.op != ir::node_op::call_function) continue;
      ir::call c{.target = n.target, .vals = n.vals, .name_hint = n.name, .stack_trace = n.stack_trace};
      for (const auto& a : n.args) c.args.push_back(moved(a));
      c.nn_module_stack = n.nn_module_stack;
      for (auto& f : c.nn_module_stack) f.path = f.path.empty() ? cat("layers.", std::to_string(l)) : cat("layers.", std::to_string(l), ".", f.path);
      remap[i] = ir::value_ref{g.add_call(std::move(c))};
    }
    h = std::get<ir::value_ref>(moved(one.output().args.front()));
  }
  g.set_output({h});
  return g;
}

// The median of 5 timed runs of f (after one warm-up); `setup` runs before each, untimed.
double median_ms(const std::function<void()>& f, const std::function<void()>& setup = [] {}) {
  setup();
  f();  // (warm-up)
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    setup();
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[2];
}

void row(const char* program, int layers, const ir::graph& g) {
  const passes::decomposition_table core = passes::decomposition_table::core();
  ir::graph lowered;
  const double decompose = median_ms([&] { lowered = passes::decompose(g, core); });
  const double verify = median_ms([&] { ir::verify(g); });
  const double verify_core = median_ms([&] { ir::verify(lowered, {.in_dialect = &ir::core_dialect}); });
  ir::graph c;
  const auto fresh = [&] { c = lowered; };
  const double dce = median_ms([&] { (void)passes::eliminate_dead_code(c); }, fresh);
  const double cse = median_ms([&] { (void)passes::eliminate_common_subexpressions(c); }, fresh);
  const double fold = median_ms([&] { (void)passes::fold(c); }, fresh);
  std::string dot_text;
  const double dot = median_ms([&] { dot_text = ir::to_dot(lowered); });
  const double per = 1e6 / static_cast<double>(lowered.size());  // (ms -> ns per node)
  std::printf("| %-11s | %5d | %7zu | %7zu | %9.1f | %9.1f | %9.1f | %7.1f | %7.1f | %7.1f | %7.1f | %6.0f |\n", program, layers, g.size(),
              lowered.size(), decompose, verify, verify_core, dce, cse, fold, dot, decompose * per);
}
}  // namespace

int main(int argc, char** argv) {
  // `--once mlp|transformer <depth>`: one decomposition only (for valgrind --tool=callgrind:
  // instructions per node, which a loaded machine cannot blur)
  if (argc == 4 && std::string(argv[1]) == "--once") {
    const int depth = std::stoi(argv[3]);
    const ir::graph g = std::string(argv[2]) == "mlp" ? deep_mlp(depth) : deep_transformer(depth);
    const ir::graph lowered = passes::decompose(g, passes::decomposition_table::core());
    std::printf("%zu nodes -> %zu\n", g.size(), lowered.size());
    return 0;
  }
  std::printf("| program     | depth | nodes   | core    | decompose | verify    | verify co | DCE     | CSE     | fold    | DOT     | ns/node (decompose) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int depth : {256, 1024, 4096, 10000}) row("MLP", depth, deep_mlp(depth));
  for (int depth : {64, 256, 1024}) row("transformer", depth, deep_transformer(depth));
  std::printf("(times in ms, median of 5 after a warm-up; the passes run on a fresh copy of the core program each time)\n");
}
