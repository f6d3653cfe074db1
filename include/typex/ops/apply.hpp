// typex/ops/apply.hpp — how an op call reaches whoever runs it.
//
// An op is a struct holding what it means (its ATen target, its result rule, its attributes);
// typex::relu(x) and friends hand it to apply_op with their arguments. The arguments decide the
// mode: if any is a traced value the call is recorded (the trace layer specializes op_runner for
// trace_mode); if any is a device tensor it runs on that device (a device backend specializes
// op_runner for device_mode); otherwise it runs on host tensors (a backend specializes op_runner for
// eager_mode).
// The ops layer depends on neither: it only names the extension points.
//
// An op struct has
//   static constexpr std::string_view target;      the ATen overload it records ("aten.conv2d.default")
//   result(specs...)                               its rule: argument specs (or scalars) -> result spec
// and, when the ATen schema has non-tensor arguments,
//   template <class V> void attributes(V&& v) const  calls v(a) for each, in schema order; a is an
//       index_t, double, bool, std::string_view, std::array<index_t, N> (an int list), a shape
//       (a list of possibly symbolic sizes) or std::nullptr_t (None)
//   static constexpr std::size_t attributes_at      where they go among the arguments (default: last)
// A tensor argument that is absent (conv2d without bias) is passed as nullptr and records None.
#pragma once

#include <typex/core/sentence.hpp>

#include <source_location>
#include <string_view>
#include <type_traits>

namespace typex {

struct eager_mode {};
struct trace_mode {};
struct device_mode {};

// Specialized (as true) by the trace layer for its traced values.
template <class T>
struct is_traced_argument : std::false_type {};
// Specialized (as true) by a device backend for its tensor types (typex::cuda::device_tensor): a
// call with one runs on that device (op_runner<device_mode>, the backend's).
template <class T>
struct is_device_argument : std::false_type {};

// Where an op's attributes sit among its arguments: after the first attributes_at (default: all).
template <class Op>
constexpr std::size_t attributes_position(std::size_t n_args) noexcept {
  if constexpr (requires { Op::attributes_at; }) return Op::attributes_at < n_args ? Op::attributes_at : n_args;
  else return n_args;
}

template <class Op, class V>
void visit_attributes(const Op& op, V&& v) {
  if constexpr (requires { op.attributes(v); }) op.attributes(v);
}

namespace detail {
// A view op in PyTorch's sense: its result aliases its input (the schema's `Tensor(a) self ... ->
// Tensor(a)`). In typex the reshape family shares its input's memory, eagerly as in programs;
// select, slice, transpose, permute and expand compute a copy (an in-place write to which is
// refused: PyTorch's would reach the input).
constexpr bool is_view_schema(std::string_view schema) noexcept {
  return schema.find("(Tensor(a) self") != std::string_view::npos && schema.find("-> Tensor(a)") != std::string_view::npos;
}
template <class Op>
concept view_op_type = requires { Op::schema; } && is_view_schema(Op::schema);
constexpr bool shares_memory(std::string_view target) noexcept {
  for (std::string_view t : {"aten.reshape.default", "aten.view.default", "aten.flatten.using_ints", "aten.unsqueeze.default",
                             "aten.squeeze.dim", "aten.squeeze.default", "aten.squeeze.dims", "aten.alias.default"})
    if (t == target) return true;
  return false;
}
}  // namespace detail

template <class... A>
using op_mode_t = std::conditional_t<(is_traced_argument<std::remove_cvref_t<A>>::value || ...), trace_mode,
                                     std::conditional_t<(is_device_argument<std::remove_cvref_t<A>>::value || ...), device_mode, eager_mode>>;

// An error here means: this mode has no runner. For eager_mode, include a backend
// (<typex/backend/eigen.hpp>) to run ops on host tensors; for trace_mode, include
// <typex/trace/record.hpp> (the umbrella <typex/typex.hpp> does).
template <class Mode>
struct op_runner {
  template <class Op, class... A>
  static void run(const Op&, const std::source_location*, const A&...) {
    static_assert(sizeof(Op) == 0,
                  "typex: no runner for these arguments: include <typex/trace/record.hpp> to trace, or a backend "
                  "(<typex/backend/eigen.hpp>) to run ops on host tensors");
  }
};

// `loc` is where the user's code called the op; nullptr where C++ cannot know it (operators take
// no default arguments, so `a + b` has no source location).
template <class Op, class... A>
auto apply_op(const Op& op, const std::source_location* loc, const A&... args) {
  return op_runner<op_mode_t<A...>>::run(op, loc, args...);
}

}  // namespace typex
