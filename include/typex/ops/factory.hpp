// typex/ops/factory.hpp — ops that make a tensor from sizes and values: zeros, ones, full, arange,
// and the _like forms.
//
//   zeros<f32>(shape(b, 16_c))           torch.zeros(b, 16)        -> aten.zeros.default([batch, 16], f32)
//   ones<i64>(shape(4_c), device_of(x))  torch.ones(4, dtype=long, device=x.device)
//   full<f32>(shape(seq, seq), -inf)     torch.full((seq, seq), -inf) -> aten.full.default([seq, seq], -inf, f32)
//   arange<i64>(seq)                     torch.arange(seq)         -> aten.arange.default(seq, i64)
//   arange<f32>(0.0, 1.0, 0.25)          torch.arange(0, 1, .25)   -> aten.arange.start_step(0.0, 1.0, 0.25, f32)
//   zeros_like(x), ones_like(x), full_like(x, v)
//
// A factory has no tensor argument, so nothing in its call says whether it runs now or is recorded:
// that is what the device argument is for, as in PyTorch's `torch.zeros(n, device=x.device)`.
// `device_of(x)` of a traced value records the factory into x's graph; the default (host) and
// `device_of` of a host tensor make the tensor now. A tensor made now inside a traced function is
// a constant of the program (lifted, as torch.export lifts it), so a factory whose sizes depend on
// a symbolic dim must be given the device of a traced value to follow that dim.
//
// Sizes are dims: static (16_c), symbolic (a dim read from a traced value's shape, recorded as its
// symbol) or derived (2_c * seq). An anonymous dim (dyn) cannot be recorded while tracing — nothing
// says which input it came from — so tracing such a factory is an error that says to name the dim.
// arange's bounds are all dims or all numbers; numbers give a dyn length: fine now, refused while
// tracing (later ops could not follow it), where static dims (0_c, 8_c, 2_c) say the same thing.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/dim.hpp>
#include <typex/core/shape.hpp>
#include <typex/core/sentence.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>
#include <typex/core/sym_expr.hpp>

#include <cmath>
#include <source_location>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace typex {

namespace detail {
// A factory's result at run time: argument `size`'s extents (none negative), in `dtype` or
// `fallback` where the call gives none.
template <class R>
void sized_meta(R& r, dtype fallback) {
  std::vector<ir::sym_expr> shape = r.sizes("size");
  for (const ir::sym_expr& e : shape)
    if (e.is_constant() && *e.value() < 0)
      r.fail(to_string_with([&](auto& w) { w.put("Trying to create tensor with negative dimension "); w.put_int(*e.value()); }));
  r.result(r.args().has("dtype") ? r.args().scalar_type("dtype") : fallback, std::move(shape));
}
// zeros_like / ones_like / full_like: self's shape, in `dtype` or self's.
template <class R>
void like_meta(R& r) {
  auto m = r.input("self");
  if (r.args().has("dtype")) m.scalar_type = r.args().scalar_type("dtype");
  r.result(std::move(m));
}

// One of arange's bounds: a number (a float, or an integer) or a symbolic size.
struct arange_bound {
  bool real = false;
  double number = 0;
  ir::sym_expr size;
};
template <fixed_string Name, class R>
arange_bound read_arange_bound(const R& r) {
  if (r.is_real(Name.data)) return {true, r.args().real(Name.data), {}};
  return {false, 0, r.sym(Name.data)};
}
// arange's result: [its length], in `dtype`, else f32 where a bound is a float and i64 otherwise
// (torch.arange's). The length is ceil((end - start) / step), computed where the bounds are
// numbers, and end - start (or (end - start) ceildiv step) over symbolic sizes, as the typed
// arange spells it.
template <class R>
void arange_meta(R& r, const arange_bound& start, const arange_bound& end, const arange_bound& step) {
  const bool real = start.real || end.real || step.real;
  const dtype d = r.args().has("dtype") ? r.args().scalar_type("dtype") : (real ? dtype::f32 : dtype::i64);
  const auto constant = [](const arange_bound& b) { return b.real || b.size.is_constant(); };
  const auto number = [](const arange_bound& b) { return b.real ? b.number : static_cast<double>(*b.size.value()); };
  if (constant(start) && constant(end) && constant(step)) {
    const double s = number(start), e = number(end), p = number(step);
    if (p == 0) r.fail("step must be nonzero");
    if (!std::isfinite(s) || !std::isfinite(e)) r.fail("unsupported range: the bounds must be finite");
    if ((p > 0 && e < s) || (p < 0 && e > s)) r.fail("upper bound and larger bound inconsistent with step sign");
    index_t n = 0;
    if (real) {
      n = static_cast<index_t>(std::ceil((e - s) / p));
    } else {  // (in integers: exact for any extent)
      const index_t di = *end.size.value() - *start.size.value(), pi = *step.size.value();
      n = di / pi + ((di % pi != 0 && (di < 0) == (pi < 0)) ? 1 : 0);
    }
    r.result(d, {ir::sym_expr(n)});
    return;
  }
  if (real) r.fail("the bounds mix symbolic sizes and floating-point numbers");
  if (step.size.is_constant() && *step.size.value() <= 0) r.fail("a step over symbolic bounds must be positive");
  const ir::sym_expr length = end.size - start.size;
  r.result(d, {step.size.is_constant() && *step.size.value() == 1 ? length : ir::sym_expr::apply(dim_op::ceildiv, length, step.size)});
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
struct zeros {
  static constexpr std::string_view target = "aten.zeros.default";
  static constexpr std::string_view schema =
      "aten::zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
  // full(size, 0)
  template <class C> static void decompose(C& c) { c.produce(c.full(c.sizes("size"), 0.0, c.result_meta().scalar_type)); }
  static constexpr bool differentiable = false;
  // [size...], in `dtype` (the default dtype, f32, where None)
  template <class R> static void infer(R& r) { detail::sized_meta(r, dtype::f32); }
};
struct ones {
  static constexpr std::string_view target = "aten.ones.default";
  static constexpr std::string_view schema =
      "aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
  // full(size, 1)
  template <class C> static void decompose(C& c) { c.produce(c.full(c.sizes("size"), 1.0, c.result_meta().scalar_type)); }
  static constexpr bool differentiable = false;
  template <class R> static void infer(R& r) { detail::sized_meta(r, dtype::f32); }
};
struct full {
  static constexpr std::string_view target = "aten.full.default";
  static constexpr std::string_view schema =
      "aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
  static constexpr bool differentiable = false;
  // [size...], in `dtype`, else the fill value's: bool for a bool, i64 for an integer, f32 for a float
  template <class R> static void infer(R& r) {
    const dtype of_value = r.is_real("fill_value") ? dtype::f32 : r.args().is_integer("fill_value") ? dtype::i64 : dtype::b8;
    detail::sized_meta(r, of_value);
  }
};
struct arange {
  static constexpr std::string_view target = "aten.arange.default";
  static constexpr std::string_view schema =
      "aten::arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
  // arange.start_step(0, end, 1)
  template <class C> static void decompose(C& c);  // (defined after arange_start_step, which it writes)
  static constexpr bool differentiable = false;
  // [end] (from 0 by 1)
  template <class R> static void infer(R& r) {
    detail::arange_meta(r, {false, 0, index_t{0}}, detail::read_arange_bound<"end">(r), {false, 0, index_t{1}});
  }
};
struct arange_start {
  static constexpr std::string_view target = "aten.arange.start";
  static constexpr std::string_view schema =
      "aten::arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
  // arange.start_step(start, end, 1)
  template <class C> static void decompose(C& c);  // (defined after arange_start_step, which it writes)
  static constexpr bool differentiable = false;
  // [end - start]
  template <class R> static void infer(R& r) {
    detail::arange_meta(r, detail::read_arange_bound<"start">(r), detail::read_arange_bound<"end">(r), {false, 0, index_t{1}});
  }
};
struct arange_start_step {
  static constexpr std::string_view target = "aten.arange.start_step";
  static constexpr std::string_view schema =
      "aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
  static constexpr bool differentiable = false;
  // [ceil((end - start) / step)]
  template <class R> static void infer(R& r) {
    const detail::arange_bound step =
        r.args().has("step") ? detail::read_arange_bound<"step">(r) : detail::arange_bound{false, 0, index_t{1}};
    detail::arange_meta(r, detail::read_arange_bound<"start">(r), detail::read_arange_bound<"end">(r), step);
  }
};

template <class C>
void arange::decompose(C& c) {
  const auto& a = c.node().args;
  c.produce(c.emit(op_id_of<arange_start_step>, {std::int64_t{0}, a.at(0), std::int64_t{1}, c.result_meta().scalar_type}));
}

template <class C>
void arange_start::decompose(C& c) {
  const auto& a = c.node().args;
  c.produce(c.emit(op_id_of<arange_start_step>, {a.at(0), a.at(1), std::int64_t{1}, c.result_meta().scalar_type}));
}
struct zeros_like {
  static constexpr std::string_view target = "aten.zeros_like.default";
  static constexpr std::string_view schema =
      "aten::zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor";
  // full(self's size, 0)
  template <class C> static void decompose(C& c) { c.produce(c.full(c.result_meta().shape, 0.0, c.result_meta().scalar_type)); }
  static constexpr bool differentiable = false;
  template <class R> static void infer(R& r) { detail::like_meta(r); }  // self's meta, in `dtype` if given
};
struct ones_like {
  static constexpr std::string_view target = "aten.ones_like.default";
  static constexpr std::string_view schema =
      "aten::ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor";
  // full(self's size, 1)
  template <class C> static void decompose(C& c) { c.produce(c.full(c.result_meta().shape, 1.0, c.result_meta().scalar_type)); }
  static constexpr bool differentiable = false;
  template <class R> static void infer(R& r) { detail::like_meta(r); }  // self's meta, in `dtype` if given
};
struct full_like {
  static constexpr std::string_view target = "aten.full_like.default";
  static constexpr std::string_view schema =
      "aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor";
  // full(self's size, fill_value)
  template <class C> static void decompose(C& c) {
    c.produce(c.full(c.result_meta().shape, c.args().real("fill_value"), c.result_meta().scalar_type));
  }
  static constexpr bool differentiable = false;
  template <class R> static void infer(R& r) { detail::like_meta(r); }  // self's meta, in `dtype` if given
};
}  // namespace aten

// Where a factory makes its tensor: now, on the host (host_device, the default), or where `like`
// lives (device_of(x)): into x's graph while x is traced.
struct host_device {};
template <class T>
struct device_like {
  const T* like;
};
template <tensor_like T>
constexpr device_like<T> device_of(const T& x) noexcept {
  return {&x};
}

namespace detail {
template <class Mode, class Op>
struct dependent_mode {
  using type = Mode;
};
template <class T> inline constexpr bool is_device_like_v = false;
template <class T> inline constexpr bool is_device_like_v<device_like<T>> = true;

// The value a factory fills with, as the schema's Scalar records it for dtype DT.
template <class DT, class V>
constexpr auto fill_scalar(V v) {
  if constexpr (DT::value == dtype::b8) return static_cast<bool>(v);
  else if constexpr (is_floating_point(DT::value)) return static_cast<double>(v);
  else if constexpr (std::is_floating_point_v<V>) return v;  // (the kernel truncates, as torch.full)
  else return static_cast<index_t>(v);
}
}  // namespace detail

// Runs a factory op: recorded into the graph of device's tensor when it is traced, run now
// otherwise. A factory op has, besides an op's members, `static constexpr bool traceable`: false
// where its result cannot be recorded (tracing it is an error).
template <class T>
concept factory_device = std::is_same_v<T, host_device> || detail::is_device_like_v<T>;

template <class Op, factory_device Device>
auto apply_factory(const Op& op, const std::source_location* loc, const Device& device) {
  // (the runners are named through Op, so that they are looked up where the op is used, once the
  // trace layer and a backend have specialized them)
  using eager = op_runner<typename detail::dependent_mode<eager_mode, Op>::type>;
  if constexpr (detail::is_device_like_v<Device>) {
    using T = std::remove_cvref_t<decltype(*device.like)>;
    if constexpr (is_traced_argument<T>::value)
      return op_runner<typename detail::dependent_mode<trace_mode, Op>::type>::run_factory(op, loc, *device.like);
    else return eager::run(op, loc);
  } else {
    return eager::run(op, loc);
  }
}

// zeros / ones / full: a tensor of sizes S filled with one value. Kind: 0 zeros, 1 ones, 2 full.
template <int Kind, class DT, class S, class V = double>
struct fill_op {
  static_assert(dtype_tag_type<DT>, "typex: a factory's first template argument is a dtype (typex::f32, typex::i64, ...)");
  static constexpr std::string_view target =
      Kind == 0 ? aten::zeros::target : Kind == 1 ? aten::ones::target : aten::full::target;
  static constexpr std::string_view schema =
      Kind == 0 ? aten::zeros::schema : Kind == 1 ? aten::ones::schema : aten::full::schema;
  static constexpr bool traceable = true;
  S sizes;
  V value{};

  constexpr auto result() const { return tensor_spec<DT, S>(sizes); }
  template <class W>
  void attributes(W&& w) const {
    w(sizes_attribute<S>{sizes, -1, true});
    if constexpr (Kind == 2) w(value);
    w(DT::value);
  }
};

template <class DT = f32, class... D, factory_device Device = host_device>
auto zeros(const shape<D...>& sizes, const Device& device = {}, const std::source_location& loc = std::source_location::current()) {
  return apply_factory(fill_op<0, DT, shape<D...>>{sizes}, &loc, device);
}
template <class DT = f32, class... D, factory_device Device = host_device>
auto ones(const shape<D...>& sizes, const Device& device = {}, const std::source_location& loc = std::source_location::current()) {
  return apply_factory(fill_op<1, DT, shape<D...>>{sizes}, &loc, device);
}
template <class DT = f32, class... D, scalar_like V, factory_device Device = host_device>
auto full(const shape<D...>& sizes, V value, const Device& device = {},
          const std::source_location& loc = std::source_location::current()) {
  const auto v = detail::fill_scalar<DT>(value);
  return apply_factory(fill_op<2, DT, shape<D...>, decltype(v)>{sizes, v}, &loc, device);
}

// arange: Bounds are the recorded arguments (end; start, end; or start, end, step), Len the
// result's dim.
template <class DT, class Len, class... Bounds>
struct arange_op {
  static_assert(dtype_tag_type<DT>, "typex::arange: the first template argument is a dtype (typex::i64, typex::f32, ...)");
  static constexpr std::string_view target = sizeof...(Bounds) == 1   ? aten::arange::target
                                             : sizeof...(Bounds) == 2 ? aten::arange_start::target
                                                                      : aten::arange_start_step::target;
  static constexpr std::string_view schema = sizeof...(Bounds) == 1   ? aten::arange::schema
                                             : sizeof...(Bounds) == 2 ? aten::arange_start::schema
                                                                      : aten::arange_start_step::schema;
  static constexpr bool traceable = (dim<Bounds> && ...);  // (number bounds: made now only)
  std::tuple<Bounds...> bounds;
  Len length;

  constexpr auto result() const { return tensor_spec<DT, shape<Len>>(shape<Len>(length)); }
  template <class W>
  void attributes(W&& w) const {
    std::apply([&](const auto&... b) {
      auto one = [&](const auto& x) {
        if constexpr (dim<std::remove_cvref_t<decltype(x)>>) w(size_attribute<std::remove_cvref_t<decltype(x)>>{x});
        else if constexpr (std::is_floating_point_v<std::remove_cvref_t<decltype(x)>>) w(static_cast<double>(x));
        else w(static_cast<index_t>(x));
      };
      (one(b), ...);
    }, bounds);
    w(DT::value);
  }
};

namespace detail {
[[noreturn]] inline void arange_error(std::string_view what) {
  raise<argument_error>([&](auto& w) { w.put("typex::arange: "); w.put(what); });
}
// The number of values in [start, end) by step, as torch.arange counts them (ceil((end-start)/step)),
// or an error in torch's words.
template <class T>
index_t arange_length(T start, T end, T step) {
  if (step == T(0)) arange_error("step must be nonzero");
  if ((step > T(0) && end < start) || (step < T(0) && end > start))
    arange_error("upper bound and lower bound are inconsistent with the step's sign");
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step)) arange_error("bounds and step must be finite");
    return static_cast<index_t>(std::ceil(static_cast<double>(end - start) / static_cast<double>(step)));
  } else {
    const index_t d = static_cast<index_t>(end) - static_cast<index_t>(start), s = static_cast<index_t>(step);
    return d / s + ((d % s != 0 && (d < 0) == (s < 0)) ? 1 : 0);
  }
}
template <class DT, class... B>
using arange_dtype_t = std::conditional_t<!std::is_void_v<DT>, DT,
                                          std::conditional_t<(std::is_floating_point_v<B> || ...), f32, i64>>;

// Whether bounds of types B... can make a range; if not, a compile error naming them (evaluated in
// a constant expression, so that the error is the first one, before the length's type is formed).
template <class... B>
constexpr bool check_arange_bounds() {
  if constexpr (!(dim<B> && ...) && !(scalar_like<B> && ...)) {
    TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
      w.put("typex::arange: the bounds mix dims and numbers; pass them all as dims (seq, 4_c, derived dims: the "
            "graph keeps their symbols) or all as numbers (0, 10, 2: constants of the program)");
    });
    return false;
  } else if constexpr (sizeof...(B) >= 2 && (is_static_dim_v<B> && ...)) {
    constexpr index_t v[] = {B::value...};
    if constexpr (sizeof...(B) == 3 && v[2] == 0) {
      TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) { w.put("typex::arange: the step is 0_c; a step must be nonzero"); });
      return false;
    } else if constexpr (v[1] < v[0]) {
      TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
        constexpr index_t u[] = {B::value...};
        w.put("typex::arange: start "); w.put_int(u[0]); w.put(" is past end "); w.put_int(u[1]);
        w.put(" (static bounds); a range counts up from start to end: swap them");
      });
      return false;
    } else {
      return true;
    }
  } else {
    return true;
  }
}

template <class DT, class... B>
auto make_arange(const B&... b) {
  constexpr bool valid = check_arange_bounds<B...>();
  constexpr bool all_dims = valid && (dim<B> && ...), all_numbers = valid && (scalar_like<B> && ...);
  using R = arange_dtype_t<DT, B...>;
  if constexpr (all_dims) {
    const auto t = std::tuple<const B&...>(b...);
    if constexpr (sizeof...(B) == 1) {
      return arange_op<R, std::remove_cvref_t<decltype(std::get<0>(t))>, B...>{{b...}, std::get<0>(t)};
    } else {
      const auto& start = std::get<0>(t);
      const auto& end = std::get<1>(t);
      if (end.get() < start.get()) arange_error("upper bound and lower bound are inconsistent with the step's sign");
      if constexpr (sizeof...(B) == 2) {
        return arange_op<R, std::remove_cvref_t<decltype(end - start)>, B...>{{b...}, end - start};
      } else {
        const auto& step = std::get<2>(t);
        if (step.get() == 0) arange_error("step must be nonzero");
        using L = std::remove_cvref_t<decltype(ceildiv(end - start, step))>;
        return arange_op<R, L, B...>{{b...}, ceildiv(end - start, step)};
      }
    }
  } else if constexpr (all_numbers) {
    using C = std::common_type_t<B...>;
    const C v[] = {static_cast<C>(b)...};
    C start{0}, end{0}, step{1};
    if constexpr (sizeof...(B) == 1) {
      end = v[0];
    } else {
      start = v[0];
      end = v[1];
      if constexpr (sizeof...(B) == 3) step = v[2];
    }
    return arange_op<R, dyn, B...>{{b...}, dyn(arange_length(start, end, step))};
  } else {
    return arange_op<R, dyn, B...>{};  // (after the compile error above)
  }
}
}  // namespace detail

// arange<DT>(end), arange<DT>(start, end), arange<DT>(start, end, step) [, device]: DT defaults to
// i64 for integral bounds and f32 for floating ones, as torch.
template <class DT = void, class E, factory_device Device = host_device>
  requires(dim<E> || scalar_like<E>)
auto arange(const E& end, const Device& device = {}, const std::source_location& loc = std::source_location::current()) {
  return apply_factory(detail::make_arange<DT>(end), &loc, device);
}
template <class DT = void, class S, class E, factory_device Device = host_device>
  requires((dim<S> || scalar_like<S>) && (dim<E> || scalar_like<E>))
auto arange(const S& start, const E& end, const Device& device = {},
            const std::source_location& loc = std::source_location::current()) {
  return apply_factory(detail::make_arange<DT>(start, end), &loc, device);
}
template <class DT = void, class S, class E, class P, factory_device Device = host_device>
  requires((dim<S> || scalar_like<S>) && (dim<E> || scalar_like<E>) && (dim<P> || scalar_like<P>))
auto arange(const S& start, const E& end, const P& step, const Device& device = {},
            const std::source_location& loc = std::source_location::current()) {
  return apply_factory(detail::make_arange<DT>(start, end, step), &loc, device);
}

// zeros_like(x), ones_like(x), full_like(x, v): x's dtype and shape (recorded with x as argument,
// so they follow x's symbols).
template <int Kind, class V = double>
struct fill_like_op {
  static constexpr std::string_view target = Kind == 0   ? aten::zeros_like::target
                                             : Kind == 1 ? aten::ones_like::target
                                                         : aten::full_like::target;
  static constexpr std::string_view schema = Kind == 0   ? aten::zeros_like::schema
                                             : Kind == 1 ? aten::ones_like::schema
                                                         : aten::full_like::schema;
  V value{};
  template <class X>
  static constexpr auto result(const X& x) {
    return x;
  }
  template <class W>
  void attributes(W&& w) const {
    if constexpr (Kind == 2) w(value);
  }
};
template <tensor_like X>
auto zeros_like(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(fill_like_op<0>{}, &loc, x);
}
template <tensor_like X>
auto ones_like(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(fill_like_op<1>{}, &loc, x);
}
template <tensor_like X, scalar_like V>
auto full_like(const X& x, V value, const std::source_location& loc = std::source_location::current()) {
  const auto v = detail::fill_scalar<typename X::dtype_type>(value);
  return apply_op(fill_like_op<2, decltype(v)>{v}, &loc, x);
}

// This header's ops, for the registry (ops/all.hpp).
using factory_ops = op_list<aten::zeros, aten::ones, aten::full, aten::zeros_like, aten::ones_like, aten::full_like,
                           aten::arange, aten::arange_start, aten::arange_start_step>;

}  // namespace typex
