// Tests for typex/passes/pass.hpp: a pipeline of the built-in passes and users' passes, its report,
// the verifier after each pass naming the pass that broke the graph, the promises a pass makes.
#include "../support.hpp"

#include <typex/ir/verifier.hpp>
#include <typex/passes/cse.hpp>
#include <typex/passes/dce.hpp>
#include <typex/passes/fold.hpp>
#include <typex/passes/pass.hpp>

#include <string>
#include <vector>

using namespace typex;
using ir::node_id;
using ir::sym_expr;
using ir::value_ref;

namespace {
ir::tensor_meta f32_meta(std::vector<sym_expr> shape) { return {dtype::f32, std::move(shape)}; }

// x [s0, 4]: two identical exps, a no-op view, a splat sum; y = exp(x) * exp(x) + (ones + ones)
ir::graph small_graph() {
  ir::graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const std::vector<sym_expr> shape{s0, 4};
  const node_id x = g.add_placeholder("x", f32_meta(shape));
  const node_id v = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{x}, shape}, .vals = {f32_meta(shape)}});
  const node_id e1 = g.add_call({.target = op_id_of<exp_op>, .args = {value_ref{v}}, .vals = {f32_meta(shape)},
                                 .nn_module_stack = {{"act", "Exp"}}, .stack_trace = "model.cpp:2 in forward"});
  const node_id e2 = g.add_call({.target = op_id_of<exp_op>, .args = {value_ref{x}}, .vals = {f32_meta(shape)}});
  const node_id m = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{e1}, value_ref{e2}}, .vals = {f32_meta(shape)}});
  const node_id o = g.add_call({.target = op_id_of<aten::ones>, .args = {shape, dtype::f32}, .vals = {f32_meta(shape)}});
  const node_id two = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{o}, value_ref{o}}, .vals = {f32_meta(shape)}});
  const node_id y = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{m}, value_ref{two}}, .vals = {f32_meta(shape)}});
  g.set_output({value_ref{y}});
  return g;
}
}  // namespace

TEST_CASE("pipeline: fold, cse and dce in order, with a report of what each did") {
  ir::graph g = small_graph();
  passes::pipeline p({.verify = passes::verify_mode::always});
  p.add(passes::fold_pass()).add(passes::cse_pass()).add(passes::dce_pass());
  const passes::pipeline_report r = p.run(g);
  REQUIRE(r.passes.size() == 3);
  CHECK(r.passes[0].name == "fold");
  CHECK(r.passes[0].changed);  // (the view, and ones + ones made a full)
  CHECK(r.passes[0].nodes_before == 9);
  CHECK(r.passes[0].nodes_after == 8);
  CHECK(r.passes[1].name == "cse");
  CHECK(r.passes[1].changed);  // (the exps read the same value once the view went)
  CHECK(r.passes[1].nodes_after == 7);
  CHECK(r.passes[2].name == "dce");
  CHECK(r.passes[2].changed);  // (ones: nothing reads it now)
  CHECK(r.passes[2].nodes_after == 6);
  CHECK(r.changed());
  CHECK(r.total_time().count() >= 0);
  const std::string text = r.to_string();
  CHECK(text.find("fold") != std::string::npos);
  CHECK(text.find("9 -> 8 nodes") != std::string::npos);
  CHECK(text.find("unchanged") == std::string::npos);
  ir::verify(g);
  std::vector<std::string> names;
  for (const ir::node& n : g.nodes()) names.push_back(n.name);
  CHECK(names == std::vector<std::string>{"x", "exp", "mul", "add", "add_1", "output"});
  CHECK(g[1].stack_trace == "model.cpp:2 in forward");  // (the survivor's provenance)
  CHECK(g[3].target == op_id_of<aten::full>);
  // a second run finds nothing to do
  const passes::pipeline_report again = p.run(g);
  CHECK_FALSE(again.changed());
}

TEST_CASE("pipeline: rounds repeat the passes while a sweep changed the graph") {
  ir::graph g = small_graph();
  passes::pipeline p({.verify = passes::verify_mode::always, .rounds = 5});
  p.add(passes::fold_pass()).add(passes::cse_pass()).add(passes::dce_pass());
  const passes::pipeline_report r = p.run(g);
  // the first sweep changes the graph, the second finds nothing: six records, then it stops
  REQUIRE(r.passes.size() == 6);
  CHECK(r.passes[3].round == 1);
  CHECK_FALSE(r.passes[3].changed);
  CHECK(r.to_string().find("(round 2)") != std::string::npos);
}

namespace {
// Copies g, then adds a call that carries no metadata (named "lost", read by nothing): what the
// verifier refuses and ir::graph's own checks let through.
bool forget_metadata(ir::graph& g) {
  ir::graph out;
  std::vector<node_id> remap(g.size());
  const auto moved = [&](ir::argument a) {
    if (auto* r = std::get_if<value_ref>(&a)) r->node = remap[r->node];
    return a;
  };
  for (node_id i = 0; i < g.size(); ++i) {
    const ir::node& n = g[i];
    if (n.op == ir::node_op::placeholder) {
      remap[i] = out.add_placeholder(n.name, n.vals.front());
    } else if (n.op == ir::node_op::call_function) {
      std::vector<ir::argument> args;
      for (const ir::argument& a : n.args) args.push_back(moved(a));
      remap[i] = out.add_call({.target = n.target, .args = std::move(args), .vals = n.vals, .name_hint = n.name,
                               .nn_module_stack = n.nn_module_stack, .stack_trace = n.stack_trace});
    } else {
      (void)out.add_call({.target = op_id_of<neg_op>, .args = {value_ref{0}}, .name_hint = "lost"});
      std::vector<value_ref> outs;
      for (const ir::argument& a : n.args) outs.push_back(std::get<value_ref>(moved(a)));
      out.set_output(std::move(outs));
    }
  }
  g = std::move(out);
  return true;
}
}  // namespace

TEST_CASE("pipeline: a user's pass that breaks the graph is caught by the verifier, which names it") {
  ir::graph g = small_graph();
  passes::pipeline p({.verify = passes::verify_mode::always});
  p.add(passes::dce_pass()).add("forget_metadata", forget_metadata);
  const std::string what = typex_test::message_of<ir::graph_error>([&] { (void)p.run(g); });
  CHECK_MESSAGE(what.find("typex::passes::pipeline: pass 'forget_metadata' broke the graph: typex::ir::verify: node 'lost': ") == 0, what);
  CHECK_MESSAGE(what.find("without metadata") != std::string::npos, what);
  // the graph is left as the pass left it
  CHECK(g[g.size() - 2].name == "lost");

  // verify_mode::never runs it unchecked
  ir::graph h = small_graph();
  passes::pipeline unchecked({.verify = passes::verify_mode::never});
  unchecked.add("forget_metadata", forget_metadata);
  CHECK_NOTHROW((void)unchecked.run(h));
  CHECK_THROWS_AS(ir::verify(h), ir::graph_error);
  // run_checked decides by its argument
  ir::graph k = small_graph();
  CHECK_THROWS_AS((void)unchecked.run_checked(k, true), ir::graph_error);
}

TEST_CASE("pipeline: what a pass says it preserves is checked after it") {
  SUBCASE("a pass that renames an input but says it keeps the signature") {
    ir::graph g = small_graph();
    passes::pipeline p({.verify = passes::verify_mode::always});
    p.add("rename_input", [](ir::graph& gr) {
      ir::graph out;
      for (node_id i = 0; i < gr.size(); ++i) {
        const ir::node& n = gr[i];
        if (n.op == ir::node_op::placeholder) (void)out.add_placeholder(n.name + "_renamed", n.vals.front());
        else if (n.op == ir::node_op::call_function)
          (void)out.add_call({.target = n.target, .args = n.args, .vals = n.vals, .name_hint = n.name});
        else out.set_output({std::get<value_ref>(n.args.front())});
      }
      gr = std::move(out);
      return true;
    });
    CHECK_THROWS_WITH_AS((void)p.run(g), doctest::Contains("pass 'rename_input' broke the graph: it changed the placeholders"), ir::graph_error);
  }
  SUBCASE("no-op removal changes which node the output names: fold says so, a pass that hides it is caught") {
    ir::graph g;
    const node_id x = g.add_placeholder("x", f32_meta({4}));
    const node_id v = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{x}, std::vector<std::int64_t>{4}}, .vals = {f32_meta({4})}});
    g.set_output({value_ref{v}});
    ir::graph h = g;
    passes::pipeline honest({.verify = passes::verify_mode::always});
    honest.add(passes::fold_pass());
    CHECK_FALSE(honest.passes().front().preserves.output_names);
    CHECK(honest.run(g).changed());
    CHECK(g.output().args.front() == ir::argument(value_ref{x}));
    passes::pipeline hiding({.verify = passes::verify_mode::always});
    hiding.add("fold_claiming_names", [](ir::graph& gr) { return passes::fold(gr).total() > 0; },
               {.signature = true, .output_names = true, .metadata = true});
    CHECK_THROWS_WITH_AS((void)hiding.run(h), doctest::Contains("the output returned (view) and returns (x)"), ir::graph_error);
    // keep_output_names keeps its promise
    ir::graph k = h;
    passes::pipeline keeping({.verify = passes::verify_mode::always});
    keeping.add(passes::fold_pass({.keep_output_names = true}));
    CHECK(keeping.passes().front().preserves.output_names);
    CHECK_FALSE(keeping.run(k).changed());
  }
}

TEST_CASE("pipeline: a pass needs a name and a function") {
  passes::pipeline p;
  CHECK_THROWS_AS(p.add(passes::pass{.name = "", .run = [](ir::graph&) { return false; }}), argument_error);
  CHECK_THROWS_WITH_AS(p.add(passes::pass{.name = "nothing"}), doctest::Contains("pass 'nothing' has no function"), argument_error);
  CHECK(p.passes().empty());
  ir::graph g = small_graph();
  CHECK_FALSE(p.run(g).changed());
}
