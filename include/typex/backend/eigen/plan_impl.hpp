// typex/backend/eigen/plan_impl.hpp — the planned Eigen programs (plan.hpp), defined.
//
// Included by kernels_impl.hpp: compiled wherever the kernels are (every unit, or typex::eigen).
#pragma once

#include <typex/backend/eigen/kernels_impl.hpp>  // (which includes this header at its end)
#include <typex/backend/eigen/plan.hpp>
#include <typex/export/exported_program.hpp>

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

TYPEX_EIGEN_API std::string plan_report::to_string() const {
  std::string s = std::to_string(steps) + " steps per call (" + std::to_string(fused) + " fused activations, " +
                  std::to_string(chained) + " pointwise ops chained, " +
                  std::to_string(views) + " views without copies, " + std::to_string(folded) +
                  " nodes folded at planning); arena " + std::to_string(arena_bytes) + " bytes (" +
                  std::to_string(unplanned_bytes) + " without buffer sharing)";
  if (allocating_ops.empty()) return s + "; no allocation per call";
  s += "; eager kernels (allocating) for:";
  for (const auto& op : allocating_ops) s += " " + op;
  return s;
}

namespace detail {

// Where a step finds a value.
struct operand {
  enum class where : unsigned char { none, arena, input, constant } kind = where::none;
  std::size_t index = 0;               // arena: buffer id; input: user input index
  const any_tensor* tensor = nullptr;  // constant
};

struct run_ctx {
  std::byte* arena;
  const std::vector<std::size_t>* offsets;  // per buffer id
  std::span<const any_tensor> inputs;
  int threads;

  std::byte* get(const operand& o) const {
    switch (o.kind) {
      case operand::where::arena: return arena + (*offsets)[o.index];
      case operand::where::input: return inputs[o.index].raw_data();
      case operand::where::constant: return o.tensor->raw_data();
      case operand::where::none: break;
    }
    return nullptr;
  }
  template <class T>
  T* as(const operand& o) const { return reinterpret_cast<T*>(get(o)); }
};

struct step {
  virtual ~step() = default;
  virtual void run(const run_ctx& c) = 0;
};

// Constant weights packed for the GEMMs, kept across re-plans: packing depends on the weight and
// its GEMM's sizes, not on the batch, so a call with a new input shape reuses them. Keyed by the
// weight's data, the step kind and the sizes the packing depends on.
class packed_weights {
 public:
  // The data of the tensors that live as long as the engine (the lifted parameters, buffers and
  // constants): only those are cached (a value folded at planning time is made anew by each plan,
  // and its address could be reused by another).
  std::vector<const void*> stable;

  // The buffer for this weight and key, and whether it already holds the packed weight.
  template <class T>
  std::pair<std::shared_ptr<grow_buffer<T>>, bool> get(const void* data, std::array<index_t, 4> key) {
    if (std::find(stable.begin(), stable.end(), data) == stable.end()) return {std::make_shared<grow_buffer<T>>(), false};
    for (const entry& e : entries_)
      if (e.data == data && e.key == key && e.dt == dtype_of_v<T>) return {std::static_pointer_cast<grow_buffer<T>>(e.buffer), true};
    auto b = std::make_shared<grow_buffer<T>>();
    entries_.push_back({data, key, dtype_of_v<T>, b});
    return {std::move(b), false};
  }

 private:
  struct entry {
    const void* data;
    std::array<index_t, 4> key;
    dtype dt;
    std::shared_ptr<void> buffer;
  };
  std::vector<entry> entries_;  // (one per constant GEMM weight: a handful)
};

// linear(x, w, b) [+ activation]: one GEMM, the weight packed at planning time when constant.
template <class T>
struct linear_step final : step {
  operand x, w, b, out;
  index_t rows, in, outs;
  activation act;
  std::shared_ptr<grow_buffer<T>> packed;  // the constant weight, packed (shared with later plans)
  bool prepacked = false;
  void prepare(packed_weights& cache) {
    if (w.kind != operand::where::constant) return;
    bool done = false;
    std::tie(packed, done) = cache.get<T>(w.tensor->raw_data(), {0, in, outs, 0});
    if (!done) packed_rhs<T>::pack({w.tensor->template data<T>(), 1, in}, in, outs,
                                   packed->get(std::max<std::size_t>(packed_rhs<T>::size_for(in, outs), 1)));
    prepacked = true;
  }
  void run(const run_ctx& c) override {
    gemm_epilogue<T> ep;
    ep.bias = b.kind == operand::where::none ? nullptr : c.as<T>(b);
    ep.act = act;
    const matrix_ref<T> a{c.as<T>(x), in, 1};
    if (prepacked) {
      const packed_rhs<T> pb{in, outs, packed->get(0)};
      gemm<T>(rows, a, pb, c.as<T>(out), outs, ep, c.threads);
    } else {
      gemm<T>(rows, outs, in, a, {c.as<T>(w), 1, in}, c.as<T>(out), outs, ep, c.threads);
    }
  }
};

// matmul / mm / bmm with operands read through strides (absorbed transposes and permutes).
template <class T>
struct matmul_step final : step {
  operand x, y, out;
  std::vector<index_t> ox, oy;  // batch offsets
  index_t xrs, xcs, yrs, ycs, n, k, m;
  void run(const run_ctx& c) override {
    const matmul_operand<T> mx{c.as<T>(x), ox, xrs, xcs};
    const matmul_operand<T> my{c.as<T>(y), oy, yrs, ycs};
    matmul_batches(mx, my, n, k, m, c.as<T>(out), c.threads);
  }
};

// conv2d(x, w, b) [+ activation] [+ max_pool2d]: the weights packed at planning time when constant.
template <class T>
struct conv_step final : step {
  operand x, w, b, out, scratch;
  conv_geometry g;
  std::optional<pool_geometry> pool;  // a max_pool2d done per image (the conv's only reader)
  activation act;
  int scratch_threads;  // the threads the scratch buffer was planned for
  std::shared_ptr<grow_buffer<T>> packed = std::make_shared<grow_buffer<T>>();  // (shared with later plans when constant)
  bool prepacked = false;
  void prepare(packed_weights& cache) {
    if (w.kind != operand::where::constant) return;
    bool done = false;
    std::tie(packed, done) = cache.get<T>(w.tensor->raw_data(), {1, g.oc, g.groups, g.krows()});
    if (!done) conv_pack_weights(g, w.tensor->template data<T>(), packed->get(static_cast<std::size_t>(conv_packed_weights<T>(g))));
    prepacked = true;
  }
  void run(const run_ctx& c) override {
    if (!prepacked) conv_pack_weights(g, c.as<T>(w), packed->get(static_cast<std::size_t>(conv_packed_weights<T>(g))));
    conv2d_into<T>(g, c.as<T>(x), packed->get(0), b.kind == operand::where::none ? nullptr : c.as<T>(b), act, c.as<T>(out),
                   c.as<T>(scratch), std::min(c.threads, scratch_threads), pool ? &*pool : nullptr);
  }
};

template <class T>
struct activation_step final : step {
  operand x, out;
  index_t n;
  activation act;
  void run(const run_ctx& c) override {
    const T* px = c.as<T>(x);
    T* po = c.as<T>(out);
    parallel_for(n, 16, c.threads, [&](index_t i0, index_t i1) {
      if (px != po) std::copy(px + i0, px + i1, po + i0);
      activate(po + i0, i1 - i0, act);
    });
  }
};

// add / sub / mul / div on one dtype (f32/f64), with broadcasting or a number operand; then the
// pointwise ops that follow it in a chain (links), applied to each output row while it is in L1:
// one pass over memory for the whole chain.
enum class pointwise_fn : unsigned char { add, sub, mul, div, activate };
template <class T>
struct pointwise_link {
  pointwise_fn f = pointwise_fn::add;
  activation act;  // (activate)
  operand b;                          // the other operand (none: a number)
  T number{};
  T alpha = T(1);
  bool chain_second = false;          // the chain's value is the op's second argument (b - y, b / y)
  std::vector<index_t> sb;            // b's element strides into the output (0: broadcast)
};
inline constexpr std::size_t max_pointwise_links = 8;

template <class T>
struct binary_step final : step {
  using fn = pointwise_fn;
  fn f = fn::add;
  operand a, b, out;
  bool b_number = false;
  T number{};
  T alpha = T(1);  // add/sub's alpha
  std::vector<index_t> oe, sa, sb;  // output extents; element strides of a and b (0: broadcast)
  std::vector<pointwise_link<T>> links;
  void run(const run_ctx& c) override {
    const T* pa = c.as<T>(a);
    const T* pb = b_number ? nullptr : c.as<T>(b);
    T* po = c.as<T>(out);
    const std::size_t r = oe.size();
    const index_t inner = r ? oe[r - 1] : 1;
    index_t n = 1;
    for (index_t e : oe) n *= e;
    const index_t ia = r ? sa[r - 1] : 0, ib = r ? sb[r - 1] : 0;
    using row = Eigen::Array<T, Eigen::Dynamic, 1>;
    using strided = Eigen::Map<const row, 0, Eigen::InnerStride<>>;
    const std::size_t nl = links.size();
    std::array<const T*, max_pointwise_links> pl{};
    for (std::size_t k = 0; k < nl; ++k) pl[k] = links[k].b.kind == operand::where::none ? nullptr : c.as<T>(links[k].b);
    // the chain's value y (one output row, in place) combined with operand v
    auto apply_link = [&](const pointwise_link<T>& l, const T* xl, T* o, index_t len) {
      if (l.f == fn::activate) {
        activate(o, len, l.act);
        return;
      }
      Eigen::Map<row> y(o, len);
      auto combine = [&](const auto& v) {
        switch (l.f) {
          case fn::add: if (l.chain_second) y = v + l.alpha * y; else y = y + l.alpha * v; break;
          case fn::sub: if (l.chain_second) y = v - l.alpha * y; else y = y - l.alpha * v; break;
          case fn::mul: y = y * v; break;
          case fn::div: if (l.chain_second) y = v / y; else y = y / v; break;
          case fn::activate: break;
        }
      };
      const index_t il = r ? l.sb[r - 1] : 0;
      if (xl == nullptr) combine(l.number);
      else if (il == 0) combine(*xl);
      else combine(strided(xl, len, Eigen::InnerStride<>(il)));
    };
    // one output row: each operand is a strided run, or one value (a number, or broadcast)
    auto apply = [&](const T* xa, const T* xb, T* o, index_t len) {
      Eigen::Map<row> y(o, len);
      auto assign = [&](const auto& u, const auto& v) {
        switch (f) {
          case fn::add: y = u + alpha * v; break;
          case fn::sub: y = u - alpha * v; break;
          case fn::mul: y = u * v; break;
          case fn::div: y = u / v; break;
          case fn::activate: break;
        }
      };
      auto with_b = [&](const auto& u) {
        if (b_number) assign(u, number);
        else if (ib == 0) assign(u, *xb);
        else assign(u, strided(xb, len, Eigen::InnerStride<>(ib)));
      };
      if (ia == 0) with_b(row::Constant(len, *xa));
      else with_b(strided(xa, len, Eigen::InnerStride<>(ia)));
    };
    const index_t rows = inner ? n / inner : 0;
    parallel_for(rows, inner, c.threads, [&](index_t r0, index_t r1) {
      for (index_t rr = r0; rr < r1; ++rr) {
        index_t offa = 0, offb = 0, rest = rr;
        std::array<index_t, max_pointwise_links> offl{};
        for (std::size_t d = r - (r ? 1 : 0); d-- > 0;) {
          const index_t i = rest % oe[d];
          rest /= oe[d];
          offa += i * sa[d];
          offb += i * sb[d];
          for (std::size_t k = 0; k < nl; ++k) offl[k] += i * links[k].sb[d];
        }
        apply(pa + offa, pb ? pb + offb : nullptr, po + rr * inner, inner);
        for (std::size_t k = 0; k < nl; ++k) apply_link(links[k], pl[k] ? pl[k] + offl[k] : nullptr, po + rr * inner, inner);
      }
    });
  }
};

template <class T>
struct softmax_step final : step {
  operand x, out;
  index_t rows, len;
  bool log;
  void run(const run_ctx& c) override { softmax_rows<T>(c.as<T>(x), c.as<T>(out), rows, len, log, c.threads); }
};

template <class T>
struct layer_norm_step final : step {
  operand x, w, b, out;
  index_t rows, m;
  double eps;
  void run(const run_ctx& c) override {
    layer_norm_rows<T>(c.as<T>(x), c.as<T>(out), rows, m, w.kind == operand::where::none ? nullptr : c.as<T>(w),
                       b.kind == operand::where::none ? nullptr : c.as<T>(b), eps, c.threads);
  }
};

template <class T>
struct max_pool_step final : step {
  operand x, out;
  pool_geometry g;
  void run(const run_ctx& c) override { pool2d_into<true, T>(g, c.as<T>(x), c.as<T>(out), c.threads); }
};

// transpose / permute into a contiguous copy (when something other than a matmul reads it).
template <class T>
struct copy_step final : step {
  operand x, out;
  std::vector<index_t> oe, strides, idx;
  void run(const run_ctx& c) override { strided_copy(c.as<T>(x), c.as<T>(out), oe, strides, idx); }
};

// Any other op: its eager kernel on views of the arena, the result copied into its buffer.
struct kernel_step final : step {
  // The tensors of the call: per argument, or in a tensor-list argument's order.
  struct operands {
    std::vector<any_tensor> views;                     // a view of the arena buffer or constant
    std::vector<std::optional<std::size_t>> input_of;  // the user input it is
    std::vector<const any_tensor*> ptrs;
    void resize(std::size_t n) {
      views.resize(n);
      input_of.resize(n);
      reshaped.assign(n, false);
      ptrs.assign(n, nullptr);
    }
    std::vector<bool> reshaped;  // a view of the user input with other extents (flatten(x)): views[i]
    void bind_inputs(std::span<const any_tensor> inputs) {
      for (std::size_t i = 0; i < ptrs.size(); ++i) {
        if (!input_of[i]) continue;
        if (reshaped[i]) {
          views[i].view_storage_of(inputs[*input_of[i]]);
          ptrs[i] = &views[i];
        } else {
          ptrs[i] = &inputs[*input_of[i]];
        }
      }
    }
  };
  const ir::node* node;
  kernel_fn fn;
  operands args, list;
  const symbol_table* symbols;
  operand out;
  dtype dt;
  std::vector<index_t> extents;  // what the node records (its symbols bound)
  void run(const run_ctx& c) override {
    args.bind_inputs(c.inputs);
    list.bind_inputs(c.inputs);
    const any_tensor r = fn(kernel_args(node->target, node->args, args.ptrs, symbols, list.ptrs));
    if (r.scalar_type() != dt || r.extents() != extents) {  // a bug in typex: reported, not computed on
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::eigen: node '"); w.put(node->name); w.put("' ("); w.put(node->target.name()); w.put(") produced ");
        w.put(r.to_string()); w.put(" where the program records "); w.put(tensor_shape(dt, extents).to_string());
      });
    }
    std::memcpy(c.get(out), r.raw_data(), static_cast<std::size_t>(r.numel()) * itemsize(dt));
  }
};

class planned_engine final : public engine {
 public:
  planned_engine(std::shared_ptr<const exported_program> ep, std::vector<ir::node_id> user,
                 std::vector<std::pair<ir::node_id, any_tensor>> lifted, compile_options options)
      : ep_(std::move(ep)), user_(std::move(user)), lifted_(std::move(lifted)), options_(options) {}

  bool planned_for(std::span<const any_tensor> inputs) const noexcept override {
    if (!planned_ || inputs.size() != planned_extents_.size()) return false;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].extents() != planned_extents_[i]) return false;
    return true;
  }

  void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) override {
    if (!planned_for(inputs)) plan(inputs, symbols);
    const int threads = options_.threads > 0 ? std::min(options_.threads, num_threads()) : num_threads();
    const run_ctx c{arena_.data(), &offsets_, inputs, threads};
    for (const auto& s : steps_) s->run(c);
    outputs.resize(outs_.size());
    for (std::size_t i = 0; i < outs_.size(); ++i) {
      const value& v = values_[outs_[i]];
      any_tensor& o = outputs[i];
      if (o.scalar_type() != v.dt || o.extents() != v.extents || o.get_storage().use_count() > 1) o = any_tensor(v.dt, v.extents);
      const std::size_t bytes = static_cast<std::size_t>(o.numel()) * itemsize(v.dt);
      if (bytes != 0) std::memcpy(o.raw_data(), c.get(v.at), bytes);
    }
  }

  plan_report report() const override { return report_; }

 private:
  struct value {
    dtype dt = dtype::f32;
    std::vector<index_t> extents;
    operand at;                         // where it lives (for strided views: its source)
    bool strided = false;               // an absorbed transpose / permute
    std::vector<index_t> strides;       // (strided) element strides into `at`
    std::optional<any_tensor> folded;   // computed at planning time
    index_t numel() const noexcept {
      index_t n = 1;
      for (index_t e : extents) n *= e;
      return n;
    }
  };
  struct buffer {
    std::size_t bytes, first, last;
  };

  // (the planner knows ops by their ids: op_id_of<Op> is a constant, each test a pointer comparison)
  static bool is_view_op(op_id t) {
    return t == op_id_of<aten::reshape> || t == op_id_of<aten::view> || t == op_id_of<aten::flatten_using_ints> ||
           t == op_id_of<aten::unsqueeze>;
  }
  static bool is_permute_op(op_id t) { return t == op_id_of<aten::transpose_int> || t == op_id_of<aten::permute>; }
  static bool is_matmul_op(op_id t) { return t == op_id_of<matmul_op> || t == op_id_of<aten::bmm> || t == op_id_of<aten::mm>; }
  static bool is_gemm_op(op_id t) { return t == op_id_of<linear_op> || t == op_id_of<aten::conv2d>; }
  static bool gemm_dtype(dtype d) { return d == dtype::f32 || d == dtype::f64; }
  // The activation a node computes (the null one for a node whose op is not an activation_op): the
  // fusion rule, keyed by op id (kernels_impl.hpp's table).
  activation activation_node(const ir::node& u) const {
    if (u.op != ir::node_op::call_function) return {};
    const std::vector<const any_tensor*> no_tensors(u.args.size(), nullptr);
    return activation_of(kernel_args(u.target, u.args, no_tensors, &symbols_));
  }
  // Whether fast_step runs this matmul node (so it can read operands through strides).
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
      const pool_geometry pg = pool_geometry_of<true>(kernel_args(p.target, p.args, none, &symbols_), {v.dt, v.extents});
      if (max_pool_direct(pg)) return pg;
    } catch (const typex::error&) {  // (arguments the kernel rejects: its step will say so)
    }
    return std::nullopt;
  }
  static std::size_t pooled_numel(const pool_geometry& p) { return static_cast<std::size_t>(p.s.n * p.s.c * p.oh * p.ow); }

  // Whether a node's result is the same for every binding of the symbols: a static result and no
  // symbolic argument (a folded slice of a table by seq is not).
  static bool shape_free(const ir::node& node) {
    for (const auto& e : node.vals.front().shape)
      if (!e.is_constant()) return false;
    for (const auto& a : node.args) {
      if (const auto* e = std::get_if<ir::sym_expr>(&a); e && !e->is_constant()) return false;
      if (const auto* es = std::get_if<std::vector<ir::sym_expr>>(&a))
        for (const auto& e : *es)
          if (!e.is_constant()) return false;
    }
    return true;
  }

  std::size_t new_buffer(std::size_t bytes, std::size_t first) {
    buffers_.push_back({bytes, first, first});
    return buffers_.size() - 1;
  }
  // Marks a read of value v at time t (extends its buffer's life).
  void read(const value& v, std::size_t t) {
    if (v.at.kind == operand::where::arena) buffers_[v.at.index].last = std::max(buffers_[v.at.index].last, t);
  }

  void plan(std::span<const any_tensor> inputs, const symbol_table& symbols) {
    const ir::graph& g = ep_->graph();
    symbols_ = symbols;
    planning_inputs_ = inputs;
    values_.assign(g.size(), value{});
    buffers_.clear();
    steps_.clear();
    report_ = plan_report{};
    planned_ = false;
    packed_.stable.clear();
    for (const auto& [id, t] : lifted_) {
      packed_.stable.push_back(t.raw_data());
      values_[id].dt = t.scalar_type();
      values_[id].extents = t.extents();
      values_[id].folded = t;
    }
    for (std::size_t i = 0; i < user_.size(); ++i) {
      value& v = values_[user_[i]];
      v.dt = inputs[i].scalar_type();
      v.extents = inputs[i].extents();
      v.at = {operand::where::input, i, nullptr};
    }
    for (auto& v : values_)
      if (v.folded) v.at = {operand::where::constant, 0, &*v.folded};
    const auto users = g.users();
    std::vector<bool> is_output(g.size(), false);
    outs_.clear();
    for (const auto& a : g.output().args) {
      const auto n = std::get<ir::value_ref>(a).node;
      is_output[n] = true;
      outs_.push_back(n);
    }
    // transposes / permutes that only matmuls (possibly through more of them) read: not copied
    std::vector<bool> absorbed(g.size(), false);
    if (options_.fuse) {
      for (std::size_t n = g.size(); n-- > 0;) {
        const ir::node& node = g[n];
        if (node.op != ir::node_op::call_function || !is_permute_op(node.target) || is_output[n] || users[n].empty()) continue;
        if (!gemm_dtype(node.vals.front().scalar_type)) continue;
        bool ok = true;
        for (ir::node_id u : users[n]) ok = ok && ((is_matmul_op(g[u].target) && strided_matmul(g, g[u])) || absorbed[u]);
        absorbed[n] = ok;
      }
    }
    users_ = users;
    is_output_ = is_output;
    chained_to_.assign(g.size(), no_node);
    std::vector<bool> fused_into(g.size(), false);  // an activation done by its producer's epilogue
    std::vector<std::unique_ptr<step>> pending;
    std::vector<std::size_t> step_time;
    const auto& tensor_of = [&](const ir::argument& a) -> const value* {
      const auto* r = std::get_if<ir::value_ref>(&a);
      return r ? &values_[r->node] : nullptr;
    };

    for (ir::node_id n = 0; n < g.size(); ++n) {
      const ir::node& node = g[n];
      if (node.op != ir::node_op::call_function || ir::is_assertion(node)) continue;  // (assertions: bind_inputs)
      value& v = values_[n];
      const ir::tensor_meta& meta = node.vals.front();
      v.dt = meta.scalar_type;
      v.extents.clear();
      for (const auto& e : meta.shape) {
        const auto x = e.evaluate(symbols);
        if (!x) {
          typex::detail::raise<unsupported_error>([&](auto& w) {
            w.put("typex::eigen: node '"); w.put(node.name); w.put("' has a size ("); w.put(e.to_string());
            w.put(") that the inputs do not determine");
          });
        }
        v.extents.push_back(*x);
      }
      if (chained_to_[n] != no_node) {  // computed in the pass of the chain's first op
        v.at = values_[chained_to_[n]].at;
        continue;
      }
      const std::size_t bytes = static_cast<std::size_t>(v.numel()) * itemsize(v.dt);
      std::vector<const any_tensor*> tensors(node.args.size(), nullptr), list;  // (list: a tensor-list argument's)
      bool all_constant = true;
      for (std::size_t k = 0; k < node.args.size(); ++k) {
        if (const value* a = tensor_of(node.args[k])) {
          all_constant = all_constant && a->folded.has_value();
          if (a->folded) tensors[k] = &*a->folded;
        } else if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&node.args[k])) {
          for (const ir::value_ref& r : *refs) {
            const value& e = values_[r.node];
            all_constant = all_constant && e.folded.has_value();
            list.push_back(e.folded ? &*e.folded : nullptr);
          }
        }
      }
      const kernel_fn fn = find_kernel(node.target);
      const kernel_args call(node.target, node.args, tensors, &symbols_, list);
      if (node.target == op_id_of<batch_norm_op> && call.has("training") && call.flag("training")) {
        typex::detail::raise<unsupported_error>([&](auto& w) {
          w.put("typex::eigen: node '"); w.put(node.name);
          w.put("' is training-mode batch_norm, which updates its running statistics in place, behind the program's back; "
                "use nn::BatchNorm2d (whose traced training mode writes them as buffer mutations) or export in eval mode");
        });
      }
      const bool random = node.target == op_id_of<dropout_op> && call.flag("train");  // (never folded: a new draw per call)
      // 1. constant folding (a folded value that no symbol can change is kept for later plans, and
      //    so are the GEMM packings of it)
      if (all_constant && !random) {
        if (folded_cache_.size() != g.size()) folded_cache_.assign(g.size(), std::nullopt);
        if (folded_cache_[n]) {
          v.folded = *folded_cache_[n];
        } else {
          v.folded = fn(kernel_args(node.target, node.args, tensors, &symbols_, list));
          if (shape_free(node)) folded_cache_[n] = *v.folded;
        }
        if (folded_cache_[n]) packed_.stable.push_back(v.folded->raw_data());
        v.at = {operand::where::constant, 0, &*v.folded};
        ++report_.folded;
        continue;
      }
      const value* x0 = tensor_of(node.args[0]);
      // 2. views share their input's memory
      if (is_view_op(node.target) && x0 != nullptr && !x0->strided) {
        v.at = x0->at;
        ++report_.views;
        continue;
      }
      if (fused_into[n]) {  // the producer's epilogue did it
        v.at = tensor_of(node.args[0])->at;
        continue;
      }
      if (absorbed[n]) {
        std::vector<index_t> base = x0->strided ? x0->strides : contiguous_strides(x0->extents);
        std::vector<index_t> perm(x0->extents.size());
        for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<index_t>(d);
        const kernel_args a(node.target, node.args, tensors, &symbols_);
        if (node.target == op_id_of<aten::transpose_int>) {
          std::swap(perm[wrap_dim(a.target(), a.integer("dim0"), perm.size())], perm[wrap_dim(a.target(), a.integer("dim1"), perm.size())]);
        } else {
          const auto p = a.ints("dims");
          for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<index_t>(wrap_dim(a.target(), p[d], perm.size()));
        }
        v.strided = true;
        v.at = x0->at;
        v.strides.resize(perm.size());
        for (std::size_t d = 0; d < perm.size(); ++d) v.strides[d] = base[static_cast<std::size_t>(perm[d])];
        ++report_.views;
        continue;
      }
      // reads (extend lifetimes), then the output buffer
      ir::graph::for_each_ref(node, [&](ir::value_ref r) { read(values_[r.node], n); });
      // 3. a fused activation: the only reader of a linear / conv2d output
      activation act;
      if (options_.fuse && is_gemm_op(node.target) && !is_output[n] &&
          users[n].size() == 1 && gemm_dtype(v.dt)) {
        const ir::node& u = g[users[n].front()];
        act = activation_node(u);
        if (act && u.vals.front().scalar_type == v.dt) {
          fused_into[users[n].front()] = true;
          ++report_.fused;
        } else {
          act = {};
        }
      }
      // 4. a max-pool that is the only reader of a conv2d's (activated) output: done per image in the
      // conv's step, while the image's convolution is in cache (the conv's buffer holds the pooled value)
      std::optional<pool_geometry> pool;
      const ir::node_id last = act ? users[n].front() : n;
      if (options_.fuse && node.target == op_id_of<aten::conv2d> && gemm_dtype(v.dt) && !is_output[n] && !is_output[last] &&
          users[last].size() == 1 && g[users[last].front()].target == op_id_of<aten::max_pool2d>)
        pool = fusable_pool(g[users[last].front()], v);
      v.at = {operand::where::arena, new_buffer(pool ? pooled_numel(*pool) * itemsize(v.dt) : bytes, n), nullptr};
      auto fast = fast_step(node, n, tensors, act, pool ? &*pool : nullptr);
      if (fast && pool) {
        fused_into[users[last].front()] = true;
        ++report_.fused;
      }
      if (!fast && act) {  // (the kernel step below does the activation's node as its own step)
        fused_into[users[n].front()] = false;
        --report_.fused;
        act = {};
      }
      if (!fast) buffers_[v.at.index].bytes = bytes;
      if (auto s = std::move(fast)) {
        pending.push_back(std::move(s));
      } else {
        pending.push_back(generic_step(node, n, fn));
        report_.allocating_ops.emplace_back(node.target.name());
      }
      step_time.push_back(n);
    }
    for (ir::node_id o : outs_) read(values_[o], g.size());
    assign_offsets();
    steps_ = std::move(pending);
    // the arena views of the eager-kernel steps point into the new arena
    for (auto& s : steps_)
      if (auto* ks = dynamic_cast<kernel_step*>(s.get())) bind_views(*ks);
    report_.steps = steps_.size();
    planned_extents_.assign(inputs.size(), {});
    for (std::size_t i = 0; i < inputs.size(); ++i) planned_extents_[i] = inputs[i].extents();
    planned_ = true;
  }

  // Greedy by size: each buffer at the lowest offset not overlapping (in time and space) a placed one.
  void assign_offsets() {
    std::vector<std::size_t> order(buffers_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return buffers_[a].bytes > buffers_[b].bytes; });
    offsets_.assign(buffers_.size(), 0);
    std::vector<std::size_t> placed;
    std::size_t peak = 0, total = 0;
    auto round = [](std::size_t b) { return (b + 63) / 64 * 64; };
    for (std::size_t i : order) {
      const buffer& b = buffers_[i];
      total += round(b.bytes);
      std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) in bytes
      for (std::size_t j : placed) {
        const buffer& o = buffers_[j];
        if (o.first <= b.last && b.first <= o.last) busy.emplace_back(offsets_[j], offsets_[j] + round(o.bytes));
      }
      std::sort(busy.begin(), busy.end());
      std::size_t at = 0;
      for (const auto& [lo, hi] : busy) {
        if (at + round(b.bytes) <= lo) break;
        at = std::max(at, hi);
      }
      offsets_[i] = at;
      peak = std::max(peak, at + round(b.bytes));
      placed.push_back(i);
    }
    if (arena_.bytes() < peak) arena_ = storage(peak);
    report_.arena_bytes = peak;
    report_.unplanned_bytes = total;
  }

  // Points each operand of an eager-kernel step at its arena buffer or constant (user inputs are
  // bound per call).
  void bind_views(kernel_step& s) {
    auto bind = [&](ir::value_ref r, kernel_step::operands& o, std::size_t k) {
      const value& v = values_[r.node];
      if (v.at.kind == operand::where::arena) {
        const std::size_t off = offsets_[v.at.index];
        o.views[k] = any_tensor(v.dt, v.extents, storage::view(arena_, off, static_cast<std::size_t>(v.numel()) * itemsize(v.dt)));
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
  }

  std::unique_ptr<step> generic_step(const ir::node& node, ir::node_id n, kernel_fn fn) {
    auto s = std::make_unique<kernel_step>();
    s->node = &node;
    s->fn = fn;
    s->args.resize(node.args.size());
    std::size_t list_size = 0;
    for (const auto& a : node.args)
      if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&a)) list_size += refs->size();
    s->list.resize(list_size);
    auto note_input = [&](ir::value_ref r, kernel_step::operands& o, std::size_t k) {
      const value& v = values_[r.node];
      if (v.at.kind != operand::where::input) return;
      o.input_of[k] = v.at.index;
      const any_tensor& in = planning_inputs_[v.at.index];
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
    s->symbols = &symbols_;
    s->out = values_[n].at;
    s->dt = values_[n].dt;
    s->extents = values_[n].extents;
    return s;
  }

  // A step on raw buffers for the ops the planned path covers, or nullptr.
  // pool: a max_pool2d of a conv2d's output to do in the conv's step.
  std::unique_ptr<step> fast_step(const ir::node& node, ir::node_id n, const std::vector<const any_tensor*>& tensors, activation act,
                                  const pool_geometry* pool = nullptr) {
    const value& v = values_[n];
    if (!gemm_dtype(v.dt)) return nullptr;
    const kernel_args ka(node.target, node.args, tensors, &symbols_);
    // the value the call passes as argument k (nullptr: None, absent, or not a tensor)
    const auto arg_at = [&](std::size_t k) -> const value* {
      if (k >= node.args.size()) return nullptr;
      const auto* r = std::get_if<ir::value_ref>(&node.args[k]);
      return r ? &values_[r->node] : nullptr;
    };
    const auto arg = [&](arg_name name) { return arg_at(ka.index(name)); };
    const auto plain = [&](const value* a) { return a != nullptr && !a->strided && a->dt == v.dt; };
    std::unique_ptr<step> out;
    dispatch_gemm(v.dt, ka.target(), [&](auto tag) {
      using T = decltype(tag);
      const op_id t = node.target;
      if (t == op_id_of<linear_op>) {
        const value *x = arg("input"), *w = arg("weight"), *b = arg("bias");
        if (!plain(x) || !plain(w) || (ka.has("bias") && !plain(b))) return;
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
        const value *x = arg("input"), *w = arg("weight"), *b = arg("bias");
        if (!plain(x) || !plain(w) || (b != nullptr && !plain(b))) return;
        auto s = std::make_unique<conv_step<T>>();
        s->g = conv_geometry_of(ka, {x->dt, x->extents}, {w->dt, w->extents}, b ? std::optional<index_t>(b->numel()) : std::nullopt);
        s->x = x->at, s->w = w->at, s->b = b ? b->at : operand{}, s->out = v.at, s->act = act;
        if (pool != nullptr) s->pool = *pool;
        s->scratch_threads = std::max(num_threads(), options_.threads);
        const index_t scratch = conv_scratch<T>(s->g, s->scratch_threads, pool != nullptr);
        s->scratch = {operand::where::arena, new_buffer(static_cast<std::size_t>(scratch) * sizeof(T), n), nullptr};
        s->prepare(packed_);
        out = std::move(s);
      } else if (is_matmul_op(t)) {
        const value *x = arg_at(0), *y = arg_at(1);  // (matmul's self and other, mm's and bmm's self and mat2)
        if (x == nullptr || y == nullptr || x->dt != v.dt || y->dt != v.dt || x->extents.size() < 2 || y->extents.size() < 2) return;
        if (t != op_id_of<matmul_op> && x->extents.size() != y->extents.size()) return;
        const std::size_t rx = x->extents.size(), ry = y->extents.size();
        if (x->extents[rx - 1] != y->extents[ry - 2]) return;
        const std::vector<index_t> sx = x->strided ? x->strides : contiguous_strides(x->extents);
        const std::vector<index_t> sy = y->strided ? y->strides : contiguous_strides(y->extents);
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
      } else if (t == op_id_of<add_op> || t == op_id_of<sub_op> || t == op_id_of<mul_op> || t == op_id_of<div_op>) {
        const value *a = arg("self"), *b = arg("other");
        if (!plain(a)) return;
        auto s = std::make_unique<binary_step<T>>();
        s->f = t == op_id_of<add_op> ? binary_step<T>::fn::add
             : t == op_id_of<sub_op> ? binary_step<T>::fn::sub
             : t == op_id_of<mul_op> ? binary_step<T>::fn::mul
                                   : binary_step<T>::fn::div;
        if (b == nullptr) {
          const std::size_t k = ka.index("other");  // (a wrapped number: a float or an int, not a symbol)
          if (node.args.size() <= k || !(std::holds_alternative<double>(node.args[k]) || std::holds_alternative<std::int64_t>(node.args[k]))) return;
          s->b_number = true;
          s->number = static_cast<T>(ka.real("other"));
        } else if (!plain(b)) {
          return;
        }
        if (t == op_id_of<add_op> || t == op_id_of<sub_op>) s->alpha = static_cast<T>(ka.real_or_default("alpha"));
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
        extend_chain(*s, n);
        out = std::move(s);
      } else if (t == op_id_of<aten::softmax_int> || t == op_id_of<aten::log_softmax_int>) {
        const value* x = arg("self");
        if (!plain(x) || x->extents.empty() || wrap_dim(ka.target(), ka.integer("dim"), x->extents.size()) + 1 != x->extents.size()) return;
        auto s = std::make_unique<softmax_step<T>>();
        s->x = x->at, s->out = v.at, s->len = x->extents.back(), s->rows = s->len ? x->numel() / s->len : 0;
        s->log = t == op_id_of<aten::log_softmax_int>;
        out = std::move(s);
      } else if (t == op_id_of<layer_norm_op>) {
        const value *x = arg("input"), *w = arg("weight"), *b = arg("bias");
        if (!plain(x) || (w && !plain(w)) || (b && !plain(b))) return;
        const auto normalized = ka.ints("normalized_shape");
        if (normalized.size() > x->extents.size()) return;
        index_t m = 1;
        for (std::size_t k = 0; k < normalized.size(); ++k) {
          if (x->extents[x->extents.size() - normalized.size() + k] != normalized[k]) return;
          m *= normalized[k];
        }
        if ((w && w->numel() != m) || (b && b->numel() != m)) return;
        auto s = std::make_unique<layer_norm_step<T>>();
        s->x = x->at, s->w = w ? w->at : operand{}, s->b = b ? b->at : operand{}, s->out = v.at;
        s->m = m, s->rows = m ? x->numel() / m : 0, s->eps = ka.has("eps") ? ka.real("eps") : 1e-5;
        out = std::move(s);
      } else if (t == op_id_of<aten::max_pool2d>) {
        const value* x = arg("self");
        if (!plain(x)) return;
        auto s = std::make_unique<max_pool_step<T>>();
        s->g = pool_geometry_of<true>(ka, {x->dt, x->extents});
        s->x = x->at, s->out = v.at;
        out = std::move(s);
      } else if (is_permute_op(t)) {
        const value* x = arg("self");
        if (x == nullptr || x->dt != v.dt) return;
        // the output's dim d reads the input's dim perm[d]
        std::vector<std::size_t> perm(x->extents.size());
        for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = d;
        if (perm.empty()) return;
        if (t == op_id_of<aten::transpose_int>)
          std::swap(perm[wrap_dim(ka.target(), ka.integer("dim0"), perm.size())], perm[wrap_dim(ka.target(), ka.integer("dim1"), perm.size())]);
        else {
          const auto p = ka.ints("dims");
          for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = wrap_dim(ka.target(), p[d], perm.size());
        }
        const std::vector<index_t> base = x->strided ? x->strides : contiguous_strides(x->extents);
        auto s = std::make_unique<copy_step<T>>();
        s->x = x->at, s->out = v.at, s->oe = v.extents, s->idx.resize(v.extents.size());
        for (std::size_t d = 0; d < perm.size(); ++d) s->strides.push_back(base[perm[d]]);
        out = std::move(s);
      }
    });
    return out;
  }

  // Pointwise chain fusion: the ops after binary op `head` that only continue its value (its one
  // reader, then that one's, ...: add / sub / mul / div with a number or a tensor computed before
  // head, or an activation; same extents and dtype) become links of head's step, computed on each
  // output row in place. Their values share head's buffer; the tensors they read are read at head.
  template <class T>
  void extend_chain(binary_step<T>& s, ir::node_id head) {
    if (!options_.fuse) return;
    const ir::graph& g = ep_->graph();
    const value& hv = values_[head];
    const auto is_ref_to = [](const ir::argument& a, ir::node_id id) {
      const auto* r = std::get_if<ir::value_ref>(&a);
      return r != nullptr && r->node == id;
    };
    ir::node_id cur = head;
    while (s.links.size() < max_pointwise_links && !is_output_[cur] && users_[cur].size() == 1) {
      const ir::node_id u = users_[cur].front();
      const ir::node& un = g[u];
      const ir::tensor_meta& m = un.vals.front();
      if (un.op != ir::node_op::call_function || un.vals.size() != 1 || m.scalar_type != hv.dt || m.rank() != hv.extents.size()) return;
      for (std::size_t d = 0; d < m.rank(); ++d) {
        const auto e = m.shape[d].evaluate(symbols_);
        if (!e || *e != hv.extents[d]) return;
      }
      pointwise_link<T> l;
      l.sb.assign(hv.extents.size(), 0);
      const value* other = nullptr;
      const op_id t = un.target;
      if (const activation a = activation_node(un)) {
        if (un.args.empty() || !is_ref_to(un.args[0], cur)) return;
        l.f = pointwise_fn::activate;
        l.act = a;
      } else if (t == op_id_of<add_op> || t == op_id_of<sub_op> || t == op_id_of<mul_op> || t == op_id_of<div_op>) {
        if (un.args.size() < 2) return;
        const bool first = is_ref_to(un.args[0], cur), second = is_ref_to(un.args[1], cur);
        if (first == second) return;  // (x op x, or not a reader: not a chain)
        l.f = t == op_id_of<add_op> ? pointwise_fn::add : t == op_id_of<sub_op> ? pointwise_fn::sub
            : t == op_id_of<mul_op> ? pointwise_fn::mul : pointwise_fn::div;
        l.chain_second = second;
        const ir::argument& o = un.args[first ? 1 : 0];
        if (const auto* r = std::get_if<ir::value_ref>(&o)) {
          if (r->node >= head) return;  // not computed yet when the chain runs
          other = &values_[r->node];
          if (other->strided || other->dt != hv.dt || other->at.kind == operand::where::none) return;
          if (other->extents.size() > hv.extents.size()) return;
          const std::size_t shift = hv.extents.size() - other->extents.size();
          for (std::size_t d = 0; d < other->extents.size(); ++d)
            if (other->extents[d] != 1 && other->extents[d] != hv.extents[d + shift]) return;
          l.b = other->at;
          l.sb = broadcast_strides(other->extents, hv.extents);
        } else if (std::holds_alternative<double>(o) || std::holds_alternative<std::int64_t>(o)) {
          l.number = static_cast<T>(std::holds_alternative<double>(o) ? std::get<double>(o) : static_cast<double>(std::get<std::int64_t>(o)));
        } else {
          return;
        }
        if (un.target == op_id_of<add_op> || un.target == op_id_of<sub_op>) {
          const std::vector<const any_tensor*> none(un.args.size(), nullptr);
          l.alpha = static_cast<T>(kernel_args(un.target, un.args, none, &symbols_).real_or_default("alpha"));
        }
      } else {
        return;
      }
      if (other != nullptr) read(*other, head);
      s.links.push_back(std::move(l));
      chained_to_[u] = head;
      ++report_.chained;
      cur = u;
    }
  }

  static constexpr ir::node_id no_node = static_cast<ir::node_id>(-1);

  std::shared_ptr<const exported_program> ep_;
  std::vector<ir::node_id> user_;
  std::vector<std::pair<ir::node_id, any_tensor>> lifted_;
  compile_options options_;
  // (planning only)
  std::vector<std::vector<ir::node_id>> users_;
  std::vector<bool> is_output_;
  std::vector<ir::node_id> chained_to_;
  // the plan (for planned_extents_)
  bool planned_ = false;
  std::vector<std::vector<index_t>> planned_extents_;
  symbol_table symbols_;
  std::span<const any_tensor> planning_inputs_;  // (the inputs being planned for; valid during plan() only)
  packed_weights packed_;  // constant weights packed, kept across plans
  std::vector<std::optional<any_tensor>> folded_cache_;  // per node: a folded value no symbol changes
  std::vector<value> values_;
  std::vector<buffer> buffers_;
  std::vector<std::size_t> offsets_;
  std::vector<ir::node_id> outs_;
  std::vector<std::unique_ptr<step>> steps_;
  storage arena_;
  plan_report report_;
};

// A program with data-dependent sizes (nonzero, masked_select: symbols bound only when the op that
// makes them runs) cannot be planned from its inputs' shapes: it runs node by node on the eager
// kernels, binding each data-dependent size from the result that makes it (checked against its
// range), checking the run-time assertions that wait for it, and each result's extents against the
// program's. It allocates per call; the planned engine runs every other program.
class stepwise_engine final : public engine {
 public:
  stepwise_engine(std::shared_ptr<const exported_program> ep, std::vector<ir::node_id> user,
                  std::vector<std::pair<ir::node_id, any_tensor>> lifted)
      : ep_(std::move(ep)), user_(std::move(user)), lifted_(std::move(lifted)) {}

  bool planned_for(std::span<const any_tensor>) const noexcept override { return false; }

  void run(std::span<const any_tensor> inputs, const symbol_table& bound, std::vector<any_tensor>& outputs) override {
    const ir::graph& g = ep_->graph();
    const range_constraints& ranges = ep_->ranges();
    symbol_table symbols = bound;
    std::vector<std::optional<any_tensor>> values(g.size());
    for (const auto& [id, t] : lifted_) values[id] = t;
    for (std::size_t i = 0; i < user_.size(); ++i) values[user_[i]] = inputs[i];
    for (ir::node_id n = 0; n < g.size(); ++n) {
      const ir::node& node = g[n];
      if (node.op != ir::node_op::call_function || ir::is_assertion(node)) continue;
      std::vector<const any_tensor*> tensors(node.args.size(), nullptr), list;
      for (std::size_t k = 0; k < node.args.size(); ++k) {
        if (const auto* r = std::get_if<ir::value_ref>(&node.args[k])) tensors[k] = &*values[r->node];
        else if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&node.args[k]))
          for (const ir::value_ref& r : *refs) list.push_back(&*values[r.node]);
      }
      any_tensor out = find_kernel(node.target)(kernel_args(node.target, node.args, tensors, &symbols, list));
      const ir::tensor_meta& meta = node.vals.front();
      bool bound_now = false;
      for (std::size_t d = 0; d < meta.rank() && d < out.rank(); ++d) {
        const ir::sym_expr& e = meta.shape[d];
        if (!e.is_symbol() || !ranges.is_unbacked(e.name()) || symbols.value(e.name())) continue;
        std::string by = "node '";
        by += node.name;
        by += "' (dim ";
        by += std::to_string(d);
        by += ')';
        symbols.bind(e.name(), out.extents()[d], by);
        bound_now = true;
      }
      if (bound_now) {
        ranges.check(symbols);
        ep_->check_assertions(symbols);
      }
      check_extents(node, out, symbols);
      values[n] = std::move(out);
    }
    const auto& outs = g.output().args;
    outputs.resize(outs.size());
    for (std::size_t i = 0; i < outs.size(); ++i) outputs[i] = *values[std::get<ir::value_ref>(outs[i]).node];
  }

  plan_report report() const override {
    plan_report r;
    for (const ir::node& n : ep_->graph().nodes())
      if (n.op == ir::node_op::call_function && !ir::is_assertion(n)) {
        ++r.steps;
        r.allocating_ops.emplace_back(n.target.name());
      }
    return r;
  }

 private:
  // A result whose extents differ from what the program records: a bug in typex, reported.
  static void check_extents(const ir::node& node, const any_tensor& out, const symbol_table& symbols) {
    const ir::tensor_meta& m = node.vals.front();
    bool same = out.scalar_type() == m.scalar_type && out.rank() == m.rank();
    for (std::size_t d = 0; same && d < m.rank(); ++d) {
      const auto v = m.shape[d].evaluate(symbols);
      same = !v || *v == out.extents()[d];  // (anonymous dims: not followed by the graph)
    }
    if (!same) {
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::eigen: node '"); w.put(node.name); w.put("' ("); w.put(node.target.name()); w.put(") produced ");
        w.put(out.to_string()); w.put(" where the program records "); w.put(m.to_string());
      });
    }
  }

  std::shared_ptr<const exported_program> ep_;
  std::vector<ir::node_id> user_;
  std::vector<std::pair<ir::node_id, any_tensor>> lifted_;
};

}  // namespace detail

TYPEX_EIGEN_API std::unique_ptr<detail::engine> detail::make_engine(std::shared_ptr<const exported_program> program,
                                                                  std::vector<ir::node_id> user_inputs,
                                                                  std::vector<std::pair<ir::node_id, any_tensor>> lifted,
                                                                  compile_options options) {
  if (program->ranges().has_unbacked())
    return std::make_unique<stepwise_engine>(std::move(program), std::move(user_inputs), std::move(lifted));
  return std::make_unique<planned_engine>(std::move(program), std::move(user_inputs), std::move(lifted), options);
}

}  // namespace typex::eigen
