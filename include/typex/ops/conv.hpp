// typex/ops/conv.hpp — conv2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d on [N, C, H, W] or
// [C, H, W] inputs.
//
//   conv2d<conv2d_options{.padding = {1, 1}}>(x, weight, bias)
//       aten.conv2d.default(x, weight, bias, [1, 1], [1, 1], [1, 1], 1)
//   max_pool2d<pool2d_options{.kernel = {2, 2}}>(x)
//       aten.max_pool2d.default(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
//   avg_pool2d<pool2d_options{.kernel = {2, 2}}>(x)
//       aten.avg_pool2d.default(x, [2, 2], [2, 2], [0, 0], False, True)
//   adaptive_avg_pool2d<1, 1>(x)
//       aten.adaptive_avg_pool2d.default(x, [1, 1])
// Options are template arguments (structural values): output sizes stay static for static inputs,
// and a kernel that cannot fit is a compile error (core/rules/conv.hpp).
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/conv.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>

#include <array>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace typex {

// The run-time rules' parts (each op's `infer`, ir/describe.hpp), over symbolic extents E
// (ir::sym_expr), spelled as core/rules/conv.hpp spells them.
namespace detail {
// An int[2] argument (argument i of the call): two values, one for both, or `fallback` where the
// call leaves it out (or gives [], max_pool2d's stride: the kernel).
template <class R>
std::array<std::int64_t, 2> pair_arg(const R& r, std::size_t i, std::array<std::int64_t, 2> fallback) {
  const auto& a = r.args();
  if (!a.has(i)) return fallback;
  if (a.is_integer(i)) return {a.integer(i), a.integer(i)};
  const auto v = a.ints(i);
  if (v.empty()) return fallback;
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) a.fail_text(i, "should hold one or two values");
  return {v[0], v[1]};
}

// [N, C, H, W] or [C, H, W]: the index of the channel dim
template <class R, class M>
std::size_t channel_dim(const R& r, const M& x) {
  if (x.rank() != 3 && x.rank() != 4)
    r.fail("input " + shape_meta::text(x.shape) + " has rank " + std::to_string(x.rank()) +
           "; expected [N, C, H, W] or [C, H, W]");
  return x.rank() - 3;
}

// A sliding window's output extent: (in + 2*pad - dil*(k - 1) - 1) // stride + 1; the dilated
// kernel must fit the padded input (two constants that do not are refused).
template <class R, class E>
E window_extent(const R& r, const E& in, const E& k, std::int64_t stride, std::int64_t pad, std::int64_t dil, std::size_t at) {
  const E padded = shape_meta::plus(in, 2 * pad);
  const E span = shape_meta::plus(shape_meta::times(E(index_t{dil}), shape_meta::plus(k, -1)), 1);  // the dilated kernel
  if (padded.is_constant() && span.is_constant() && *padded.value() < *span.value())
    r.fail("the input is too small at dim " + std::to_string(at) + ": " + in.to_string() + " + 2*" + std::to_string(pad) +
           " padding < " + span.to_string() + " (the dilated kernel)");
  return shape_meta::plus(shape_meta::divide(dim_op::floordiv, shape_meta::minus(padded, span), stride), 1);
}

// The same with ceil_mode (pools): the last window may hang over the end but must start inside
// the input or the left padding (PyTorch's pooling_output_shape). For a symbolic input, that
// second condition has a closed form: min(ceil(a / s), (in + pad - 1) // s), a = in + 2*pad -
// dil*(k - 1) - 1, is the first when dil*(k - 1) + 1 >= pad + s and the second otherwise.
template <class R, class E>
E ceil_window_extent(const R& r, const E& in, std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dil,
                     std::size_t at) {
  if (in.is_constant()) {
    const index_t o = ceil_window_out(*in.value(), k, stride, pad, dil);
    if (o < 1)
      r.fail("the input is too small at dim " + std::to_string(at) + ": a window of " + std::to_string(k) +
             " leaves no output even with ceil_mode");
    return E(o);
  }
  if (dil * (k - 1) + 1 >= pad + stride)
    return shape_meta::plus(shape_meta::divide(dim_op::ceildiv, shape_meta::plus(in, 2 * pad - dil * (k - 1) - 1), stride), 1);
  return shape_meta::plus(shape_meta::divide(dim_op::floordiv, shape_meta::plus(in, pad - 1), stride), 1);
}

// A pool's output shape from the call's self, kernel_size, stride, padding, dilation (where it
// has one) and ceil_mode, as pool2d_shape computes it (the padding at most half the kernel).
template <class R>
auto pool2d_meta_shape(const R& r, bool dilated) {
  const auto& x = r.input("self");
  const auto& a = r.args();
  const std::size_t c = channel_dim(r, x);
  const auto kernel = pair_arg(r, a.index("kernel_size"), {0, 0});
  const auto stride = pair_arg(r, a.index("stride"), kernel);
  const auto padding = pair_arg(r, a.index("padding"), {0, 0});
  const auto dilation = dilated ? pair_arg(r, a.index("dilation"), {1, 1}) : std::array<std::int64_t, 2>{1, 1};
  const bool ceil = a.flag_or_default("ceil_mode");
  auto out = x.shape;
  for (std::size_t i = 0; i < 2; ++i) {
    if (kernel[i] < 1 || stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      r.fail("kernel, stride and dilation must be >= 1 and padding >= 0");
    if (2 * padding[i] > kernel[i]) r.fail("padding must be at most half the kernel size (as in PyTorch)");
    const std::size_t d = c + 1 + i;
    using E = std::remove_cvref_t<decltype(out[d])>;
    out[d] = ceil ? ceil_window_extent(r, x.shape[d], kernel[i], stride[i], padding[i], dilation[i], d)
                  : window_extent(r, x.shape[d], E(index_t{kernel[i]}), stride[i], padding[i], dilation[i], d);
  }
  return out;
}

// A pool's gradient: self's dtype and shape; grad_output must have the pool's output shape.
template <class R>
void pool2d_backward_meta(R& r, bool dilated) {
  const auto expected = pool2d_meta_shape(r, dilated);
  const auto& g = r.input("grad_output");
  bool fits = g.rank() == expected.size();
  for (std::size_t i = 0; fits && i < g.rank(); ++i) fits = !shape_meta::differ(g.shape[i], expected[i]);
  if (!fits)
    r.fail("grad_output " + shape_meta::text(g.shape) + " does not have the pool's output shape " + shape_meta::text(expected));
  r.result(r.input("self"));
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
struct max_pool2d_backward_op;  // (the pools' gradients, below)

namespace aten {
struct avg_pool2d_backward;
struct _adaptive_avg_pool2d_backward;
struct conv2d {
  static constexpr std::string_view target = "aten.conv2d.default";
  static constexpr std::string_view schema =
      "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor";
  // [N, C, H, W] * [O, C/groups, kH, kW] -> [N, O, H', W'], each spatial extent a window's
  // (conv2d_shape); the channels must fit the weight, O split into the groups, the bias be [O]
  template <class R> static void infer(R& r) {
    const auto& x = r.input("input");
    const auto& w = r.input("weight");
    const auto& a = r.args();
    if (!is_floating_point(x.scalar_type)) r.fail("the input must be a floating-point tensor");
    const std::size_t c = detail::channel_dim(r, x);
    if (w.rank() != 4)
      r.fail("weight " + detail::shape_meta::text(w.shape) + " must have rank 4: [out_channels, in_channels / groups, kH, kW]");
    const auto stride = detail::pair_arg(r, a.index("stride"), {1, 1});
    const auto padding = detail::pair_arg(r, a.index("padding"), {0, 0});
    const auto dilation = detail::pair_arg(r, a.index("dilation"), {1, 1});
    const std::int64_t groups = a.integer_or_default("groups");
    if (groups < 1 || stride[0] < 1 || stride[1] < 1 || dilation[0] < 1 || dilation[1] < 1 || padding[0] < 0 || padding[1] < 0)
      r.fail("stride, dilation and groups must be >= 1 and padding >= 0");
    using E = std::remove_cvref_t<decltype(w.shape[0])>;
    const E cin = detail::shape_meta::times(w.shape[1], E(index_t{groups}));
    if (detail::shape_meta::differ(x.shape[c], cin))
      r.fail("input " + detail::shape_meta::text(x.shape) + " has " + x.shape[c].to_string() + " channels, but weight " +
             detail::shape_meta::text(w.shape) + " with groups=" + std::to_string(groups) + " expects " + cin.to_string());
    if (w.shape[0].is_constant() && *w.shape[0].value() % groups != 0)
      r.fail("weight " + detail::shape_meta::text(w.shape) + " has output channels not divisible by groups=" +
             std::to_string(groups));
    if (r.is_tensor("bias")) {
      const auto& b = r.input("bias");
      if (b.rank() != 1 || detail::shape_meta::differ(b.shape[0], w.shape[0]))
        r.fail("the bias " + detail::shape_meta::text(b.shape) + " must be [out_channels] (" + w.shape[0].to_string() + ")");
    }
    auto s = std::vector<E>(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(c));
    s.push_back(w.shape[0]);
    for (std::size_t i = 0; i < 2; ++i)
      s.push_back(detail::window_extent(r, x.shape[c + 1 + i], w.shape[2 + i], stride[i], padding[i], dilation[i], c + 1 + i));
    r.result(promote_types(x.scalar_type, w.scalar_type), std::move(s));
  }
  // Written with conv2d itself. The input's gradient: the output gradient spread by the stride
  // (zeros between its elements), padded by the rows the stride skipped at the end, correlated
  // with the flipped kernel, channels swapped within each group. The weight's: the input
  // correlated with the output gradient, batch and channels swapped (group g's input channels
  // against group g's gradient: groups become channel blocks), stride and dilation swapped,
  // cut to the kernel's extent. The bias's: the gradient summed over everything but its channel.
  template <class C>
  static void vjp(C& c) {
    const auto x = c.input("input");
    const auto w = c.input("weight");
    const auto g = c.grad();
    const auto two = [](std::vector<std::int64_t> l, std::int64_t fallback) {
      if (l.empty()) return std::array<std::int64_t, 2>{fallback, fallback};
      return std::array<std::int64_t, 2>{l[0], l.size() > 1 ? l[1] : l[0]};
    };
    const auto stride = two(c.args().has("stride") ? c.args().ints("stride") : std::vector<std::int64_t>{}, 1);
    const auto padding = two(c.args().has("padding") ? c.args().ints("padding") : std::vector<std::int64_t>{}, 0);
    const auto dilation = two(c.args().has("dilation") ? c.args().ints("dilation") : std::vector<std::int64_t>{}, 1);
    const std::int64_t groups = c.args().integer_or_default("groups");
    using extent = std::remove_cvref_t<decltype(c.size(x, 0))>;
    const auto xs = c.shape(x), ws = c.shape(w);
    const auto n = xs[0], ch = xs[1], out = ws[0], per_group = ws[1];
    const extent G(index_t{groups});
    if (c.wants("input")) {
      auto gs = g;
      std::array<std::int64_t, 2> pad{};
      for (std::size_t i = 0; i < 2; ++i) {
        const auto d = static_cast<std::int64_t>(2 + i);
        gs = c.spread(gs, d, stride[i]);
        const auto k = *ws[2 + i].value();
        // rows of the input that no window reached (the stride's remainder): zero gradient
        const extent covered = c.size(gs, d) + extent(index_t{dilation[i] * (k - 1) - 2 * padding[i]});
        gs = c.pad_along(gs, static_cast<std::size_t>(d), extent(index_t{0}), xs[2 + i] - covered);
        pad[i] = dilation[i] * (k - 1) - padding[i];
        if (pad[i] < 0) {  // (padding wider than the kernel: the outer gradient rows meet no input)
          gs = c.slice(gs, d, extent(index_t{-pad[i]}), c.size(gs, d) - extent(index_t{-pad[i]}));
          pad[i] = 0;
        }
      }
      // [O, C/G, kh, kw] -> [C, O/G, kh, kw], flipped
      auto wt = c.reshape(w, {G, extent::apply(dim_op::floordiv, out, G), per_group, ws[2], ws[3]});
      wt = c.transpose(wt, 1, 2);
      wt = c.reshape(wt, {ch, extent::apply(dim_op::floordiv, out, G), ws[2], ws[3]});
      wt = c.flip(c.flip(wt, 2), 3);
      c.accumulate("input", c.conv2d(gs, wt, {1, 1}, pad, dilation, groups));
    }
    if (c.wants("weight")) {
      // I[c', g N + n] = x[n, g C/G + c'], T[g O/G + o', n] = grad[n, g O/G + o']
      const auto og = extent::apply(dim_op::floordiv, out, G);
      auto xi = c.reshape(c.permute(c.reshape(x, {n, G, per_group, xs[2], xs[3]}), {2, 1, 0, 3, 4}), {per_group, G * n, xs[2], xs[3]});
      const auto gsz = c.shape(g);
      auto gt = c.reshape(c.permute(c.reshape(g, {n, G, og, gsz[2], gsz[3]}), {1, 2, 0, 3, 4}), {out, n, gsz[2], gsz[3]});
      auto dw = c.transpose(c.conv2d(xi, gt, dilation, padding, stride, groups), 0, 1);  // [O, C/G, A, B]
      dw = c.slice(c.slice(dw, 2, extent(index_t{0}), ws[2]), 3, extent(index_t{0}), ws[3]);
      c.accumulate("weight", dw);
    }
    if (c.wants("bias")) c.accumulate("bias", c.sum(g, {0, 2, 3}));
  }
};
struct max_pool2d {
  static constexpr std::string_view target = "aten.max_pool2d.default";
  static constexpr std::string_view schema =
      "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor";
  // self's dtype, each spatial extent a window's (ceil_mode: rounded up)
  template <class R> static void infer(R& r) { r.result(r.input("self").scalar_type, detail::pool2d_meta_shape(r, true)); }
  template <class C, class Backward = max_pool2d_backward_op>
  static void vjp(C& c) {
    auto args = c.node().args;
    args.insert(args.begin(), c.grad());
    c.accumulate("self", c.emit(op_id_of<Backward>, std::move(args)));
  }
};
struct avg_pool2d {
  static constexpr std::string_view target = "aten.avg_pool2d.default";
  static constexpr std::string_view schema =
      "aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor";
  template <class R> static void infer(R& r) { r.result(r.input("self").scalar_type, detail::pool2d_meta_shape(r, false)); }
  // (avg_pool2d_backward takes every argument: the defaults filled in)
  template <class C, class Backward = avg_pool2d_backward>
  static void vjp(C& c) {
    auto args = c.node().args;
    const auto kernel = c.args().ints("kernel_size");
    const std::vector<std::int64_t> stride = c.args().has("stride") ? c.args().ints("stride") : std::vector<std::int64_t>{};
    if (args.size() < 3) args.resize(3, kernel);
    if (stride.empty()) args[2] = kernel;
    if (args.size() < 4) args.push_back(std::vector<std::int64_t>{0, 0});
    if (args.size() < 5) args.push_back(false);
    if (args.size() < 6) args.push_back(true);
    if (args.size() < 7) args.push_back(c.none());
    args.insert(args.begin(), c.grad());
    c.accumulate("self", c.emit(op_id_of<Backward>, std::move(args)));
  }
};
struct adaptive_avg_pool2d {
  static constexpr std::string_view target = "aten.adaptive_avg_pool2d.default";
  static constexpr std::string_view schema =
      "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor";
  // [..., C, output_size[0], output_size[1]], self's dtype
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    const std::size_t c = detail::channel_dim(r, m);
    auto size = r.sizes("output_size");
    if (size.size() == 1) size.push_back(size[0]);
    if (size.size() != 2) r.fail("output_size should hold one or two sizes");
    for (std::size_t i = 0; i < 2; ++i) {
      if (size[i].is_constant() && *size[i].value() < 1) r.fail("the output size must be at least 1x1");
      m.shape[c + 1 + i] = size[i];
    }
    r.result(std::move(m));
  }
  template <class C, class Backward = _adaptive_avg_pool2d_backward>
  static void vjp(C& c) {
    const auto x = c.input("self");
    c.accumulate("self", c.emit(op_id_of<Backward>, {c.grad(), x}));
  }
};
// The pools' gradients, which their derivatives record (each a kernel of the backends).
struct avg_pool2d_backward {
  static constexpr std::string_view target = "aten.avg_pool2d_backward.default";
  static constexpr std::string_view schema =
      "aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor";
  template <class R> static void infer(R& r) { detail::pool2d_backward_meta(r, false); }
  // linear in grad_output: its derivative is the average pool itself (self only gives the shape)
  template <class C> static void vjp(C& c) {
    auto args = c.node().args;
    args.erase(args.begin());  // (the pool's arguments: self, kernel_size, ...)
    args[0] = c.grad();
    c.accumulate("grad_output", c.emit(op_id_of<avg_pool2d>, std::move(args)));
  }
};
struct _adaptive_avg_pool2d_backward {
  static constexpr std::string_view target = "aten._adaptive_avg_pool2d_backward.default";
  static constexpr std::string_view schema =
      "aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor";
  // self's dtype and shape (grad_output: the pool's result, of self's rank)
  template <class R> static void infer(R& r) {
    const auto& g = r.input("grad_output");
    const auto& x = r.input("self");
    if (g.rank() != x.rank())
      r.fail("grad_output " + detail::shape_meta::text(g.shape) + " does not have the rank of self " +
             detail::shape_meta::text(x.shape));
    r.result(x);
  }
  template <class C> static void vjp(C& c) {
    const auto go = c.input("grad_output");
    c.accumulate("grad_output", c.emit(op_id_of<adaptive_avg_pool2d>, {c.grad(), std::vector{c.size(go, -2), c.size(go, -1)}}));
  }
};
}  // namespace aten

// max_pool2d's gradient: each output element's gradient to its window's maximum (the element the
// forward returned). typex's own op: ATen's max_pool2d_with_indices_backward reads the indices a
// second output of the forward kept, and typex's max_pool2d has one output; this one finds them
// again in the input (the same scan, so the same element, ties and NaN included).
struct max_pool2d_backward_op {
  static constexpr std::string_view target = "typex.max_pool2d_backward.default";
  static constexpr std::string_view schema =
      "typex::max_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor";
  template <class R> static void infer(R& r) { detail::pool2d_backward_meta(r, true); }
  // (its own derivative would gather at the maxima: second derivatives of max pooling are not
  // supported)
  static constexpr bool differentiable = false;
};

template <conv2d_options Opt>
struct conv2d_op {
  static constexpr std::string_view target = aten::conv2d::target;
  static constexpr std::string_view schema = aten::conv2d::schema;

  template <class X, class W, class B>
  static constexpr auto result(const X& x, const W& w, const B& b) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::conv2d: the input must be a floating-point tensor");
    const auto s = conv2d_shape<Opt>(x.shape, w.shape, op_name<"conv2d">);
    if constexpr (!std::is_null_pointer_v<B>) {
      static_assert(B::shape_type::rank == 1, "typex::conv2d: the bias must be 1-d: [out_channels]");
      (void)broadcast_shapes(shape(w.shape.template get<0>()), b.shape, op_name<"conv2d">);
    }
    return tensor_spec<promote_t<typename X::dtype_type, typename W::dtype_type>, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(Opt.stride);
    v(Opt.padding);
    v(Opt.dilation);
    v(Opt.groups);
  }
};

namespace detail {
template <pool2d_options Opt>
constexpr std::array<index_t, 2> pool_stride() {
  return {Opt.stride[0] == 0 ? Opt.kernel[0] : Opt.stride[0], Opt.stride[1] == 0 ? Opt.kernel[1] : Opt.stride[1]};
}
template <pool2d_options Opt, fixed_string Name>
struct pool2d_like {
  template <class X>
  static constexpr auto result(const X& x) {
    const auto s = pool2d_shape<Opt>(x.shape, op_name<Name>);
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
};
}  // namespace detail

template <pool2d_options Opt>
struct max_pool2d_op : detail::pool2d_like<Opt, "max_pool2d"> {
  static constexpr std::string_view target = aten::max_pool2d::target;
  static constexpr std::string_view schema = aten::max_pool2d::schema;
  template <class V>
  void attributes(V&& v) const {
    v(Opt.kernel);
    v(detail::pool_stride<Opt>());
    v(Opt.padding);
    v(Opt.dilation);
    v(Opt.ceil_mode);
  }
};

// avg_pool2d has no dilation (PyTorch's), and counts padding in the divisor (count_include_pad).
template <pool2d_options Opt>
struct avg_pool2d_op : detail::pool2d_like<Opt, "avg_pool2d"> {
  static_assert(Opt.dilation[0] == 1 && Opt.dilation[1] == 1, "typex::avg_pool2d: average pooling has no dilation");
  static constexpr std::string_view target = aten::avg_pool2d::target;
  static constexpr std::string_view schema = aten::avg_pool2d::schema;
  template <class V>
  void attributes(V&& v) const {
    v(Opt.kernel);
    v(detail::pool_stride<Opt>());
    v(Opt.padding);
    v(Opt.ceil_mode);
    v(true);  // count_include_pad
  }
};

template <index_t OH, index_t OW>
struct adaptive_avg_pool2d_op {
  static_assert(OH >= 1 && OW >= 1, "typex::adaptive_avg_pool2d: the output size must be at least 1x1");
  static constexpr std::string_view target = aten::adaptive_avg_pool2d::target;
  static constexpr std::string_view schema = aten::adaptive_avg_pool2d::schema;
  template <class X>
  static constexpr auto result(const X& x) {
    detail::require_nchw<"adaptive_avg_pool2d", typename X::shape_type>();
    constexpr std::size_t c = X::shape_type::rank - 3;
    const auto s = detail::join(detail::take<0, c + 1>(x.shape), shape<fix<OH>, fix<OW>>{});
    return tensor_spec<typename X::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(std::array<index_t, 2>{OH, OW});
  }
};

template <conv2d_options Opt = conv2d_options{}, tensor_like X, tensor_like W, tensor_like B>
auto conv2d(const X& x, const W& weight, const B& bias, const std::source_location& loc = std::source_location::current()) {
  return apply_op(conv2d_op<Opt>{}, &loc, x, weight, bias);
}
template <conv2d_options Opt = conv2d_options{}, tensor_like X, tensor_like W>
auto conv2d(const X& x, const W& weight, const std::source_location& loc = std::source_location::current()) {
  return apply_op(conv2d_op<Opt>{}, &loc, x, weight, nullptr);
}
template <pool2d_options Opt, tensor_like X>
auto max_pool2d(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(max_pool2d_op<Opt>{}, &loc, x);
}
template <pool2d_options Opt, tensor_like X>
auto avg_pool2d(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(avg_pool2d_op<Opt>{}, &loc, x);
}
template <index_t OH, index_t OW, tensor_like X>
auto adaptive_avg_pool2d(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(adaptive_avg_pool2d_op<OH, OW>{}, &loc, x);
}

// This header's ops, for the registry (ops/all.hpp).
using conv_ops = op_list<aten::conv2d, aten::max_pool2d, aten::avg_pool2d, aten::adaptive_avg_pool2d, aten::avg_pool2d_backward,
                         aten::_adaptive_avg_pool2d_backward, max_pool2d_backward_op>;

}  // namespace typex
