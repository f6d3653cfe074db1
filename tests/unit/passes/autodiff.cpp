// passes::differentiate: every op's derivative against finite differences in f64, iterating the op
// registry (through its parity cases, tests/data/parity/ops.txt: every registered op has some), and
// the pass's own contracts (outputs, names, errors).
#include "../parity_cases.hpp"
#include "../graph_runner.hpp"
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/passes/autodiff.hpp>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

using namespace typex;
using passes::derivative_kind;

namespace {

// A case's tensors in f64 (the floating ones), and its floating dtype arguments too.
any_tensor in_f64(const any_tensor& t) {
  if (!is_floating_point(t.scalar_type()) || t.scalar_type() == dtype::f64) return t;
  any_tensor out(dtype::f64, t.extents());
  for (index_t i = 0; i < t.numel(); ++i) out.data<double>()[i] = t.data<float>()[i];
  return out;
}

double weight_for(index_t i) { return std::sin(0.7 * static_cast<double>(i) + 0.3) + 0.1 * static_cast<double>(i % 3); }

double dot(const any_tensor& y, const any_tensor& r) {
  double s = 0;
  for (index_t i = 0; i < y.numel(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
  return s;
}

// One case made a program: placeholders for its tensors, the op, loss = sum(op(...) * r).
struct gradient_case {
  std::vector<any_tensor> inputs;           // by placeholder
  std::vector<ir::node_id> wrt;             // the floating tensors
  std::vector<std::size_t> wrt_input;       // their position in inputs
  ir::graph joint;
  std::vector<ir::argument> args;           // the op's arguments (for the finite differences)
  std::vector<std::size_t> tensor_input;    // args position -> inputs index (npos: not a tensor)
  std::vector<std::size_t> list_input;      // the list argument's tensors -> inputs index
  any_tensor r;
};

constexpr std::size_t npos = static_cast<std::size_t>(-1);

// Floating-point arguments PyTorch gives no derivative for (its "not implemented"), which typex
// refuses the same way (checked below).
const std::set<std::pair<std::string, std::string>> not_differentiated = {
    {"aten.nll_loss.default", "weight"},
    {"aten.cross_entropy_loss.default", "weight"},
    {"aten.masked_scatter.default", "source"},  // (data-dependent: see its derivative)
};

any_tensor run_op(op_id op, const gradient_case& gc, const std::vector<any_tensor>& inputs) {
  std::vector<const any_tensor*> tensors;
  for (std::size_t k : gc.tensor_input) tensors.push_back(k == npos ? nullptr : &inputs[k]);
  std::vector<const any_tensor*> list;
  for (std::size_t k : gc.list_input) list.push_back(&inputs[k]);
  return eigen::run_kernel(eigen::kernel_args(op, gc.args, tensors, nullptr, list));
}

std::optional<gradient_case> make_case(const parity::parity_case& c) {
  const op_id op = find_op(c.target);
  gradient_case gc;
  ir::graph g;
  std::size_t list_k = 0;
  const op_schema schema = op.schema();
  // training-mode batch norm without running statistics: the same result, and no update in place
  // (which the engine refuses: BatchNorm2d records its updates as buffer mutations instead)
  const bool drop_running = c.target == "aten.batch_norm.default" && std::get<bool>(c.args[5]);
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    ir::argument a = c.args[i];
    gc.tensor_input.push_back(npos);
    if (drop_running && (i == 3 || i == 4)) {
      gc.args.push_back(ir::none_t{});
      continue;
    }
    if (c.tensors[i]) {
      gc.tensor_input.back() = gc.inputs.size();
      gc.inputs.push_back(in_f64(*c.tensors[i]));
      const any_tensor& t = gc.inputs.back();
      std::vector<ir::sym_expr> shape(t.extents().begin(), t.extents().end());
      const ir::node_id ph = g.add_placeholder("arg" + std::to_string(i), {t.scalar_type(), shape});
      if (is_floating_point(t.scalar_type()) && !not_differentiated.contains({c.target, std::string(schema.args[i].name)})) {
        gc.wrt.push_back(ph);
        gc.wrt_input.push_back(gc.inputs.size() - 1);
      }
      a = ir::value_ref{ph};
    } else if (auto* refs = std::get_if<std::vector<ir::value_ref>>(&a)) {
      for (auto& ref : *refs) {
        gc.list_input.push_back(gc.inputs.size());
        gc.inputs.push_back(in_f64(c.list[list_k++]));
        const any_tensor& t = gc.inputs.back();
        std::vector<ir::sym_expr> shape(t.extents().begin(), t.extents().end());
        ref = ir::value_ref{g.add_placeholder("list", {t.scalar_type(), shape})};
        if (is_floating_point(t.scalar_type())) {
          gc.wrt.push_back(ref.node);
          gc.wrt_input.push_back(gc.inputs.size() - 1);
        }
      }
    } else if (auto* d = std::get_if<dtype>(&a)) {
      if (is_floating_point(*d)) a = dtype::f64;
    }
    gc.args.push_back(a);
  }
  const any_tensor y = run_op(op, gc, gc.inputs);
  if (y.scalar_type() != dtype::f64 || gc.wrt.empty()) return std::nullopt;
  std::vector<ir::argument> call_args = gc.args;  // (the placeholders, in argument order)
  gc.r = any_tensor(dtype::f64, y.extents());
  for (index_t i = 0; i < gc.r.numel(); ++i) gc.r.data<double>()[i] = weight_for(i);
  std::vector<ir::sym_expr> yshape(y.extents().begin(), y.extents().end());
  const ir::node_id rph = g.add_placeholder("r", {dtype::f64, yshape});
  passes::graph_builder b(g);
  const ir::value_ref out = b.emit(op, call_args, {dtype::f64, yshape});
  const ir::value_ref loss = b.sum_all(b.mul(out, ir::value_ref{rph}));
  g.set_output({loss});
  gc.joint = passes::differentiate(g, {.loss = 0, .wrt = gc.wrt});
  return gc;
}

using typex_test::run_graph;

struct check_result {
  int checked = 0, kinks = 0;
  std::string problem;
};

check_result check_case(const parity::parity_case& c, gradient_case& gc) {
  check_result res;
  const op_id op = find_op(c.target);
  std::vector<any_tensor> all = gc.inputs;
  all.push_back(gc.r);
  const std::vector<any_tensor> out = run_graph(gc.joint, all);
  const double loss0 = dot(run_op(op, gc, gc.inputs), gc.r);
  if (std::abs(out[0].data<double>()[0] - loss0) > 1e-9 * (1 + std::abs(loss0))) {
    res.problem = "the joint program's loss differs from the kernel's";
    return res;
  }
  for (std::size_t w = 0; w < gc.wrt.size(); ++w) {
    const std::size_t k = gc.wrt_input[w];
    const any_tensor& grad = out[1 + w];
    if (grad.extents() != gc.inputs[k].extents() || grad.scalar_type() != dtype::f64) {
      res.problem = "gradient " + std::to_string(w) + " is " + grad.to_string() + ", its input " + gc.inputs[k].to_string();
      return res;
    }
    const index_t n = gc.inputs[k].numel();
    const index_t stride = n > 48 ? n / 48 : 1;  // (at most ~48 elements of each input)
    for (index_t e = 0; e < n; e += stride) {
      std::vector<any_tensor> probe = gc.inputs;
      probe[k] = gc.inputs[k].clone();
      double& x = probe[k].data<double>()[e];
      const double x0 = x, h = 1e-6 * std::max(1.0, std::abs(x0));
      x = x0 + h;
      const double up = dot(run_op(op, gc, probe), gc.r);
      x = x0 - h;
      const double down = dot(run_op(op, gc, probe), gc.r);
      const double fd = (up - down) / (2 * h);
      const double right = (up - loss0) / h, left = (loss0 - down) / h;
      if (!std::isfinite(fd)) continue;
      if (std::abs(right - left) > 1e-3 * (1 + std::abs(fd))) {  // a kink (relu at 0, a tie): no derivative to compare
        ++res.kinks;
        continue;
      }
      const double an = grad.data<double>()[e];
      ++res.checked;
      if (!(std::abs(an - fd) <= 1e-5 + 1e-5 * std::abs(fd))) {
        std::ostringstream s;
        s.precision(12);
        s << "d loss / d input " << k << "[" << e << "]: derivative " << an << ", finite difference " << fd;
        res.problem = s.str();
        return res;
      }
    }
  }
  return res;
}

}  // namespace

TEST_CASE("autodiff: every differentiable op's derivative matches finite differences in f64") {
  std::map<std::string, int> checked;  // target -> elements compared
  int kinks = 0;
  for (const parity::parity_case& c : parity::read_cases()) {
    const op_id op = find_op(c.target);
    if (passes::derivative_kind_of(op) != derivative_kind::defined) continue;
    INFO(c.name << " (" << c.target << ")");
    std::optional<gradient_case> gc;
    try {
      gc = make_case(c);
    } catch (const std::exception& e) {
      FAIL_CHECK(c.name << ": differentiating threw: " << std::string(e.what()));
      continue;
    }
    if (!gc) continue;
    CHECK_NOTHROW(ir::verify(gc->joint));
    check_result r;
    try {
      r = check_case(c, *gc);
    } catch (const std::exception& e) {
      r.problem = std::string("threw: ") + e.what();
    }
    CHECK_MESSAGE(r.problem.empty(), c.name << ": " << r.problem);
    checked[c.target] += r.checked;
    kinks += r.kinks;
  }
  // every op with a derivative was compared somewhere
  for_each_op(builtin_ops{}, [&](auto type) {
    using Op = typename decltype(type)::type;
    if constexpr (passes::derivative_of<Op>() == derivative_kind::defined) {
      const std::string name(op_id_of<Op>.name());
      CHECK_MESSAGE(checked[name] > 0, name << " has a derivative that no case compared with finite differences");
    }
  });
  MESSAGE("elements compared: " << [&] { int n = 0; for (auto& [t, k] : checked) n += k; return n; }() << ", kinks skipped: " << kinks);
}

TEST_CASE("autodiff: every registered op has a derivative or says it has none") {
  for_each_op(builtin_ops{}, [&](auto type) {
    using Op = typename decltype(type)::type;
    const std::string name(op_id_of<Op>.name());
    const derivative_kind k = passes::derivative_of<Op>();
    CHECK(passes::derivative_kind_of(op_id_of<Op>) == k);
    CHECK_MESSAGE(k != derivative_kind::missing, name << " has no derivative and does not declare `differentiable = false`");
  });
}

namespace {
// A user-defined op with no derivative (and no `differentiable = false`).
struct scale_op {
  static constexpr std::string_view target = "my.scale.default";
  static constexpr std::string_view schema = "my::scale(Tensor self) -> Tensor";
};
// One with a derivative (y = 2 x): the pass finds it once registered.
struct twice_op {
  static constexpr std::string_view target = "my.twice.default";
  static constexpr std::string_view schema = "my::twice(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.mul(c.grad(), 2.0)); }
};
}  // namespace

TEST_CASE("autodiff: an op without a derivative is an error naming the op, the node and the line, and the pass checks its request") {
  ir::graph g;
  const ir::node_id w = g.add_placeholder("w", {dtype::f32, {3}});
  const ir::node_id s = g.add_call({.target = op_id_of<scale_op>, .args = {ir::value_ref{w}}, .vals = {{dtype::f32, {3}}},
                                    .stack_trace = "model.cpp:7 in operator()"});
  passes::graph_builder b(g);
  const ir::value_ref loss = b.sum_all(ir::value_ref{s});
  const ir::value_ref vec = ir::value_ref{s};
  g.set_output({loss, vec});
  CHECK(passes::derivative_kind_of(op_id_of<scale_op>) == derivative_kind::missing);
  CHECK_THROWS_WITH_AS(passes::differentiate(g, {.loss = 0, .wrt = {w}}),
                       "typex::passes::differentiate: my.scale.default (node 'scale', at model.cpp:7 in operator()) has no derivative: the op "
                       "defines none (an op gives one as `template <class C> static void vjp(C& c)`, or declares `static constexpr bool "
                       "differentiable = false`; a user-defined op then registers it with typex::passes::register_derivative<Op>()); "
                       "detach the value it computes from the parameters, or give the op its derivative",
                       unsupported_error);
  // nothing flows through it when nothing asks: no error
  CHECK_NOTHROW(passes::differentiate(g, {.loss = 0, .wrt = {}}));
  CHECK_THROWS_WITH_AS(passes::differentiate(g, {.loss = 1, .wrt = {w}}), doctest::Contains("a loss is a floating-point scalar"), argument_error);
  CHECK_THROWS_WITH_AS(passes::differentiate(g, {.loss = 2, .wrt = {w}}), doctest::Contains("the graph has 2 outputs"), argument_error);
  CHECK_THROWS_WITH_AS(passes::differentiate(g, {.loss = 0, .wrt = {s}}), doctest::Contains("not a placeholder"), argument_error);
}

TEST_CASE("autodiff: a user-defined op's derivative is found once registered") {
  ir::graph g;
  const ir::node_id x = g.add_placeholder("x", {dtype::f32, {3}});
  const ir::node_id t = g.add_call({.target = op_id_of<twice_op>, .args = {ir::value_ref{x}}, .vals = {{dtype::f32, {3}}}});
  passes::graph_builder b(g);
  g.set_output({b.sum_all(ir::value_ref{t})});
  CHECK(passes::derivative_kind_of(op_id_of<twice_op>) == derivative_kind::missing);
  CHECK_THROWS_AS(passes::differentiate(g, {.loss = 0, .wrt = {x}}), unsupported_error);
  passes::register_derivative<twice_op>();
  passes::register_derivative<twice_op>();  // (idempotent)
  CHECK(passes::derivative_kind_of(op_id_of<twice_op>) == derivative_kind::defined);
  const ir::graph joint = passes::differentiate(g, {.loss = 0, .wrt = {x}});
  CHECK_NOTHROW(ir::verify(joint));
  // the gradient: the seed expanded to x's shape, times 2
  const ir::node& grad = joint[std::get<ir::value_ref>(joint.output().args[1]).node];
  CHECK(grad.target == op_id_of<mul_op>);
  CHECK(std::get<double>(grad.args[1]) == 2.0);
}

TEST_CASE("autodiff: a value used twice sums its gradients, and a broadcast one is summed back to its shape") {
  // loss = sum(x * x + b), x [2, 3], b [3] (broadcast): dx = 2x, db = 2 (the rows summed)
  ir::graph g;
  const ir::node_id x = g.add_placeholder("x", {dtype::f64, {2, 3}});
  const ir::node_id bias = g.add_placeholder("b", {dtype::f64, {3}});
  passes::graph_builder b(g);
  const ir::value_ref sq = b.mul(ir::value_ref{x}, ir::value_ref{x});
  g.set_output({b.sum_all(b.add(sq, ir::value_ref{bias}))});
  const ir::graph joint = passes::differentiate(g, {.loss = 0, .wrt = {x, bias}});
  CHECK_NOTHROW(ir::verify(joint));
  program_binding binding;
  binding.graph = std::make_shared<const ir::graph>(joint);
  binding.inputs = joint.placeholders();
  auto engine = eigen_backend::compile(std::move(binding), {});
  any_tensor xv(dtype::f64, {2, 3}), bv(dtype::f64, {3});
  for (index_t i = 0; i < 6; ++i) xv.data<double>()[i] = static_cast<double>(i) - 2.5;
  for (index_t i = 0; i < 3; ++i) bv.data<double>()[i] = 0.5;
  std::vector<any_tensor> out;
  engine->run(std::vector<any_tensor>{xv, bv}, symbol_table{}, out);
  REQUIRE(out.size() == 3);
  for (index_t i = 0; i < 6; ++i) CHECK(out[1].data<double>()[i] == 2 * xv.data<double>()[i]);
  CHECK(out[2].extents() == std::vector<index_t>{3});
  for (index_t i = 0; i < 3; ++i) CHECK(out[2].data<double>()[i] == 2.0);
}
