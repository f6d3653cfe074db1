// The backend-neutral plan layer (plan/): the arena's liveness-based offsets, the fusion rules
// keyed by op type, the planner driven by a target that is not the Eigen backend (it records what
// it is asked to lower, may decline), and a backend of a user's own running programs through
// export's calling convention (program_module), with nothing of Eigen's planning.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/plan/planner.hpp>

#include <algorithm>
#include <map>

using namespace typex;

TEST_CASE("plan arena: buffers live at the same time never overlap, the others share memory") {
  plan::arena_plan a;
  // (bytes, first, last): a chain of four values, each read by the next, and one long-lived value
  const std::size_t spec[][3] = {{1000, 0, 1}, {3000, 1, 2}, {1000, 2, 3}, {3000, 3, 4}, {200, 0, 4}, {0, 2, 2}};
  for (const auto& s : spec) {
    const std::size_t id = a.add(s[0], s[1]);
    a.read({plan::location::where::arena, id, nullptr}, s[2]);
  }
  a.read({plan::location::where::input, 0, nullptr}, 9);  // (an input: no buffer, no effect)
  a.assign_offsets();
  const auto& b = a.buffers();
  REQUIRE(b.size() == 6);
  for (std::size_t i = 0; i < b.size(); ++i) {
    CHECK(a.offset(i) % plan::arena_plan::alignment == 0);
    CHECK(a.offset(i) + b[i].bytes <= a.peak());
    for (std::size_t j = i + 1; j < b.size(); ++j) {
      const bool live_together = b[i].first <= b[j].last && b[j].first <= b[i].last;
      const bool disjoint = a.offset(i) + b[i].bytes <= a.offset(j) || a.offset(j) + b[j].bytes <= a.offset(i);
      INFO("buffers " << i << " and " << j);
      if (live_together && b[i].bytes && b[j].bytes) CHECK(disjoint);
    }
  }
  CHECK(a.offset(0) == a.offset(2));  // 0 (times 0-1) and 2 (times 2-3) share memory; so do 1 and 3
  CHECK(a.offset(1) == a.offset(3));
  CHECK(a.total() == 1024 + 3008 + 1024 + 3008 + 256);
  CHECK(a.peak() == 3008 + 1024 + 256);
  a.resize(4, 5000);  // a step that writes more: placed again from scratch
  a.assign_offsets();
  CHECK(a.peak() == 5056 + 3008 + 1024);
}

namespace planner_test {
struct my_reshape {  // a user's op that is a view: it says so to the planner with add_rules
  static constexpr std::string_view target = "mylib.my_reshape.default";
};
}  // namespace planner_test

TEST_CASE("plan rules: keyed by op type, a user's op gets rules through the same table") {
  CHECK(plan::has(plan::rules_of(op_id_of<aten::reshape>), plan::rule::view));
  CHECK(plan::has(plan::rules_of(op_id_of<aten::conv2d>), plan::rule::epilogue_host));
  CHECK(plan::has(plan::rules_of(op_id_of<aten::conv2d>), plan::rule::pool_host));
  CHECK(plan::has(plan::rules_of(op_id_of<linear_op>), plan::rule::epilogue_host));
  CHECK_FALSE(plan::has(plan::rules_of(op_id_of<linear_op>), plan::rule::pool_host));
  CHECK(plan::has(plan::rules_of(op_id_of<div_op>), plan::rule::pointwise_head));
  CHECK(plan::rules_of(op_id_of<relu_op>) == plan::rule::none);  // (an activation: its own `epilogue` flag)
  CHECK(plan::rules_of(op_id_of<planner_test::my_reshape>) == plan::rule::none);
  plan::add_rules<planner_test::my_reshape>(plan::rule::view);
  CHECK(plan::rules_of(op_id_of<planner_test::my_reshape>) == plan::rule::view);
}

namespace planner_test {
using batch = sym<"batch", 1, 64>;
// fc1 + relu (an epilogue), fc2 (its reader is a mul: no epilogue), then a chain mul, add, sub;
// `table` * 0.5 reads only a buffer: folded; y's transpose is read by a matmul only: absorbed.
struct net {
  nn::Linear<8, 16> fc1;
  nn::Linear<16, 4> fc2;
  buffer<f32, fix<4>> shift;
  buffer<f32, fix<4>, fix<4>> table;
  template <class X>
  auto operator()(const X& x) const {
    const auto y = (fc2(relu(fc1(x))) * 2.0 + as_traced(shift, x)) - 1.0;
    const auto t = as_traced(table, x) * 0.5;
    const auto yy = matmul(transpose<0, 1>(y), y);
    return yy + t;
  }
};

// A target that runs nothing: it records what the planner asks it to lower (constants are folded
// on the Eigen kernels), treats relu as its only activation, and declines the ops in `decline`.
struct recording_target final : plan::target {
  std::vector<plan::step_plan> lowered;
  std::vector<ir::node_id> kernels;
  std::vector<op_id> decline;
  int evaluated = 0;
  any_tensor evaluate(const ir::node& node, std::span<const any_tensor* const> args, std::span<const any_tensor* const> list,
                      const symbol_table& symbols) override {
    ++evaluated;
    return eigen::run_kernel(eigen::kernel_args(node.target, node.args, args, &symbols, list));
  }
  bool is_activation(const ir::node& node, const symbol_table&) override { return node.target == op_id_of<relu_op>; }
  bool fuses(dtype dt) const override { return dt == dtype::f32; }
  bool reads_strided(const ir::graph&, const ir::node& u) override { return u.target == op_id_of<matmul_op>; }
  std::size_t max_chain() const override { return 4; }
  bool lower(plan::planner&, plan::step_plan& s) override {
    if (std::find(decline.begin(), decline.end(), graph->operator[](s.node).target) != decline.end()) return false;
    lowered.push_back(s);
    return true;
  }
  void lower_kernel(plan::planner&, ir::node_id n) override { kernels.push_back(n); }
  const ir::graph* graph = nullptr;
};

std::map<std::string, ir::node_id> by_name(const ir::graph& g) {
  std::map<std::string, ir::node_id> out;
  for (ir::node_id n = 0; n < g.size(); ++n) out[g[n].name] = n;
  return out;
}

// The placeholders a call feeds and the lifted tensors, as program_module binds them.
struct binding_parts {
  std::vector<ir::node_id> inputs;
  std::vector<std::pair<ir::node_id, any_tensor>> constants;
};
inline binding_parts parts_of(const exported_program& ep) {
  binding_parts b;
  const auto placeholders = ep.graph().placeholders();
  for (std::size_t i = 0; i < placeholders.size(); ++i) {
    const input_spec& s = ep.signature().input_specs()[i];
    if (s.kind == input_kind::user_input) b.inputs.push_back(placeholders[i]);
    else b.constants.emplace_back(placeholders[i], *ep.state_dict().find(s.target));
  }
  return b;
}
}  // namespace planner_test
BOOST_HANA_ADAPT_STRUCT(planner_test::net, fc1, fc2, shift, table);

TEST_CASE("plan planner: a target other than the Eigen backend gets the steps, epilogues, chains, folds and arena") {
  using namespace planner_test;
  net m;
  init_module(m, 4);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(3), {}))));
  const ir::graph& g = ep.graph();
  const auto names = by_name(g);
  // the constants: the lifted parameters and buffers, as program_module binds them
  const binding_parts b = parts_of(ep);
  plan::planner p(g, b.inputs, b.constants, {});
  recording_target t;
  t.graph = &g;
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({5, 8}, 1).erase();
  const std::vector<any_tensor> in{x};
  symbol_table symbols = ep.bind_inputs(in);
  p.plan(in, symbols, t);
  INFO(ep.to_string());
  // steps: linear + relu, linear, mul with its chain (add, sub), matmul reading the transpose, add
  REQUIRE(t.lowered.size() == 5);
  CHECK(t.kernels.empty());
  CHECK(g[t.lowered[0].node].target == op_id_of<linear_op>);
  CHECK(t.lowered[0].epilogue == names.at("relu"));
  CHECK(t.lowered[1].epilogue == plan::no_node);
  CHECK(g[t.lowered[2].node].target == op_id_of<mul_op>);
  CHECK(t.lowered[2].chain == std::vector<ir::node_id>{names.at("add"), names.at("sub")});
  CHECK(g[t.lowered[3].node].target == op_id_of<matmul_op>);
  CHECK(t.lowered[4].node == names.at("add_1"));
  const plan::report r = p.summary();
  CHECK(r.steps == 5);
  CHECK(r.fused == 1);
  CHECK(r.chained == 2);
  CHECK(r.folded == 1);  // table * 0.5
  CHECK(r.views == 1);   // the transpose, read through strides by the matmul
  CHECK(t.evaluated == 1);
  // the folded value is right, the transpose is a strided view of it, the chain shares its head's buffer
  const plan::value& folded = p.at(names.at("mul_1"));
  REQUIRE(folded.folded);
  CHECK(folded.folded->data<float>()[1] == doctest::Approx(m.table.tensor().erase().data<float>()[1] * 0.5f));
  const plan::value& tr = p.at(names.at("transpose"));
  CHECK(tr.strided());
  CHECK(tr.strides == std::vector<index_t>{1, 4});
  CHECK(p.at(names.at("sub")).at.index == p.at(names.at("mul")).at.index);
  CHECK(p.at(names.at("linear")).extents == std::vector<index_t>{5, 16});
  // every step's result has a buffer; two results live together never overlap
  const auto& arena = p.arena();
  CHECK(arena.peak() > 0);
  CHECK(arena.peak() <= arena.total());
  // a new batch: planned again, the shape-free fold is not computed again
  const auto x2 = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({7, 8}, 2).erase();
  const std::vector<any_tensor> in2{x2};
  t.lowered.clear();
  p.plan(in2, ep.bind_inputs(in2), t);
  CHECK(t.evaluated == 1);
  CHECK(p.at(names.at("linear")).extents == std::vector<index_t>{7, 16});
  // a target without a fused mul: the mul runs alone (its kernel), its chain as steps of their own
  recording_target declining;
  declining.graph = &g;
  declining.decline = {op_id_of<mul_op>};
  plan::planner q(g, b.inputs, b.constants, {});
  q.plan(in, symbols, declining);
  CHECK(declining.kernels == std::vector<ir::node_id>{names.at("mul")});
  REQUIRE(declining.lowered.size() == 5);  // linear + relu, linear, add (with the sub chained), matmul, add
  CHECK(q.summary().chained == 1);
  CHECK(q.summary().allocating_ops == std::vector<std::string>{"aten.mul.Tensor"});
  // fuse = false: one step per node
  recording_target plain;
  plain.graph = &g;
  plan::planner u(g, b.inputs, b.constants, {.fuse = false});
  u.plan(in, symbols, plain);
  CHECK(u.summary().fused == 0);
  CHECK(u.summary().chained == 0);
  CHECK(u.summary().views == 0);
  CHECK(u.summary().folded == 1);
  CHECK(plain.lowered.size() == 9);  // linear, relu, linear, mul, add, sub, transpose, matmul, add
}

namespace planner_test {
// A backend of a user's own: node by node on the Eigen kernels, no planning. It sees only the
// binding (graph, inputs, constants): export's calling convention does the rest.
struct eager_executor {
  program_binding b;
  int calls = 0;
  void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) {
    ++calls;
    const ir::graph& g = *b.graph;
    std::vector<std::optional<any_tensor>> v(g.size());
    for (const auto& [id, t] : b.constants) v[id] = t;
    for (std::size_t i = 0; i < b.inputs.size(); ++i) v[b.inputs[i]] = inputs[i];
    for (ir::node_id n = 0; n < g.size(); ++n) {
      const ir::node& node = g[n];
      if (node.op != ir::node_op::call_function || ir::is_assertion(node)) continue;
      std::vector<const any_tensor*> args(node.args.size(), nullptr);
      for (std::size_t k = 0; k < node.args.size(); ++k)
        if (const auto* r = std::get_if<ir::value_ref>(&node.args[k])) args[k] = &*v[r->node];
      v[n] = eigen::run_kernel(eigen::kernel_args(node.target, node.args, args, &symbols));
    }
    outputs.clear();
    for (const auto& a : g.output().args) outputs.push_back(*v[std::get<ir::value_ref>(a).node]);
  }
  bool planned_for(std::span<const any_tensor>) const noexcept { return false; }
  int report() const { return calls; }
};
struct eager_backend {
  struct options {};
  using executor = eager_executor;
  static std::shared_ptr<executor> compile(program_binding b, const options&) {
    return std::make_shared<executor>(executor{std::move(b)});
  }
};
static_assert(backend<eager_backend>);
static_assert(backend<eigen_backend>);
static_assert(!backend<int>);
}  // namespace planner_test

TEST_CASE("plan backend contract: a user's backend runs programs through the same calling convention") {
  using namespace planner_test;
  net m;
  init_module(m, 4);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(3), {}))));
  const program_module<eager_backend> mine(ep);
  const program_module<eigen_backend> cpu(ep);
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({6, 8}, 3).erase();
  const auto a = mine({x});
  const auto b = cpu({x});
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  REQUIRE(a[0].extents() == b[0].extents());
  for (index_t i = 0; i < a[0].numel(); ++i) CHECK(a[0].data<float>()[i] == doctest::Approx(b[0].data<float>()[i]).epsilon(1e-5));
  CHECK(mine.report() == 1);
  // the input checks are export's, the same for every backend
  const auto wrong = typex_test::random_tensor<tensor<f32, batch, fix<9>>>({6, 9}, 3).erase();
  std::string mine_error, cpu_error;
  try { (void)mine({wrong}); } catch (const typex::error& e) { mine_error = e.what(); }
  try { (void)cpu({wrong}); } catch (const typex::error& e) { cpu_error = e.what(); }
  CHECK(!mine_error.empty());
  CHECK(mine_error == cpu_error);
  CHECK(mine.report() == 1);  // (refused before the backend ran)
}

TEST_CASE("plan planner: a folded value that is not what the program records is an error, not a wrong-extent buffer") {
  using namespace planner_test;
  // (issue 16: kernel steps checked their results against the node's recorded shape; folds did not,
  // and every step reading a mis-shaped fold indexed it by the recorded extents)
  struct lying_target final : plan::target {
    recording_target inner;
    any_tensor evaluate(const ir::node&, std::span<const any_tensor* const>, std::span<const any_tensor* const>,
                        const symbol_table&) override {
      return any_tensor(dtype::f32, {1});
    }
    bool is_activation(const ir::node& n, const symbol_table& s) override { return inner.is_activation(n, s); }
    bool fuses(dtype dt) const override { return inner.fuses(dt); }
    bool reads_strided(const ir::graph& g, const ir::node& u) override { return inner.reads_strided(g, u); }
    std::size_t max_chain() const override { return inner.max_chain(); }
    bool lower(plan::planner& p, plan::step_plan& s) override { return inner.lower(p, s); }
    void lower_kernel(plan::planner& p, ir::node_id n) override { inner.lower_kernel(p, n); }
  };
  net m;
  init_module(m, 4);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(3), {}))));
  const ir::graph& g = ep.graph();
  const binding_parts b = parts_of(ep);
  plan::planner p(g, b.inputs, b.constants, {});
  lying_target t;
  t.inner.graph = &g;
  const std::vector<any_tensor> in{any_tensor(dtype::f32, {2, 8})};
  const std::string msg = typex_test::message_of<ir::graph_error>([&] { p.plan(in, ep.bind_inputs(in), t); });
  CHECK(msg == "typex: node 'mul_1' (aten.mul.Tensor), folded, produced f32[1] where the program records f32[4, 4]");
}
