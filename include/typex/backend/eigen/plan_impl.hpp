// typex/backend/eigen/plan_impl.hpp — the planned Eigen programs (plan.hpp), defined.
//
// Included by kernels_impl.hpp: compiled wherever the kernels are (every unit, or typex::eigen).
// The planned engine is plan::planner's target: the planner (plan/planner.hpp, backend-neutral)
// decides folds, views, fusions and the arena; this engine lowers each planned step to one of this
// backend's steps (kernels/steps.hpp) or to the op's eager kernel. Programs with data-dependent
// sizes run node by node on the backend kit's stepwise engine (backend/kit/stepwise.hpp).
#pragma once

#include <typex/backend/eigen/kernels_impl.hpp>  // (which includes this header at its end)
#include <typex/backend/eigen/plan.hpp>
#include <typex/backend/kit/stepwise.hpp>
#include <typex/plan/planner.hpp>

#include <array>
#include <map>
#include <memory>
#include <tuple>
#include <optional>

namespace typex::eigen {

TYPEX_EIGEN_API int set_num_threads(int threads) {
  const int before = detail::thread_pool::instance().threads();
  detail::thread_pool::instance().resize(threads);
  return before;
}
TYPEX_EIGEN_API int num_threads() { return detail::thread_pool::instance().threads(); }

}  // namespace typex::eigen

#include <typex/backend/eigen/kernels/steps.hpp>  // (the steps: a part of this header)

namespace typex::eigen {
namespace detail {

// The planned engine: plan::planner plans the graph (values, steps, arena) and this engine, as its
// target, lowers each step to one of the steps above.
class planned_engine final : public engine, private plan::target {
 public:
  planned_engine(program_binding b, compile_options options)
      : binding_(std::move(b)), options_(options), planner_(*binding_.graph, binding_.inputs, binding_.constants, {options.fuse}) {
    packed_.owner = &planner_;
  }
  planned_engine(const planned_engine&) = delete;
  planned_engine& operator=(const planned_engine&) = delete;

  bool planned_for(std::span<const any_tensor> inputs) const noexcept override {
    if (!planned_ || inputs.size() != planned_extents_.size()) return false;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].extents() != planned_extents_[i]) return false;
    return true;
  }

  void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) override {
    if (!planned_for(inputs)) plan(inputs, symbols);
    const int threads = options_.threads > 0 ? std::min(options_.threads, num_threads()) : num_threads();
    const auto& outs = planner_.outputs();
    // An output is written in place by its steps only into a tensor the caller passes back that has
    // its dtype and extents, owns its memory alone (a tensor the caller still holds, or a borrowed
    // view, use_count 0, is not written: it may be another output's or a constant's memory), and
    // shares no memory with this call's inputs (a result fed back in). Nothing is replaced before
    // the steps run (an input may borrow the old tensor's memory); the others are copied after
    // them, as every output was. (If a step throws, an output written in place may hold part of
    // this call's result.)
    const auto in_place = [&](std::size_t i, const plan::value& v) {
      if (i >= outputs.size()) return false;
      const any_tensor& o = outputs[i];
      if (o.scalar_type() != v.dt || o.extents() != v.extents || o.get_storage().use_count() != 1) return false;
      const std::byte* a = o.raw_data();
      for (const any_tensor& in : inputs) {
        const std::byte* b = in.raw_data();
        if (a < b + in.nbytes() && b < a + o.nbytes()) return false;
      }
      return true;
    };
    for (std::size_t k = 0; k < direct_outputs_.size(); ++k) {
      const auto [i, b] = direct_outputs_[k];
      direct_now_[k] = in_place(i, planner_.at(outs[i]));
      redirect_[b] = direct_now_[k] ? outputs[i].raw_data() : nullptr;
    }
    const run_ctx c{arena_.data(), &planner_.arena().offsets(), inputs, threads, &redirect_};
    for (const auto& s : steps_) s->run(c);
    outputs.resize(outs.size());
    std::size_t next_direct = 0;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (next_direct < direct_outputs_.size() && direct_outputs_[next_direct].first == i) {
        if (direct_now_[next_direct++]) continue;  // (written in place)
      }
      const plan::value& v = planner_.at(outs[i]);
      any_tensor& o = outputs[i];  // (reused where nobody else holds it, else made anew: the caller keeps the old one)
      if (o.scalar_type() != v.dt || o.extents() != v.extents || o.get_storage().use_count() > 1)
        o = any_tensor(v.dt, v.extents, storage::uninitialized(static_cast<std::size_t>(v.numel()) * itemsize(v.dt)));
      const std::size_t bytes = static_cast<std::size_t>(o.numel()) * itemsize(v.dt);
      if (bytes != 0) std::memcpy(o.raw_data(), c.get(v.at), bytes);
    }
  }

  plan_report report() const override {
    plan_report r = planner_.summary();
    r.winograd = winograd_;
    r.large_kernel = large_kernel_;
    r.outputs_in_place = direct_outputs_.size();
    return r;
  }

 private:
  using value = plan::value;
  static bool gemm_dtype(dtype d) { return d == dtype::f32 || d == dtype::f64; }

  void plan(std::span<const any_tensor> inputs, const symbol_table& symbols) {
    planned_ = false;
    steps_.clear();
    winograd_ = 0;
    large_kernel_ = 0;
    planner_.plan(inputs, symbols, *this);
    if (arena_.bytes() < planner_.arena().peak()) arena_ = storage(planner_.arena().peak());
    // the arena views of the eager-kernel steps point into the new arena
    for (auto& s : steps_)
      if (auto* ks = dynamic_cast<kernel_step*>(s.get())) bind_views(*ks);
    plan_direct_outputs();
    planned_extents_.assign(inputs.size(), {});
    for (std::size_t i = 0; i < inputs.size(); ++i) planned_extents_[i] = inputs[i].extents();
    planned_ = true;
  }

  // ---- plan::target ----------------------------------------------------------------------------

  any_tensor evaluate(const ir::node& node, std::span<const any_tensor* const> args, std::span<const any_tensor* const> list,
                      const symbol_table& symbols) override {
    return find_kernel(node.target)(kernel_args(node.target, node.args, args, &symbols, list));
  }
  bool is_activation(const ir::node& node, const symbol_table&) override { return static_cast<bool>(activation_node(node)); }
  bool fuses(dtype dt) const override { return gemm_dtype(dt); }
  bool reads_strided(const ir::graph& g, const ir::node& u) override { return strided_matmul(g, u); }
  std::size_t max_chain() const override { return max_pointwise_links; }
  bool lower(plan::planner& p, plan::step_plan& s) override {
    auto step = fast_step(p, s);
    if (!step) return false;
    steps_.push_back(std::move(step));
    return true;
  }
  void lower_kernel(plan::planner& p, ir::node_id n) override {
    const ir::node& node = p.graph()[n];
    steps_.push_back(generic_step(node, n, find_kernel(node.target)));
  }

  // The activation a node computes (the null one for a node whose op is not an activation: the
  // kernel table's activations, keyed by op id).
  activation activation_node(const ir::node& u) const {
    if (u.op != ir::node_op::call_function) return {};
    const std::vector<const any_tensor*> no_tensors(u.args.size(), nullptr);
    return activation_of(kernel_args(u.target, u.args, no_tensors, &planner_.symbols()));
  }
  // Whether fast_step runs this matmul node reading its operands through strides.
  static bool strided_matmul(const ir::graph& g, const ir::node& u) {
    const dtype d = u.vals.front().scalar_type;
    if (!gemm_dtype(d) || u.args.size() < 2) return false;
    std::size_t ranks[2] = {0, 0};
    for (std::size_t k = 0; k < 2; ++k) {
      const auto* r = std::get_if<ir::value_ref>(&u.args[k]);
      if (r == nullptr) return false;
      const ir::tensor_meta& m = g[r->node].vals.front();
      if (m.scalar_type != d || m.rank() < 2) return false;
      ranks[k] = m.rank();
    }
    return u.target == op_id_of<matmul_op> || ranks[0] == ranks[1];
  }

  // The geometry of a max_pool2d node reading conv output v, when a conv step can do it per image.
  std::optional<pool_geometry> fusable_pool(const ir::node& p, const value& v) const {
    if (p.vals.front().scalar_type != v.dt) return std::nullopt;
    const std::vector<const any_tensor*> none(p.args.size(), nullptr);
    try {
      const pool_geometry pg = pool_geometry_of<true>(kernel_args(p.target, p.args, none, &planner_.symbols()), {v.dt, v.extents});
      if (max_pool_direct(pg)) return pg;
    } catch (const typex::error&) {  // (arguments the kernel rejects: its step will say so)
    }
    return std::nullopt;
  }
  static std::size_t pooled_numel(const pool_geometry& p) { return static_cast<std::size_t>(p.s.n * p.s.c * p.oh * p.ow); }

  // The outputs whose steps write them straight into the caller's output tensors (no copy out of
  // the arena after the call: a training step's weight gradients are most of its outputs' bytes):
  // an output whose buffer is its own (no other output's, its size exactly) and is read or written
  // only through the steps' operands, resolved per call (run_ctx::redirect). An eager-kernel step's
  // views are bound to the arena at planning, so a buffer one of them touches stays there.
  void plan_direct_outputs() {
    const std::size_t buffers = planner_.arena().buffers().size();
    redirect_.assign(buffers, nullptr);
    direct_outputs_.clear();
    std::vector<int> outputs_of(buffers, 0);
    std::vector<bool> bound(buffers, false);
    const auto mark = [&](const plan::value& v) {
      if (v.at.kind == operand::where::arena) bound[v.at.index] = true;
    };
    for (const auto& s : steps_)
      if (const auto* ks = dynamic_cast<const kernel_step*>(s.get())) {
        ir::graph::for_each_ref(*ks->node, [&](ir::value_ref r) { mark(planner_.at(r.node)); });
        mark(planner_.at(ks->id));
      }
    const auto& outs = planner_.outputs();
    for (ir::node_id o : outs)
      if (const plan::value& v = planner_.at(o); v.at.kind == operand::where::arena) ++outputs_of[v.at.index];
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const plan::value& v = planner_.at(outs[i]);
      if (v.at.kind != operand::where::arena || v.strided() || v.folded) continue;
      const std::size_t b = v.at.index;
      if (outputs_of[b] != 1 || bound[b] || planner_.arena().buffers()[b].bytes != v.bytes() || v.bytes() == 0) continue;
      direct_outputs_.emplace_back(i, b);
    }
    direct_now_.assign(direct_outputs_.size(), 0);
  }

  // Points each operand of an eager-kernel step at its arena buffer or constant (user inputs are
  // bound per call).
  void bind_views(kernel_step& s) {
    auto bind = [&](ir::value_ref r, kernel_step::operands& o, std::size_t k) {
      const value& v = planner_.at(r.node);
      if (v.at.kind == operand::where::arena) {
        const std::size_t off = planner_.arena().offset(v.at.index);
        o.views[k] = any_tensor(v.dt, v.extents, storage::view(arena_, off, v.bytes()));
        o.ptrs[k] = &o.views[k];
      } else if (v.at.kind == operand::where::constant) {
        o.views[k] = any_tensor(v.dt, v.extents, v.at.tensor->get_storage());
        o.ptrs[k] = &o.views[k];
      }
    };
    std::size_t in_list = 0;
    for (std::size_t k = 0; k < s.node->args.size(); ++k) {
      if (const auto* r = std::get_if<ir::value_ref>(&s.node->args[k])) bind(*r, s.args, k);
      else if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&s.node->args[k]))
        for (const ir::value_ref& x : *refs) bind(x, s.list, in_list++);
    }
    // the result's buffer as the kernel's destination, unless it overlaps an operand's (a kernel
    // may read an operand after writing part of its result)
    s.destination.reset();
    const value& o = planner_.at(s.id);
    if (o.at.kind != operand::where::arena || o.strided()) return;
    const std::size_t off = planner_.arena().offset(o.at.index), end = off + o.bytes();
    bool overlaps = false;
    ir::graph::for_each_ref(*s.node, [&](ir::value_ref r) {
      const value& v = planner_.at(r.node);
      if (v.at.kind != operand::where::arena) return;
      const std::size_t a = planner_.arena().offset(v.at.index);
      overlaps = overlaps || (a < end && off < a + v.bytes());
    });
    if (!overlaps) s.destination = any_tensor(o.dt, o.extents, storage::view(arena_, off, o.bytes()));
  }

  std::unique_ptr<step> generic_step(const ir::node& node, ir::node_id n, kernel_fn fn) {
    auto s = std::make_unique<kernel_step>();
    s->node = &node;
    s->id = n;
    s->fn = fn;
    s->args.resize(node.args.size());
    std::size_t list_size = 0;
    for (const auto& a : node.args)
      if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&a)) list_size += refs->size();
    s->list.resize(list_size);
    auto note_input = [&](ir::value_ref r, kernel_step::operands& o, std::size_t k) {
      const value& v = planner_.at(r.node);
      if (v.at.kind != operand::where::input) return;
      o.input_of[k] = v.at.index;
      const any_tensor& in = planner_.planning_inputs()[v.at.index];
      if (v.extents != in.extents()) {  // a view of the input (the view step was elided): its own extents
        o.views[k] = any_tensor(v.dt, v.extents, in.get_storage());
        o.reshaped[k] = true;
      }
    };
    std::size_t in_list = 0;
    for (std::size_t k = 0; k < node.args.size(); ++k) {
      if (const auto* r = std::get_if<ir::value_ref>(&node.args[k])) note_input(*r, s->args, k);
      else if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&node.args[k]))
        for (const ir::value_ref& x : *refs) note_input(x, s->list, in_list++);
    }
    s->symbols = &planner_.symbols();
    s->out = planner_.at(n).at;
    s->dt = planner_.at(n).dt;
    s->extents = planner_.at(n).extents;
    return s;
  }

  // A step on raw buffers for the ops the planned path covers, or nullptr (then the node runs its
  // eager kernel). s.epilogue: an activation to apply in a GEMM's epilogue; s.pool: a max_pool2d
  // of a conv2d's output to do in the conv's step (dropped where this step cannot); s.chain:
  // pointwise ops after a binary op (cut where this backend cannot do one).
  std::unique_ptr<step> fast_step(plan::planner& p, plan::step_plan& sp) {
    const ir::graph& g = p.graph();
    const ir::node_id n = sp.node;
    const ir::node& node = g[n];
    const value& v = p.at(n);
    if (!gemm_dtype(v.dt)) return nullptr;
    const std::vector<const any_tensor*> no_tensors(node.args.size(), nullptr);
    const kernel_args ka(node.target, node.args, no_tensors, &p.symbols());
    // the value the call passes as argument k (positions from the ops' schemas: ir::arg_index)
    const auto arg_at = [&](std::size_t k) { return p.arg(node, k); };
    const auto plain = [&](const value* a) { return a != nullptr && !a->strided() && a->dt == v.dt; };
    const activation act = sp.epilogue != plan::no_node ? activation_node(g[sp.epilogue]) : activation{};
    std::unique_ptr<step> out;
    dispatch_gemm(v.dt, ka.target(), [&](auto tag) {
      using T = decltype(tag);
      const op_id t = node.target;
      if (t == op_id_of<linear_op>) {
        using op = linear_op;
        const value *x = arg_at(ir::arg_index<op, "input">), *w = arg_at(ir::arg_index<op, "weight">),
                    *b = arg_at(ir::arg_index<op, "bias">);
        if (!plain(x) || !plain(w) || (ka.has(ir::arg_index<op, "bias">) && !plain(b))) return;
        // (shapes the eager kernel would reject: leave them to it, for its message)
        if (w->extents.size() != 2 || x->extents.empty() || x->extents.back() != w->extents[1] ||
            (b != nullptr && b->numel() != w->extents[0]))
          return;
        auto s = std::make_unique<linear_step<T>>();
        s->x = x->at, s->w = w->at, s->b = b ? b->at : operand{}, s->out = v.at, s->act = act;
        s->in = w->extents[1], s->outs = w->extents[0], s->rows = s->in ? x->numel() / s->in : 0;
        s->prepare(packed_);
        out = std::move(s);
      } else if (t == op_id_of<aten::conv2d>) {
        using op = aten::conv2d;
        const value *x = arg_at(ir::arg_index<op, "input">), *w = arg_at(ir::arg_index<op, "weight">),
                    *b = arg_at(ir::arg_index<op, "bias">);
        if (!plain(x) || !plain(w) || (b != nullptr && !plain(b))) return;
        auto s = std::make_unique<conv_step<T>>();
        s->g = conv_geometry_of(ka, {x->dt, x->extents}, {w->dt, w->extents}, b ? std::optional<index_t>(b->numel()) : std::nullopt);
        s->g.winograd = s->g.winograd && options_.winograd;
        std::optional<pool_geometry> pool;  // (a large kernel's GEMM covers every image at once: no pool per image)
        if (sp.pool != plan::no_node && (s->g.large_kernel || !(pool = fusable_pool(g[sp.pool], v)))) sp.pool = plan::no_node;
        if (pool) p.resize(n, pooled_numel(*pool) * itemsize(v.dt));  // (the conv's buffer holds the pooled value)
        s->x = x->at, s->w = w->at, s->b = b ? b->at : operand{}, s->out = v.at, s->act = act;
        s->pool = pool;
        winograd_ += s->g.winograd ? 1 : 0;
        large_kernel_ += s->g.large_kernel ? 1 : 0;
        s->scratch_threads = std::max(num_threads(), options_.threads);
        const index_t scratch = conv_scratch<T>(s->g, s->scratch_threads, pool.has_value());
        s->scratch = p.scratch(static_cast<std::size_t>(scratch) * sizeof(T), n);
        s->prepare(packed_);
        out = std::move(s);
      } else if (t == op_id_of<matmul_op> || t == op_id_of<aten::bmm> || t == op_id_of<aten::mm>) {
        const value *x = arg_at(0), *y = arg_at(1);  // (matmul's self and other, mm's and bmm's self and mat2)
        if (x == nullptr || y == nullptr || x->dt != v.dt || y->dt != v.dt || x->extents.size() < 2 || y->extents.size() < 2) return;
        if (t != op_id_of<matmul_op> && x->extents.size() != y->extents.size()) return;
        const std::size_t rx = x->extents.size(), ry = y->extents.size();
        if (x->extents[rx - 1] != y->extents[ry - 2]) return;
        const std::vector<index_t> sx = x->strided() ? x->strides : contiguous_strides(x->extents);
        const std::vector<index_t> sy = y->strided() ? y->strides : contiguous_strides(y->extents);
        auto s = std::make_unique<matmul_step<T>>();
        s->x = x->at, s->y = y->at, s->out = v.at;
        s->n = x->extents[rx - 2], s->k = x->extents[rx - 1], s->m = y->extents[ry - 1];
        s->xrs = sx[rx - 2], s->xcs = sx[rx - 1], s->yrs = sy[ry - 2], s->ycs = sy[ry - 1];
        const std::vector<index_t> batch(v.extents.begin(), v.extents.end() - 2);
        s->ox = batch_offsets({x->extents.begin(), x->extents.end() - 2}, {sx.begin(), sx.end() - 2}, batch);
        s->oy = batch_offsets({y->extents.begin(), y->extents.end() - 2}, {sy.begin(), sy.end() - 2}, batch);
        out = std::move(s);
      } else if (const activation a = activation_node(node)) {
        const value* x = arg_at(0);  // (an activation's input comes first; a user's activation may declare no schema)
        if (!plain(x)) return;
        auto s = std::make_unique<activation_step<T>>();
        s->x = x->at, s->out = v.at, s->n = v.numel(), s->act = a;
        out = std::move(s);
      } else if (const auto f = binary_fn(t)) {
        const value *a = arg_at(ir::arg_index<add_op, "self">), *b = arg_at(ir::arg_index<add_op, "other">);  // (add, sub, mul, div alike)
        if (!plain(a)) return;
        auto s = std::make_unique<binary_step<T>>();
        s->f = *f;
        if (b == nullptr) {
          constexpr std::size_t k = ir::arg_index<add_op, "other">;  // (a wrapped number: a float or an int, not a symbol)
          if (node.args.size() <= k || !(std::holds_alternative<double>(node.args[k]) || std::holds_alternative<std::int64_t>(node.args[k]))) return;
          s->b_number = true;
          s->number = static_cast<T>(ka.real(k));
        } else if (!plain(b)) {
          return;
        }
        if (t == op_id_of<add_op>) s->alpha = static_cast<T>(ir::arg<add_op, "alpha">(ka));
        if (t == op_id_of<sub_op>) s->alpha = static_cast<T>(ir::arg<sub_op, "alpha">(ka));
        const auto broadcasts = [&](const value* o) {
          if (o == nullptr) return true;
          if (o->extents.size() > v.extents.size()) return false;
          const std::size_t shift = v.extents.size() - o->extents.size();
          for (std::size_t d = 0; d < o->extents.size(); ++d)
            if (o->extents[d] != 1 && o->extents[d] != v.extents[d + shift]) return false;
          return true;
        };
        if (!broadcasts(a) || !broadcasts(b)) return;
        s->a = a->at, s->b = b ? b->at : operand{}, s->out = v.at, s->oe = v.extents;
        s->sa = broadcast_strides(a->extents, v.extents);
        s->sb = b ? broadcast_strides(b->extents, v.extents) : std::vector<index_t>(v.extents.size(), 0);
        link_chain(p, *s, sp);
        out = std::move(s);
      } else if (t == op_id_of<aten::softmax_int> || t == op_id_of<aten::log_softmax_int>) {
        using op = aten::softmax_int;  // (log_softmax's arguments alike)
        const value* x = arg_at(ir::arg_index<op, "self">);
        if (!plain(x) || x->extents.empty() ||
            wrap_dim(ka.target(), ir::arg<op, "dim">(ka), x->extents.size()) + 1 != x->extents.size())
          return;
        auto s = std::make_unique<softmax_step<T>>();
        s->x = x->at, s->out = v.at, s->len = x->extents.back(), s->rows = s->len ? x->numel() / s->len : 0;
        s->log = t == op_id_of<aten::log_softmax_int>;
        out = std::move(s);
      } else if (t == op_id_of<layer_norm_op>) {
        using op = layer_norm_op;
        const value *x = arg_at(ir::arg_index<op, "input">), *w = arg_at(ir::arg_index<op, "weight">),
                    *b = arg_at(ir::arg_index<op, "bias">);
        if (!plain(x) || (w && !plain(w)) || (b && !plain(b))) return;
        const auto normalized = ir::arg<op, "normalized_shape">(ka);
        if (normalized.size() > x->extents.size()) return;
        index_t m = 1;
        for (std::size_t k = 0; k < normalized.size(); ++k) {
          if (x->extents[x->extents.size() - normalized.size() + k] != normalized[k]) return;
          m *= normalized[k];
        }
        if ((w && w->numel() != m) || (b && b->numel() != m)) return;
        auto s = std::make_unique<layer_norm_step<T>>();
        s->x = x->at, s->w = w ? w->at : operand{}, s->b = b ? b->at : operand{}, s->out = v.at;
        s->m = m, s->rows = m ? x->numel() / m : 0, s->eps = ir::arg<op, "eps">(ka);
        out = std::move(s);
      } else if (t == op_id_of<aten::max_pool2d>) {
        const value* x = arg_at(ir::arg_index<aten::max_pool2d, "self">);
        if (!plain(x)) return;
        auto s = std::make_unique<max_pool_step<T>>();
        s->g = pool_geometry_of<true>(ka, {x->dt, x->extents});
        s->x = x->at, s->out = v.at;
        out = std::move(s);
      } else if (has(plan::rules_of(t), plan::rule::permute)) {
        const value* x = arg_at(0);  // (transpose's and permute's self)
        if (x == nullptr || x->dt != v.dt || x->extents.empty()) return;
        const std::vector<std::size_t> perm = plan::permutation(ka, x->extents.size());  // (output dim d reads input dim perm[d])
        const std::vector<index_t> base = x->strided() ? x->strides : contiguous_strides(x->extents);
        auto s = std::make_unique<copy_step<T>>();
        s->x = x->at, s->out = v.at, s->oe = v.extents, s->idx.resize(v.extents.size());
        for (std::size_t d = 0; d < perm.size(); ++d) s->strides.push_back(base[perm[d]]);
        out = std::move(s);
      }
    });
    return out;
  }

  // add / sub / mul / div take their tensors at the same positions (read by add's)
  static_assert(ir::arg_index<sub_op, "other"> == ir::arg_index<add_op, "other"> && ir::arg_index<mul_op, "other"> == ir::arg_index<add_op, "other"> &&
                ir::arg_index<div_op, "other"> == ir::arg_index<add_op, "other"> && ir::arg_index<mul_op, "self"> == ir::arg_index<add_op, "self">);
  static_assert(ir::arg_index<aten::log_softmax_int, "dim"> == ir::arg_index<aten::softmax_int, "dim">);

  // The pointwise function of add / sub / mul / div.
  static std::optional<pointwise_fn> binary_fn(op_id t) {
    if (t == op_id_of<add_op>) return pointwise_fn::add;
    if (t == op_id_of<sub_op>) return pointwise_fn::sub;
    if (t == op_id_of<mul_op>) return pointwise_fn::mul;
    if (t == op_id_of<div_op>) return pointwise_fn::div;
    return std::nullopt;
  }

  // The planned chain after binary step s's node as links, each computed on an output row in place
  // (the planner checked extents, dtypes and operands); cut at an op this backend has no link for.
  template <class T>
  void link_chain(const plan::planner& p, binary_step<T>& s, plan::step_plan& sp) {
    const ir::graph& g = p.graph();
    const value& hv = p.at(sp.node);
    ir::node_id cur = sp.node;
    for (std::size_t k = 0; k < sp.chain.size(); ++k) {
      const ir::node& un = g[sp.chain[k]];
      pointwise_link<T> l;
      l.sb.assign(hv.extents.size(), 0);
      const auto f = binary_fn(un.target);
      if (const activation a = activation_node(un)) {
        l.f = pointwise_fn::activate;
        l.act = a;
      } else if (f) {
        const auto* r0 = std::get_if<ir::value_ref>(&un.args[0]);
        l.chain_second = r0 == nullptr || r0->node != cur;
        l.f = *f;
        const ir::argument& o = un.args[l.chain_second ? 0 : 1];
        if (const auto* r = std::get_if<ir::value_ref>(&o)) {
          const value& other = p.at(r->node);
          l.b = other.at;
          l.sb = broadcast_strides(other.extents, hv.extents);
        } else {
          l.number = static_cast<T>(std::holds_alternative<double>(o) ? std::get<double>(o) : static_cast<double>(std::get<std::int64_t>(o)));
        }
        if (*f == pointwise_fn::add || *f == pointwise_fn::sub) {
          const std::vector<const any_tensor*> none(un.args.size(), nullptr);
          const kernel_args ua(un.target, un.args, none, &p.symbols());
          l.alpha = static_cast<T>(*f == pointwise_fn::add ? ir::arg<add_op, "alpha">(ua) : ir::arg<sub_op, "alpha">(ua));
        }
      } else {  // (an op with the pointwise rule that this backend has no link for: the chain ends before it)
        sp.chain.resize(k);
        return;
      }
      s.links.push_back(std::move(l));
      cur = sp.chain[k];
    }
  }

  program_binding binding_;
  compile_options options_;
  plan::planner planner_;
  bool planned_ = false;
  std::vector<std::vector<index_t>> planned_extents_;  // the inputs' extents of the last plan
  packed_weights packed_;  // constant weights packed, kept across plans
  std::size_t winograd_ = 0;  // convolutions of the current plan done by Winograd's F(2x2, 3x3)
  std::size_t large_kernel_ = 0;  // and as one GEMM over every image (conv_geometry::large_kernel)
  std::vector<std::pair<std::size_t, std::size_t>> direct_outputs_;  // (output index, its buffer id), by output index
  std::vector<std::byte*> redirect_;                                  // per buffer id (run_ctx::redirect)
  std::vector<char> direct_now_;  // per direct output: written in place by this call (no input shares its memory)
  std::vector<std::unique_ptr<step>> steps_;
  storage arena_;
};

}  // namespace detail

// (the backend kit, backend/kit/engine.hpp: every node checked by supports() before anything is
// planned; data-dependent programs and untrusted shapes on the kit's stepwise engine)
TYPEX_EIGEN_API std::shared_ptr<detail::engine> detail::make_engine(program_binding binding, compile_options options) {
  return kit::compile_program(std::move(binding), kit::backend_parts{
      "eigen", "Eigen", [](const ir::graph&, const ir::node& n) { return supports(n); },
      [options](program_binding b) -> std::unique_ptr<kit::engine> { return std::make_unique<planned_engine>(std::move(b), options); },
      [](program_binding b) -> std::unique_ptr<kit::engine> { return std::make_unique<kit::stepwise_engine>(std::move(b), "eigen", &find_kernel); }});
}

}  // namespace typex::eigen
