// typex/passes/autodiff.hpp — reverse-mode differentiation of a functional graph (aot_autograd's
// joint graph, as a pass over the IR).
//
//   ir::graph joint = passes::differentiate(forward, {.loss = 0, .wrt = {w, b, x}});
//
// The result is the forward graph followed by its backward: every forward node is kept (same names,
// same order), then, walking the forward nodes from the last to the first, each node that lies
// between a value asked for (`wrt`) and the loss adds the nodes of its derivative. Its outputs are
// the forward's, then one gradient per `wrt` entry, in order. A value that does not reach the loss
// gets a gradient of zeros (zeros_like), so every request has an output.
//
// Each op's derivative lives in the op's own definition (ops/<op>.hpp), as a template the pass
// instantiates with its vjp_context:
//
//   template <class C> static void vjp(C& c) {             // sigmoid: g y (1 - y)
//     const auto y = c.result();
//     c.accumulate("self", c.mul(c.grad(), c.mul(y, c.add(c.neg(y), 1.0))));
//   }
//
// c.grad() is the gradient flowing into the node's output, c.input("self") the forward value,
// c.result() the node's output; c.wants("other") says whether that input needs a gradient (a
// floating-point value on a path from a `wrt` entry); c.accumulate adds a gradient for an input,
// summing it down to the input's shape where the op broadcast it and converting its dtype. The
// derivative is written with typex's ops (c.mul, c.sum, c.reshape, ...), recorded as nodes of the
// graph: the backward is itself a program that prints, verifies and runs on every backend.
//
// An op that is not differentiable (comparisons, argmax, factories) declares
//   static constexpr bool differentiable = false;
// and stops gradients. An op with neither is a missing derivative: differentiating through it is
// an unsupported_error naming the op, the node and where the user's code recorded it.
#pragma once

#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>
#include <typex/ir/call.hpp>
#include <typex/ir/describe.hpp>
#include <typex/ir/graph.hpp>
#include <typex/ops/all.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex::passes {

using ir::value_ref;

// What to differentiate: the loss (the position of the forward output that is the loss, a rank-0
// floating-point value) and the placeholders whose gradients are wanted.
struct gradient_request {
  std::size_t loss = 0;
  std::vector<ir::node_id> wrt = {};
};

// The ops a derivative or a decomposition is written with: each records one node in the graph
// being built, with the metadata (dtype, symbolic shape) its op's run-time rule gives
// (ir/describe.hpp: the rule in the op's own header; the builder has none of its own). Values are
// the graph's value_refs.
class graph_builder {
 public:
  explicit graph_builder(ir::graph& g) : g_(&g) {}

  ir::graph& graph() noexcept { return *g_; }
  const ir::tensor_meta& meta(value_ref v) const { return g_->meta(v); }
  dtype scalar_type(value_ref v) const { return meta(v).scalar_type; }
  std::size_t rank(value_ref v) const { return meta(v).rank(); }
  const std::vector<ir::sym_expr>& shape(value_ref v) const { return meta(v).shape; }
  // extent d of v (negative: from the end)
  TYPEX_API ir::sym_expr size(value_ref v, std::int64_t d) const;
  // d wrapped into [0, rank) for a value of rank `rank`
  static std::size_t wrap(std::int64_t d, std::size_t rank) {
    return ir::wrap_dim("typex::passes::differentiate", d, rank);
  }

  // pointwise (tensor op tensor broadcasts; tensor op number keeps the tensor's dtype and shape)
  TYPEX_API value_ref add(value_ref a, value_ref b);
  TYPEX_API value_ref add(value_ref a, double b);
  TYPEX_API value_ref sub(value_ref a, value_ref b);
  TYPEX_API value_ref sub(value_ref a, double b);
  TYPEX_API value_ref mul(value_ref a, value_ref b);
  TYPEX_API value_ref mul(value_ref a, double b);
  TYPEX_API value_ref div(value_ref a, value_ref b);
  TYPEX_API value_ref div(value_ref a, double b);
  TYPEX_API value_ref pow(value_ref a, double exponent);
  TYPEX_API value_ref pow(value_ref a, value_ref exponent);
  TYPEX_API value_ref neg(value_ref a);
  TYPEX_API value_ref exp(value_ref a);
  TYPEX_API value_ref log(value_ref a);
  TYPEX_API value_ref sqrt(value_ref a);
  TYPEX_API value_ref rsqrt(value_ref a);
  TYPEX_API value_ref tanh(value_ref a);
  TYPEX_API value_ref sigmoid(value_ref a);
  TYPEX_API value_ref reciprocal(value_ref a);
  TYPEX_API value_ref sin(value_ref a);
  TYPEX_API value_ref cos(value_ref a);
  TYPEX_API value_ref erf(value_ref a);
  TYPEX_API value_ref abs(value_ref a);
  // comparisons: bool results
  TYPEX_API value_ref gt(value_ref a, double b);
  TYPEX_API value_ref lt(value_ref a, double b);
  TYPEX_API value_ref ge(value_ref a, double b);
  TYPEX_API value_ref le(value_ref a, double b);
  TYPEX_API value_ref ne(value_ref a, double b);
  TYPEX_API value_ref eq(value_ref a, double b);
  TYPEX_API value_ref gt(value_ref a, value_ref b);
  TYPEX_API value_ref lt(value_ref a, value_ref b);
  TYPEX_API value_ref ge(value_ref a, value_ref b);
  TYPEX_API value_ref le(value_ref a, value_ref b);
  TYPEX_API value_ref eq(value_ref a, value_ref b);
  TYPEX_API value_ref logical_not(value_ref a);
  TYPEX_API value_ref logical_or(value_ref a, value_ref b);
  TYPEX_API value_ref logical_and(value_ref a, value_ref b);
  // x with `value` where mask (broadcast to x) is true
  TYPEX_API value_ref masked_fill(value_ref x, value_ref mask, double value);
  TYPEX_API value_ref where(value_ref condition, value_ref a, value_ref b);
  // reductions over `dims`, which the caller lists (an empty list reduces nothing: x itself, not
  // torch's sum over every dim; sum_all sums every dim)
  TYPEX_API value_ref sum(value_ref x, std::vector<std::int64_t> dims, bool keepdim = false);
  TYPEX_API value_ref mean(value_ref x, std::vector<std::int64_t> dims, bool keepdim = false);
  // every element
  TYPEX_API value_ref sum_all(value_ref x);
  TYPEX_API value_ref softmax(value_ref x, std::int64_t dim);
  TYPEX_API value_ref log_softmax(value_ref x, std::int64_t dim);
  // shapes
  TYPEX_API value_ref reshape(value_ref x, std::vector<ir::sym_expr> sizes);
  TYPEX_API value_ref expand(value_ref x, std::vector<ir::sym_expr> sizes);
  TYPEX_API value_ref permute(value_ref x, std::vector<std::int64_t> dims);
  TYPEX_API value_ref transpose(value_ref x, std::int64_t d0, std::int64_t d1);
  TYPEX_API value_ref unsqueeze(value_ref x, std::int64_t d);
  TYPEX_API value_ref squeeze(value_ref x, std::int64_t d);
  TYPEX_API value_ref cat(const std::vector<value_ref>& xs, std::int64_t dim);
  TYPEX_API value_ref slice(value_ref x, std::int64_t dim, ir::sym_expr start, ir::sym_expr end);
  TYPEX_API value_ref select(value_ref x, std::int64_t dim, ir::sym_expr index);
  TYPEX_API value_ref triu(value_ref x, std::int64_t diagonal);
  TYPEX_API value_ref tril(value_ref x, std::int64_t diagonal);
  TYPEX_API value_ref index_select(value_ref x, std::int64_t dim, value_ref index);
  // x with its elements along dim in reverse order (a static extent)
  TYPEX_API value_ref flip(value_ref x, std::int64_t dim);
  // x with step - 1 zeros after each element along dim, the last one's dropped: extent (n - 1) step + 1
  // (the gradient of a strided slice or convolution, spread back over the positions it took)
  TYPEX_API value_ref spread(value_ref x, std::int64_t dim, std::int64_t step);
  // aten.conv2d (no bias): x [N, C, H, W], w [O, C/groups, kh, kw]
  TYPEX_API value_ref conv2d(value_ref x, value_ref w, std::array<std::int64_t, 2> stride, std::array<std::int64_t, 2> padding,
                             std::array<std::int64_t, 2> dilation, std::int64_t groups);
  // linear algebra: [n, k] x [k, m]; [b, n, k] x [b, k, m]; matmul broadcasting leading dims (rank >= 2)
  TYPEX_API value_ref mm(value_ref a, value_ref b);
  TYPEX_API value_ref bmm(value_ref a, value_ref b);
  TYPEX_API value_ref matmul(value_ref a, value_ref b);
  // the last two dims swapped
  value_ref mT(value_ref x) { return transpose(x, -2, -1); }
  // factories and conversions
  TYPEX_API value_ref to(value_ref x, dtype d);
  TYPEX_API value_ref zeros_like(value_ref x);
  TYPEX_API value_ref full_like(value_ref x, double v);
  TYPEX_API value_ref zeros(std::vector<ir::sym_expr> sizes, dtype d);
  TYPEX_API value_ref full(std::vector<ir::sym_expr> sizes, double v, dtype d);
  TYPEX_API value_ref arange(ir::sym_expr end, dtype d = dtype::i64);
  TYPEX_API value_ref arange(std::int64_t start, std::int64_t end, std::int64_t step, dtype d = dtype::i64);

  // g with `before` zeros in front of it and `after` zeros behind it along dim (the gradient of a
  // slice or a select: zeros where the input was not taken)
  TYPEX_API value_ref pad_along(value_ref g, std::size_t dim, ir::sym_expr before, ir::sym_expr after);
  // x normalized over `dims` with its own statistics: (x - mean) * rstd and rstd = 1/sqrt(var + eps)
  // (biased variance, kept dims), as layer, batch and group norm compute them
  TYPEX_API std::pair<value_ref, value_ref> normalized(value_ref x, const std::vector<std::int64_t>& dims, double eps);
  // the gradient of x for the gradient dxhat of such an xhat:
  // rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat))
  TYPEX_API value_ref normalize_backward(value_ref dxhat, value_ref xhat, value_ref rstd, const std::vector<std::int64_t>& dims);
  // g (the gradient of a reduction over `dims` of a value shaped `shape`) back to that shape: the
  // reduced dims put back (when the reduction dropped them) and expanded
  TYPEX_API value_ref expand_reduced(value_ref g, std::vector<ir::sym_expr> shape, std::vector<std::int64_t> dims, bool keepdim);
  // v divided by the number of elements `dims` of a value shaped `shape` hold (a number when the
  // extents are static, a count computed in the graph when they are symbolic)
  TYPEX_API value_ref divide_by_count(value_ref v, std::vector<ir::sym_expr> shape, const std::vector<std::int64_t>& dims);
  // every dim of a rank-`rank` value but `keep`
  static std::vector<std::int64_t> all_dims_but(std::size_t rank, std::int64_t keep) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < rank; ++i)
      if (static_cast<std::int64_t>(i) != keep) out.push_back(static_cast<std::int64_t>(i));
    return out;
  }
  // v ([C]) shaped to broadcast along dim 1 of a rank-`rank` value: [1, C, 1, ...]
  TYPEX_API value_ref along_channels(value_ref v, std::size_t rank);

  // g summed down to `target`'s shape (undoing a broadcast: leading dims, and dims where target
  // has extent 1), then converted to its dtype.
  TYPEX_API value_ref sum_to(value_ref g, ir::tensor_meta target);

  // The provenance new nodes get (the forward node a derivative belongs to).
  void set_origin(std::vector<ir::module_frame> stack, std::string trace) {
    stack_ = std::move(stack);
    trace_ = std::move(trace);
  }

  // None, as an argument (an optional argument left out in the middle of a call)
  static ir::argument none() { return ir::none_t{}; }
  // One node: the op, its arguments in schema order, its result's metadata.
  TYPEX_API value_ref emit(op_id op, std::vector<ir::argument> args, ir::tensor_meta meta);
  // One node, its result's metadata given by the op's run-time rule (ir/describe.hpp).
  TYPEX_API value_ref emit(op_id op, std::vector<ir::argument> args);

 protected:
  TYPEX_API value_ref pointwise(op_id op, value_ref a, value_ref b);
  TYPEX_API value_ref pointwise(op_id op, value_ref a, double b);
  value_ref unary(op_id op, value_ref a) { return emit(op, {a}); }

 public:
  // the shape two shapes broadcast to
  TYPEX_API static std::vector<ir::sym_expr> broadcast(const std::vector<ir::sym_expr>& a, const std::vector<ir::sym_expr>& b);

 protected:

  ir::graph* g_;
  std::vector<ir::module_frame> stack_;
  std::string trace_;
};

// A node of a graph, with the ops to write nodes in its place or after it: what an op's
// derivative (vjp_context) and its decomposition (passes/decompose.hpp: decompose_context) are
// handed. Arguments are named as the op's schema names them.
class node_context : public graph_builder {
 public:
  using graph_builder::graph_builder;

  const ir::node& node() const noexcept { return *node_; }
  // the node's arguments, read by name (integer("dim"), real_or_default("alpha"), ints("dims"))
  const ir::call_args& args() const noexcept { return *args_; }
  // argument `name` is a tensor (a graph value), not a number or None
  TYPEX_API bool is_tensor(ir::arg_name name) const;
  // the value of tensor argument `name`
  TYPEX_API value_ref input(ir::arg_name name) const;
  // the values of tensor-list argument `name` (cat's tensors)
  TYPEX_API std::vector<value_ref> inputs(ir::arg_name name) const;
  // argument `name` as a symbolic integer (slice's start, select's index)
  TYPEX_API ir::sym_expr sym(ir::arg_name name) const;
  // argument `name` as symbolic sizes (view's size)
  TYPEX_API std::vector<ir::sym_expr> sizes(ir::arg_name name) const;
  // the dims a reduction's argument `name` names, wrapped, for an input of rank `rank` (None or
  // an empty list: every dim, as the reductions read it)
  TYPEX_API std::vector<std::int64_t> reduced_dims(ir::arg_name name, std::size_t rank) const;
  // this op cannot be handled for these arguments: an unsupported_error naming the op, the node
  // and the user's line
  [[noreturn]] TYPEX_API void unsupported(std::string_view why) const;

 protected:
  void bind_node(ir::node_id id, const ir::node& node, const ir::call_args& a) {
    id_ = id;
    node_ = &node;
    args_ = &a;
  }
  TYPEX_API std::optional<value_ref> arg_value(ir::arg_name name, std::size_t k) const;
  std::string_view who() const noexcept { return who_; }

  std::string_view who_ = "typex::passes";      // (the pass, in messages)
  std::string_view lacks_ = "cannot be handled";  // ("has no derivative")

  ir::node_id id_ = 0;
  const ir::node* node_ = nullptr;
  const ir::call_args* args_ = nullptr;
};

// What an op's derivative (`template <class C> static void vjp(C& c)`) is handed: the forward node,
// the gradient of its output, and the ops to write the derivative with.
class vjp_context : public node_context {
 public:
  using node_context::node_context;

  // the node's output k, and the gradient flowing into it (zeros where none flows)
  value_ref result(std::uint32_t k = 0) const { return value_ref{id_, k}; }
  TYPEX_API value_ref grad(std::uint32_t k = 0);
  // whether tensor argument `name` (list element k) needs a gradient
  TYPEX_API bool wants(ir::arg_name name, std::size_t k = 0) const;
  // adds g to the gradient of tensor argument `name` (list element k)
  TYPEX_API void accumulate(ir::arg_name name, value_ref g, std::size_t k = 0);

  // (the pass's side)
  // (node: the forward graph's, which does not grow while the derivative adds nodes)
  void bind(ir::node_id id, const ir::node& node, const ir::call_args& a, std::vector<std::vector<std::optional<value_ref>>>& grads,
            const std::vector<bool>& wanted) {
    bind_node(id, node, a);
    who_ = "typex::passes::differentiate";
    lacks_ = "has no derivative";
    grads_ = &grads;
    wanted_ = &wanted;
  }

 private:
  std::vector<std::vector<std::optional<value_ref>>>* grads_ = nullptr;  // per node, per output
  const std::vector<bool>* wanted_ = nullptr;                             // per node
};

// Whether an op is differentiable, and its derivative when it is.
enum class derivative_kind : unsigned char { defined, not_differentiable, missing };

template <class Op>
constexpr derivative_kind derivative_of() noexcept {
  if constexpr (requires(vjp_context& c) { Op::vjp(c); }) return derivative_kind::defined;
  else if constexpr (requires { Op::differentiable; }) return Op::differentiable ? derivative_kind::missing : derivative_kind::not_differentiable;
  else return derivative_kind::missing;
}

namespace detail {
using vjp_fn = void (*)(vjp_context&);
TYPEX_API void add_user_derivative(op_id id, derivative_kind kind, vjp_fn fn);
}  // namespace detail

// Makes a user-defined op's derivative known to the pass (the registry's ops need nothing): its
// `vjp`, or its `differentiable = false`. Idempotent; thread-safe.
template <op_type Op>
void register_derivative() {
  constexpr derivative_kind k = derivative_of<Op>();
  static_assert(k != derivative_kind::missing,
                "typex::passes::register_derivative: the op defines no `template <class C> static void vjp(C& c)` and does "
                "not declare `static constexpr bool differentiable = false`");
  detail::vjp_fn fn = nullptr;
  if constexpr (k == derivative_kind::defined) fn = [](vjp_context& c) { Op::vjp(c); };
  detail::add_user_derivative(op_id_of<Op>, k, fn);
}

// What the registry (or register_derivative) says of op `id`; missing for an op neither knows.
TYPEX_API derivative_kind derivative_kind_of(op_id id);

// The forward graph followed by the backward of output `r.loss` with respect to `r.wrt`; the
// outputs: the forward's, then one gradient per `wrt` entry.
TYPEX_API ir::graph differentiate(const ir::graph& forward, const gradient_request& r);

// `graph` with each training-mode dropout (aten.dropout with train and p > 0) written as
// `input * typex.dropout_mask(input, p)`: the same draw, the same numbers bit for bit, and a mask
// that is a value of the graph, which the product's derivative reads (as aot_autograd's joint
// graphs keep native_dropout's mask for the backward). The product keeps the dropout's name,
// module stack and stack trace; every other node is copied as it is. make_joint runs it before
// differentiate. `exposed`, when given, receives how many dropouts were rewritten.
TYPEX_API ir::graph expose_dropout_masks(const ir::graph& graph, std::size_t* exposed = nullptr);

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/passes/detail/autodiff_impl.hpp>
#endif  // TYPEX_HEADER_DEFINITIONS
