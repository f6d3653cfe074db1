// typex/backend/cuda/detail/engine_impl.hpp — the CUDA backend's planned engine (program.hpp).
//
// Host C++ (no CUDA header but cuBLASLt's descriptors, lt.hpp): the planner's target lowers each
// step to launch records with device addresses resolved at plan time (the arena never moves), and
// the engine runs them on its device_runtime, natively or on the emulator.
#pragma once

#include <typex/backend/cuda/chain.hpp>
#include <typex/backend/cuda/detail/records.hpp>
#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/launch.hpp>
#include <typex/backend/cuda/lt.hpp>
#include <typex/backend/cuda/memory.hpp>
#include <typex/backend/cuda/program.hpp>
#include <typex/backend/eigen/kernels.hpp>  // (constant folding at planning time runs on the host)
#include <typex/backend/kit/engine.hpp>
#include <typex/ir/call.hpp>
#include <typex/ops/all.hpp>
#include <typex/plan/planner.hpp>

#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace typex::cuda {

namespace detail {

// The ops the engine lowers besides the pointwise chain's (chain.hpp): by id.
inline bool is_copy_op(op_id op) { return op == op_id_of<aten::transpose_int> || op == op_id_of<aten::permute>; }
inline bool is_view_op(op_id op) { return has(plan::rules_of(op), plan::rule::view); }
inline bool is_binary_head(op_id op) { return has(plan::rules_of(op), plan::rule::pointwise_head); }

// The call of `node` with no tensors (what the lowering decodes attributes from).
struct call_of {
  std::vector<const any_tensor*> none;
  ir::call_args args;
  call_of(const ir::node& n, const symbol_table* s) : none(n.args.size(), nullptr), args(n.target, n.args, none, s) {}
};

// softmax / log_softmax over the last dim, sum / mean over exactly the last dim, of an f32 input
// of rank >= 1 (no dtype conversion): a row kernel (kernels/reduce.cuh).
inline std::optional<reduce_kind> row_reduction(const ir::node& node, const symbol_table* symbols) {
  const op_id op = node.target;
  const bool soft = op == op_id_of<aten::softmax_int>, log_soft = op == op_id_of<aten::log_softmax_int>;
  const bool sum = op == op_id_of<aten::sum_dim_IntList>, mean = op == op_id_of<aten::mean_dim>;
  if (!soft && !log_soft && !sum && !mean) return std::nullopt;
  const auto* x = node.args.empty() ? nullptr : std::get_if<ir::value_ref>(&node.args[0]);
  if (x == nullptr) return std::nullopt;
  const call_of c(node, symbols);
  if (c.args.has("dtype")) return std::nullopt;
  const std::size_t rank = node.vals.front().rank() + ((sum || mean) && !(c.args.has("keepdim") && c.args.flag("keepdim")) ? 1 : 0);
  if (rank == 0) return std::nullopt;
  if (soft || log_soft) {
    if (ir::wrap_dim(node.target.name(), c.args.integer("dim"), rank) != rank - 1) return std::nullopt;
    return soft ? reduce_kind::softmax : reduce_kind::log_softmax;
  }
  const auto dims = c.args.has("dim") ? c.args.ints("dim") : std::vector<std::int64_t>{};
  if (dims.size() != 1 || ir::wrap_dim(node.target.name(), dims[0], rank) != rank - 1) return std::nullopt;
  return sum ? reduce_kind::sum : reduce_kind::mean;
}
}  // namespace detail

// Whether the backend runs call `node` of `g`: its op has a lowering here, and its result and every
// tensor argument have the dtypes and ranks the kernels take (f32; at most max_rank dims for the
// elementwise kernels). Asked of every node before anything is planned or allocated.
TYPEX_CUDA_API bool supports(const ir::graph& g, const ir::node& node) {
  if (node.op != ir::node_op::call_function) return true;
  const op_id op = node.target;
  const ir::tensor_meta& out = node.vals.front();
  if (detail::is_view_op(op)) return true;  // (any dtype: no kernel)
  if (detail::is_copy_op(op)) {
    const std::size_t item = itemsize(out.scalar_type);
    return out.rank() <= static_cast<std::size_t>(max_rank) && (item == 1 || item == 2 || item == 4 || item == 8);
  }
  // (this kernels compute in f32: every tensor read and the result; bits of another dtype
  // read as f32 would be wrong numbers, a bool read as f32 four times its bytes)
  if (out.scalar_type != dtype::f32) return false;
  for (const ir::argument& a : node.args) {
    if (const auto* r = std::get_if<ir::value_ref>(&a); r != nullptr && g[r->node].vals.front().scalar_type != dtype::f32) return false;
    if (std::holds_alternative<std::vector<ir::value_ref>>(a)) return false;
  }
  if (op == op_id_of<linear_op>) return true;
  if (detail::row_reduction(node, nullptr)) return true;
  if (out.rank() > static_cast<std::size_t>(max_rank)) return false;
  if (detail::is_binary_head(op)) {
    if (node.args.size() < 2) return false;
    for (std::size_t k = 0; k < 2; ++k) {
      const ir::argument& a = node.args[k];
      const bool number = std::holds_alternative<double>(a) || std::holds_alternative<std::int64_t>(a) || std::holds_alternative<ir::sym_expr>(a);
      if (!number && !std::holds_alternative<ir::value_ref>(a)) return false;
    }
    return std::holds_alternative<ir::value_ref>(node.args[0]) || std::holds_alternative<ir::value_ref>(node.args[1]);
  }
  if (node.args.empty() || !std::holds_alternative<ir::value_ref>(node.args[0])) return false;
  const detail::call_of c(node, nullptr);
  return encode_unary(op, c.args).has_value();
}

namespace detail {

// A plan for one set of input extents: its arena, its input slots, its records and its graph.
struct cuda_plan {
  std::vector<std::vector<index_t>> extents;  // the inputs' (the key)
  storage arena, slots, workspace;  // (workspace: cuBLASLt's, on a GPU)
  std::vector<std::size_t> slot_offsets;
  std::list<lt_matmul> products;              // (a list: records hold indices, the objects never move)
  std::vector<lt_matmul*> product_at;
  std::vector<record> records;
  std::vector<storage> uploaded;              // folded values of this plan, on the device
  struct output {
    dtype dt;
    std::vector<index_t> extents;
    const std::byte* at;
  };
  std::vector<output> outputs;
  plan::report report;
  std::unique_ptr<captured_work> graph;
  bool graph_tried = false;
};

class planned_engine final : public kit::engine, private plan::target {
 public:
  static constexpr std::size_t lt_workspace_bytes = std::size_t{32} << 20;  // (32 MiB: cuBLASLt's guidance for Hopper)

  // rt: the runtime the engine runs on (its stream); out: the one its outputs are allocated from (the
  // caller's: an output the user keeps does not keep the engine's stream and pool alive).
  planned_engine(program_binding b, compile_options o, std::shared_ptr<device_runtime> rt, std::shared_ptr<device_runtime> out)
      : binding_(std::move(b)), options_(std::move(o)), rt_(std::move(rt)), memory_(rt_), out_memory_(std::move(out)),
        planner_(*binding_.graph, binding_.inputs, binding_.constants, {options_.fuse}) {
    // the weights, uploaded once (tied names share one upload)
    for (const auto& [id, t] : binding_.constants) upload_constant(t);
  }

  bool planned_for(std::span<const any_tensor> inputs) const noexcept override { return find(inputs) != nullptr; }

  void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) override {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      // (the device tag, then the runtime behind the bytes: an emulated device's tensor is host memory,
      // which a GPU must never be given, though both say cuda:0)
      if (inputs[i].device() != rt_->where()) wrong_device(i, inputs[i]);
      const device_info& in = detail::runtime_of(inputs[i].get_storage(), "typex::cuda: an input")->info();
      if (in.emulated != rt_->info().emulated) wrong_device(i, inputs[i]);
    }
    cuda_plan* p = find(inputs);
    if (p == nullptr) p = &make_plan(inputs, symbols);
    touch(*p);
    // the inputs into their fixed slots
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].nbytes() != 0) rt_->copy_on_device(p->slots.data() + p->slot_offsets[i], inputs[i].raw_data(), inputs[i].nbytes());
    if (options_.graphs && !rt_->info().emulated && !p->graph_tried) {
      p->graph_tried = true;
      try {
        p->graph = rt_->capture([&] { run_records(*p); });  // (captured, not run: replayed below)
      } catch (const device_error&) {
        p->graph = nullptr;  // (a plan that cannot be captured runs its records each call)
      }
    }
    if (p->graph) p->graph->replay();
    else run_records(*p);
    outputs.resize(p->outputs.size());
    bool allocated = false;
    for (std::size_t i = 0; i < p->outputs.size(); ++i) {
      const cuda_plan::output& o = p->outputs[i];
      any_tensor& t = outputs[i];
      if (t.scalar_type() != o.dt || t.extents() != o.extents || t.device() != rt_->where() || t.get_storage().use_count() > 1) {
        t = out_memory_.make_tensor(o.dt, o.extents);
        allocated = true;
      }
    }
    // (memory from the caller's stream-ordered pool is this stream's to write once that stream has
    // reached the allocation)
    if (allocated && out_memory_.runtime() != rt_) out_memory_.synchronize();
    for (std::size_t i = 0; i < p->outputs.size(); ++i)
      if (outputs[i].nbytes() != 0) rt_->copy_on_device(outputs[i].raw_data(), p->outputs[i].at, outputs[i].nbytes());
    rt_->synchronize();  // (a failure of the call is reported by the call)
  }

  plan::report report() const override { return plans_.empty() ? plan::report{} : plans_.front()->report; }

 private:
  // ---- plans ------------------------------------------------------------------------------------

  cuda_plan* find(std::span<const any_tensor> inputs) const noexcept {
    for (const auto& p : plans_) {
      bool same = p->extents.size() == inputs.size();
      for (std::size_t i = 0; same && i < inputs.size(); ++i) same = p->extents[i] == inputs[i].extents();
      if (same) return p.get();
    }
    return nullptr;
  }
  void touch(cuda_plan& p) {  // (most recently used first)
    const auto it = std::find_if(plans_.begin(), plans_.end(), [&](const auto& q) { return q.get() == &p; });
    if (it != plans_.begin()) std::rotate(plans_.begin(), it, it + 1);
  }

  cuda_plan& make_plan(std::span<const any_tensor> inputs, const symbol_table& symbols) {
    auto p = std::make_unique<cuda_plan>();
    building_ = p.get();
    pending_.clear();
    // slots for the inputs (each at a 256-byte boundary), allocated before the plan's arena
    std::size_t at = 0;
    for (const any_tensor& t : inputs) {
      p->slot_offsets.push_back(at);
      at += (t.nbytes() + 255) / 256 * 256;
      p->extents.push_back(t.extents());
    }
    planner_.plan(inputs, symbols, *this);
    p->slots = memory_.allocate(at);
    p->arena = memory_.allocate(planner_.arena().peak());
    // cuBLASLt's workspace (a GPU's algorithms may use up to this much; the emulator's model none)
    if (!p->products.empty() && !rt_->info().emulated) p->workspace = memory_.allocate(lt_workspace_bytes);
    // addresses are known now: every record's operands, then the outputs
    for (auto& make : pending_) p->records.push_back(make());
    pending_.clear();
    for (ir::node_id o : planner_.outputs()) {
      const plan::value& v = planner_.at(o);
      p->outputs.push_back({v.dt, v.extents, address(v.at)});
    }
    p->report = planner_.summary();
    building_ = nullptr;
    plans_.insert(plans_.begin(), std::move(p));
    if (plans_.size() > std::max<std::size_t>(options_.max_plans, 1)) plans_.pop_back();  // (its graph and arena go with it)
    return *plans_.front();
  }

  void run_records(cuda_plan& p) { run_records_on(*rt_, p.records, p.product_at, p.arena, rt_->info().emulated); }

  // ---- addresses --------------------------------------------------------------------------------

  std::byte* address(const plan::location& at) {
    switch (at.kind) {
      case plan::location::where::arena: return building_->arena.data() + planner_.arena().offset(at.index);
      case plan::location::where::input: return building_->slots.data() + building_->slot_offsets[at.index];
      case plan::location::where::constant: return constant(*at.tensor);
      case plan::location::where::none: break;
    }
    typex::detail::raise_message<ir::graph_error>("typex::cuda: a value without a location (a bug in the lowering)");
  }
  // A host constant's device copy: uploaded when the engine was made, or (a value folded at
  // planning time) now, kept with the plan.
  std::byte* constant(const any_tensor& t) {
    for (const auto& [host, dev] : weights_)
      if (host == t.raw_data() && dev.bytes() >= t.nbytes()) return dev.data();
    any_tensor d = memory_.copy_of(t);
    building_->uploaded.push_back(d.get_storage());
    return d.raw_data();
  }
  void upload_constant(const any_tensor& t) {
    for (const auto& [host, dev] : weights_)
      if (host == t.raw_data()) return;
    any_tensor d = memory_.copy_of(t);
    weights_.emplace_back(t.raw_data(), d.get_storage());
  }

  // ---- plan::target -----------------------------------------------------------------------------

  any_tensor evaluate(const ir::node& node, std::span<const any_tensor* const> args, std::span<const any_tensor* const> list,
                      const symbol_table& symbols) override {
    const eigen::kernel_fn k = eigen::find_kernel(node.target);
    if (k == nullptr) {
      typex::detail::raise<unsupported_error>([&](auto& w) {
        w.put("typex::cuda: node '"); w.put(node.name); w.put("' ("); w.put(node.target.name());
        w.put(") reads only constants and is folded at planning time on the host, where no kernel runs it");
      });
    }
    return k(ir::call_args(node.target, node.args, args, &symbols, list));
  }
  bool is_activation(const ir::node& node, const symbol_table& symbols) override {
    if (node.op != ir::node_op::call_function || node.vals.front().scalar_type != dtype::f32) return false;
    std::vector<const any_tensor*> none(node.args.size(), nullptr);
    return encode_unary(node.target, ir::call_args(node.target, node.args, none, &symbols)).has_value();
  }
  bool fuses(dtype dt) const override { return dt == dtype::f32; }
  bool reads_strided(const ir::graph&, const ir::node&) override { return false; }
  std::size_t max_chain() const override { return max_links - 1; }  // (the head takes a link)

  bool lower(plan::planner& p, plan::step_plan& s) override {
    const ir::node& node = p.graph()[s.node];
    s.pool = plan::no_node;  // (no pooled epilogues on this backend yet: the pool runs as its own step)
    if (node.target == op_id_of<linear_op>) return lower_linear(p, s), true;
    if (detail::is_copy_op(node.target)) return lower_copy(p, s), true;
    if (const std::optional<reduce_kind> k = detail::row_reduction(node, &p.symbols())) return lower_rows(p, s, *k), true;
    return lower_chain(p, s);
  }
  void lower_kernel(plan::planner&, ir::node_id n) override {
    const ir::node& node = planner_.graph()[n];
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex::cuda: node '"); w.put(node.name); w.put("' ("); w.put(node.target.name());
      w.put(") has no CUDA kernel for its arguments");
    });
  }

  static std::string name_of(const ir::node& n) {
    std::string s = "node '";
    s += n.name;
    s += "' (";
    s += n.target.name();
    s += ')';
    return s;
  }

  // linear: Y[m, n] = X[m, k] W[n, k]ᵀ + b through cuBLASLt (lt.hpp: its A is W, its B is X), with
  // the activation after it in the product's epilogue where cuBLASLt has it (relu; tanh GELU) and
  // the bias there where it has a value per output feature. What the epilogue cannot do runs right
  // after, in place, as one chain kernel over Y viewed as [m, n]: a bias of one element
  // (broadcast), the other activations (exact GELU: cuBLASLt's GELU is the tanh form). A product
  // over k = 0 is zeros (then the bias and the activation).
  void lower_linear(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value* wt = p.arg(node, 1);
    const plan::value* b = p.arg(node, 2);
    const plan::value& y = p.at(s.node);
    const index_t k = x->extents.back(), n = wt->extents.front();
    index_t m = 1;
    for (std::size_t d = 0; d + 1 < x->extents.size(); ++d) m *= x->extents[d];
    const bool gemm = k > 0 && m > 0 && n > 0;
    const bool bias_in_epilogue = b != nullptr && b->numel() == n && gemm;
    epilogue e = epilogue::none;
    std::optional<chain_link> act;
    if (s.epilogue != plan::no_node) {
      const ir::node& an = p.graph()[s.epilogue];
      const detail::call_of c(an, &p.symbols());
      const bool tanh_gelu = an.target == op_id_of<gelu_op> && c.args.has("approximate") && c.args.text("approximate") == "tanh";
      if (gemm && (b == nullptr || bias_in_epilogue) && an.target == op_id_of<relu_op>) e = epilogue::relu;
      else if (gemm && (b == nullptr || bias_in_epilogue) && tanh_gelu) e = epilogue::gelu_tanh;
      else act = encode_unary(an.target, c.args);
    }
    const std::string what = name_of(node);
    const plan::value* yv = &y;
    if (gemm) {
      cuda_plan& cp = *building_;
      cp.products.push_back(make_linear(m, n, k, e, bias_in_epilogue));
      const std::size_t product = cp.product_at.size();
      cp.product_at.push_back(&cp.products.back());
      pending_.push_back([this, x, wt, b, yv, product, what, bias_in_epilogue] {
        record r;
        record::gemm g;
        g.product = product;
        g.args = row_major_operands(address(x->at), address(wt->at), address(yv->at));  // (swapped for cuBLAS there)
        g.args.workspace = building_->workspace.data();
        g.args.workspace_bytes = building_->workspace.bytes();
        if (bias_in_epilogue) {
          g.args.bias = address(b->at);
          building_->product_at[product]->set_bias_pointer(g.args.bias);
        }
        r.what = g;
        r.name = what;
        r.out = static_cast<std::byte*>(g.args.d);
        r.out_bytes = yv->bytes();
        return r;
      });
    } else {
      pending_.push_back([this, yv, what] {
        record r;
        r.what = record::zero{address(yv->at), yv->bytes()};
        r.name = what;
        r.out = static_cast<std::byte*>(address(yv->at));
        r.out_bytes = yv->bytes();
        return r;
      });
    }
    const bool bias_after = b != nullptr && !bias_in_epilogue;
    if (!bias_after && !act) return;
    const std::string after_name = act ? name_of(p.graph()[s.epilogue]) : what;
    pending_.push_back([this, yv, b, bias_after, act, m, n, after_name] {
      chain_params c{};
      c.out = address(yv->at);
      set_extents(c, {m, n});
      add_operand(c, address(yv->at), {n, 1});
      if (bias_after) {
        chain_link add;
        add.kind = link_kind::add;
        add.operand = static_cast<std::int8_t>(c.n_operands);
        add_operand(c, address(b->at), {0, b->numel() == 1 ? 0 : 1});
        c.links[c.n_links++] = add;
      }
      if (act) c.links[c.n_links++] = *act;
      return kernel_record(chain_launch(c), after_name, static_cast<std::byte*>(c.out), yv->bytes());
    });
  }

  // transpose / permute: a strided copy into the result's buffer.
  void lower_copy(plan::planner& p, plan::step_plan& s) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value& y = p.at(s.node);
    const detail::call_of c(node, &p.symbols());
    const std::vector<std::size_t> perm = plan::permutation(c.args, x->extents.size());
    const std::vector<index_t> base = plan::contiguous_strides(x->extents);
    std::vector<index_t> strides(perm.size());
    for (std::size_t d = 0; d < perm.size(); ++d) strides[d] = base[perm[d]];
    const std::string what = name_of(node);
    pending_.push_back([this, x, yv = &y, strides, what] {
      copy_params cp{};
      cp.dst = address(yv->at);
      cp.src = address(x->at);
      cp.itemsize = static_cast<int>(itemsize(yv->dt));
      cp.rank = static_cast<int>(yv->extents.size());
      cp.n = yv->numel();
      for (std::size_t d = 0; d < yv->extents.size(); ++d) {
        cp.extent[d] = yv->extents[d];
        cp.src_stride[d] = strides[d];
      }
      return kernel_record(copy_launch(cp), what, static_cast<std::byte*>(cp.dst), yv->bytes());
    });
  }

  // softmax / log_softmax over the last dim, sum / mean over it: one block per row.
  void lower_rows(plan::planner& p, plan::step_plan& s, reduce_kind k) {
    const ir::node& node = p.graph()[s.node];
    const plan::value* x = p.arg(node, 0);
    const plan::value& y = p.at(s.node);
    const index_t cols = x->extents.empty() ? 1 : x->extents.back();
    index_t rows = 1;  // (the leading extents' product: with cols = 0, sum gives zeros and mean NaNs)
    for (std::size_t d = 0; d + 1 < x->extents.size(); ++d) rows *= x->extents[d];
    const std::string what = name_of(node);
    pending_.push_back([this, x, yv = &y, k, rows, cols, what] {
      reduce_params r{};
      r.kind = k;
      r.in = reinterpret_cast<const float*>(address(x->at));
      r.out = reinterpret_cast<float*>(address(yv->at));
      r.rows = rows;
      r.cols = cols;
      return kernel_record(reduce_launch(r), what, reinterpret_cast<std::byte*>(r.out), yv->bytes());
    });
  }

  // A pointwise step: a binary head (add / sub / mul / div) or a lone activation, then the chain
  // the planner formed after it, as one chain kernel. A chain longer than a kernel takes (links,
  // tensor operands) is cut: the planner runs the rest as steps of their own.
  bool lower_chain(plan::planner& p, plan::step_plan& s) {
    const ir::graph& g = p.graph();
    const ir::node& node = g[s.node];
    const plan::value& y = p.at(s.node);
    struct pending_link {
      chain_link link;
      const plan::value* operand = nullptr;  // (a binary link's tensor)
    };
    std::vector<pending_link> links;
    const plan::value* start = nullptr;
    ir::node_id prev = plan::no_node;
    std::size_t tensors = 1, taken = 0;  // (taken: the chain's nodes lowered into this step)
    std::vector<ir::node_id> nodes{s.node};
    nodes.insert(nodes.end(), s.chain.begin(), s.chain.end());
    for (ir::node_id id : nodes) {
      const ir::node& u = g[id];
      const detail::call_of c(u, &p.symbols());
      pending_link pl;
      if (detail::is_binary_head(u.target)) {
        const auto* r0 = std::get_if<ir::value_ref>(&u.args[0]);
        const auto* r1 = std::get_if<ir::value_ref>(&u.args[1]);
        // which argument continues the running value (y), and which is the link's operand
        std::size_t other = 1;
        bool second = false;
        if (prev == plan::no_node) {
          if (r0 != nullptr) {
            start = p.arg(u, 0);
          } else {  // (a number first: the running value is the second argument)
            start = p.arg(u, 1);
            second = true;
            other = 0;
          }
        } else {
          second = r1 != nullptr && r1->node == prev;
          other = second ? 0 : 1;
        }
        pl.link.kind = u.target == op_id_of<add_op>   ? link_kind::add
                       : u.target == op_id_of<sub_op> ? link_kind::sub
                       : u.target == op_id_of<mul_op> ? link_kind::mul
                                                      : link_kind::div;
        pl.link.chain_second = second;
        const bool with_alpha = pl.link.kind == link_kind::add || pl.link.kind == link_kind::sub;  // (mul / div have none)
        pl.link.alpha = with_alpha && c.args.has("alpha") ? c.args.real("alpha") : 1.0;
        if (const auto* r = std::get_if<ir::value_ref>(&u.args[other])) {
          pl.operand = &p.at(r->node);
        } else {
          pl.link.number = c.args.real(other);  // (a double, an integer, or a size: evaluated with the plan's symbols)
          pl.link.operand = -1;
        }
      } else {
        const std::optional<chain_link> l = encode_unary(u.target, c.args);
        if (!l) break;  // (the planner forms chains of what is_activation accepts: not reached)
        if (prev == plan::no_node) start = p.arg(u, 0);
        pl.link = *l;
      }
      if (links.size() + 1 > static_cast<std::size_t>(max_links) || tensors + (pl.operand != nullptr) > static_cast<std::size_t>(max_operands))
        break;
      tensors += pl.operand != nullptr;
      links.push_back(pl);
      prev = id;
      ++taken;
    }
    if (start == nullptr || taken == 0) return false;  // (supports() refused what makes this so: not reached)
    s.chain.resize(taken - 1);  // (the rest: steps of their own)
    const std::string what = name_of(node);
    pending_.push_back([this, yv = &y, start, links, what] {
      chain_params c{};
      c.out = address(yv->at);
      set_extents(c, yv->extents);
      add_operand(c, address(start->at), contiguous_strides_in(start->extents, yv->extents));
      for (const auto& l : links) {
        chain_link link = l.link;
        if (l.operand != nullptr) {
          link.operand = static_cast<std::int8_t>(c.n_operands);
          add_operand(c, address(l.operand->at), contiguous_strides_in(l.operand->extents, yv->extents));
        }
        c.links[c.n_links++] = link;
      }
      return kernel_record(chain_launch(c), what, static_cast<std::byte*>(c.out), yv->bytes());
    });
    return true;
  }

  // The element strides of a contiguous tensor of extents `e` read at output extents `out`
  // (broadcasting: a leading or size-1 dim reads stride 0).
  static std::vector<index_t> contiguous_strides_in(const std::vector<index_t>& e, const std::vector<index_t>& out) {
    std::vector<index_t> s(out.size(), 0);
    const std::vector<index_t> own = plan::contiguous_strides(e);
    const std::size_t shift = out.size() - e.size();
    for (std::size_t d = 0; d < e.size(); ++d) s[d + shift] = e[d] == 1 && out[d + shift] != 1 ? 0 : own[d];
    return s;
  }
  static void set_extents(chain_params& c, const std::vector<index_t>& e) {
    c.rank = static_cast<int>(e.size());
    c.n = 1;
    for (std::size_t d = 0; d < e.size(); ++d) {
      c.extent[d] = e[d];
      c.n *= e[d];
    }
  }
  static void add_operand(chain_params& c, const void* at, const std::vector<index_t>& strides) {
    const int k = c.n_operands++;
    c.operands[k].data = at;
    for (std::size_t d = 0; d < strides.size(); ++d) c.operands[k].stride[d] = strides[d];
  }
  static record kernel_record(const kernel_launch& k, const std::string& what, std::byte* out, std::size_t bytes) {
    record r;
    r.what = k;
    r.name = what;
    r.out = out;
    r.out_bytes = bytes;
    return r;
  }

  [[noreturn]] void wrong_device(std::size_t i, const any_tensor& t) const {
    typex::detail::raise<device_error>([&](auto& w) {
      w.put("typex::cuda: input "); w.put_int(static_cast<long long>(i)); w.put(" is on "); w.put(t.device().to_string());
      if (!t.device().is_host()) w.put(detail::runtime_of(t.get_storage(), "typex::cuda: an input")->info().emulated ? " (emulated)" : " (a GPU)");
      w.put(", but the program runs on "); w.put(rt_->where().to_string());
      w.put(rt_->info().emulated ? " (emulated)" : " (a GPU)");
    });
  }

  program_binding binding_;
  compile_options options_;
  std::shared_ptr<device_runtime> rt_;
  device_memory memory_, out_memory_;
  plan::planner planner_;
  std::vector<std::pair<const void*, storage>> weights_;  // host tensor's bytes -> its device copy
  std::vector<std::unique_ptr<cuda_plan>> plans_;         // most recently used first
  cuda_plan* building_ = nullptr;
  std::vector<std::function<record()>> pending_;          // (a plan's records, made once its arena exists)
};

}  // namespace detail

// The engine on `rt` itself (no stream of its own: an eager call, which runs and is gone).
TYPEX_CUDA_API std::shared_ptr<kit::engine> detail::make_engine_on(program_binding binding, const compile_options& options,
                                                           const std::shared_ptr<device_runtime>& rt,
                                                           const std::shared_ptr<device_runtime>& out) {
  return kit::compile_program(std::move(binding), kit::backend_parts{
      "cuda", "CUDA", [](const ir::graph& g, const ir::node& n) { return supports(g, n); },
      [&](program_binding b) -> std::unique_ptr<kit::engine> { return std::make_unique<planned_engine>(std::move(b), options, rt, out); },
      nullptr});
}

TYPEX_CUDA_API std::shared_ptr<kit::engine> detail::make_engine(program_binding binding, const compile_options& options) {
  if (binding.inputs.size() != binding.user_inputs) {
    typex::detail::raise_message<unsupported_error>(
        "typex::cuda: the program writes buffers or trains parameters (module state passed to every call), which the "
        "CUDA backend does not run yet: run it on the Eigen backend");
  }
  if (binding.writes_user_inputs) {
    typex::detail::raise_message<unsupported_error>(
        "typex::cuda: the program writes its inputs (USER_INPUT_MUTATION), which the CUDA backend does not run yet");
  }
  // (each engine on a stream of its own: device_runtime::for_engine; a device made here is one already)
  const std::shared_ptr<device_runtime> caller = options.device ? options.device : make_native_device(0);
  const std::shared_ptr<device_runtime> rt = options.device ? caller->for_engine() : caller;
  return make_engine_on(std::move(binding), options, rt, caller);
}

}  // namespace typex::cuda
