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
#include <typex/ops/tensor_like.hpp>

#include <array>
#include <cstdint>
#include <source_location>
#include <string_view>
#include <type_traits>
#include <vector>

namespace typex {

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
  template <class C, class Backward = max_pool2d_backward_op>
  static void vjp(C& c) {
    auto args = c.node().args;
    args.insert(args.begin(), c.grad());
    c.accumulate("self", c.emit(op_id_of<Backward>, std::move(args), c.meta(c.input("self"))));
  }
};
struct avg_pool2d {
  static constexpr std::string_view target = "aten.avg_pool2d.default";
  static constexpr std::string_view schema =
      "aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor";
  // (avg_pool2d_backward takes every argument: the defaults filled in)
  template <class C, class Backward = avg_pool2d_backward>
  static void vjp(C& c) {
    const auto x = c.input("self");
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
    c.accumulate("self", c.emit(op_id_of<Backward>, std::move(args), c.meta(x)));
  }
};
struct adaptive_avg_pool2d {
  static constexpr std::string_view target = "aten.adaptive_avg_pool2d.default";
  static constexpr std::string_view schema =
      "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor";
  template <class C, class Backward = _adaptive_avg_pool2d_backward>
  static void vjp(C& c) {
    const auto x = c.input("self");
    c.accumulate("self", c.emit(op_id_of<Backward>, {c.grad(), x}, c.meta(x)));
  }
};
// The pools' gradients, which their derivatives record (each a kernel of the backends).
struct avg_pool2d_backward {
  static constexpr std::string_view target = "aten.avg_pool2d_backward.default";
  static constexpr std::string_view schema =
      "aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor";
  // linear in grad_output: its derivative is the average pool itself (self only gives the shape)
  template <class C> static void vjp(C& c) {
    auto args = c.node().args;
    args.erase(args.begin());  // (the pool's arguments: self, kernel_size, ...)
    args[0] = c.grad();
    c.accumulate("grad_output", c.emit(op_id_of<avg_pool2d>, std::move(args), c.meta(c.input("grad_output"))));
  }
};
struct _adaptive_avg_pool2d_backward {
  static constexpr std::string_view target = "aten._adaptive_avg_pool2d_backward.default";
  static constexpr std::string_view schema =
      "aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) {
    const auto go = c.input("grad_output");
    c.accumulate("grad_output", c.emit(op_id_of<adaptive_avg_pool2d>, {c.grad(), std::vector{c.size(go, -2), c.size(go, -1)}}, c.meta(go)));
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
