// typex/backend/eigen/kernels/steps.hpp — part of plan_impl.hpp: the steps a plan is lowered to.
//
// Each step runs one node (or a node with its epilogue, pool or pointwise chain) on raw buffers
// found through the plan's locations (the arena, an input, a constant); kernel_step runs any
// other op's eager kernel on views of the arena.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex/backend/eigen/kernels/steps.hpp is a part of plan_impl.hpp: include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen {

namespace detail {

// Where a step finds a value (the planner's location of it).
using operand = plan::location;

struct run_ctx {
  std::byte* arena;
  const std::vector<std::size_t>* offsets;  // per buffer id
  std::span<const any_tensor> inputs;
  int threads;
  // per buffer id: where this call puts the buffer instead of the arena (a program output's own
  // tensor: planned_engine::direct_outputs_), or null
  const std::vector<std::byte*>* redirect = nullptr;

  std::byte* get(const operand& o) const {
    switch (o.kind) {
      case operand::where::arena:
        if (redirect != nullptr && (*redirect)[o.index] != nullptr) return (*redirect)[o.index];
        return arena + (*offsets)[o.index];
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
  // Only the tensors that live as long as the engine are cached (the lifted parameters, buffers and
  // constants, and folded values no symbol changes: plan::planner::stable); another value folded at
  // planning time is made anew by each plan, and its address could be reused by another.
  const plan::planner* owner = nullptr;

  // The buffer for this weight and key, and whether it already holds the packed weight.
  template <class T>
  std::pair<std::shared_ptr<grow_buffer<T>>, bool> get(const void* data, std::array<index_t, 4> key) {
    if (owner == nullptr || !owner->stable(data)) return {std::make_shared<grow_buffer<T>>(), false};
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
    if (w.kind != operand::where::constant || g.large_kernel) return;  // (a large kernel is read in place)
    bool done = false;
    std::tie(packed, done) = cache.get<T>(w.tensor->raw_data(), {g.winograd ? 2 : 1, g.oc, g.groups, g.krows()});  // (the layout: Winograd or im2col)
    if (!done) conv_pack_weights(g, w.tensor->template data<T>(), packed->get(static_cast<std::size_t>(conv_packed_weights<T>(g))));
    prepacked = true;
  }
  void run(const run_ctx& c) override {
    if (!prepacked && !g.large_kernel) conv_pack_weights(g, c.as<T>(w), packed->get(static_cast<std::size_t>(conv_packed_weights<T>(g))));
    conv2d_into<T>(g, c.as<T>(x), g.large_kernel ? c.as<T>(w) : packed->get(0), b.kind == operand::where::none ? nullptr : c.as<T>(b), act, c.as<T>(out),
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
  ir::node_id id;
  kernel_fn fn;
  operands args, list;
  // A view of the result's arena buffer, handed to the kernel (call_args::into) where it overlaps
  // none of the call's arena operands: a kernel that takes it writes there and nothing is copied.
  std::optional<any_tensor> destination;
  const symbol_table* symbols;
  operand out;
  dtype dt;
  std::vector<index_t> extents;  // what the node records (its symbols bound)
  void run(const run_ctx& c) override {
    args.bind_inputs(c.inputs);
    list.bind_inputs(c.inputs);
    kernel_args ka(node->target, node->args, args.ptrs, symbols, list.ptrs);
    if (destination) ka.into(&*destination);
    const any_tensor r = fn(ka);
    if (r.scalar_type() != dt || r.extents() != extents) {  // a bug in typex: reported, not computed on
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::eigen: node '"); w.put(node->name); w.put("' ("); w.put(node->target.name()); w.put(") produced ");
        w.put(r.to_string()); w.put(" where the program records "); w.put(tensor_shape(dt, extents).to_string());
      });
    }
    if (static_cast<const void*>(r.raw_data()) != static_cast<const void*>(c.get(out)))  // (written in place: nothing to copy)
      std::memcpy(c.get(out), r.raw_data(), static_cast<std::size_t>(r.numel()) * itemsize(dt));
  }
};
}  // namespace detail
}  // namespace typex::eigen
