// typex/ops/mutation.hpp — in-place writes, as torch's Tensor.copy_, add_, mul_, fill_, zero_.
//
//   copy_(running_mean, new_mean)   self.running_mean.copy_(new_mean)
//                                   -> copy = aten.copy.default(b_running_mean, new_mean)
//                                      and the output `copy: BUFFER_MUTATION target='running_mean'`
//   add_(x, 1.0)                    x.add_(1)   (x a user input)
//                                   -> add = aten.add.Tensor(x, 1.0)
//                                      and the output `add: USER_INPUT_MUTATION target='x'`
//
// Eagerly, an in-place op writes its result (broadcast to dst's shape, in dst's dtype) into dst's
// memory and returns dst. While tracing, nothing is written: the graph records the functional op,
// every later read of dst in the same trace (through any copy of its traced handle, or the module
// tensor's storage) sees the new value, and export_program returns the last value of a buffer as a
// BUFFER_MUTATION output and of a user input as a USER_INPUT_MUTATION output, which a program's
// runner writes back after each call (the module's buffers; the caller's input tensors), as
// torch.export's functionalization does. An intermediate value may be written too (later reads
// see the new value; nothing is returned for it). Writing to a parameter, or to a tensor captured
// from outside the module, is an export error. A write to a module tensor whose value is computed
// from module state alone (`add_(steps, 1)`) is recorded the same way: the eager runner records
// an op on state the trace follows (trace/context.hpp), and its write.
//
// The destination's dtype is kept: a result it cannot hold (a floating result into an integer
// tensor, a number into a bool one) is a compile error, as torch's "result type Float can't be cast
// to the desired output type Long".
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/expand.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/factory.hpp>
#include <typex/core/sentence.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <source_location>
#include <string_view>
#include <unordered_map>

namespace typex {

// aten.copy.default(self, src): src broadcast to self's shape, in self's dtype (a new value).
struct copy_op {
  static constexpr std::string_view target = "aten.copy.default";
  static constexpr std::string_view schema =
      "aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor";
  // the result is src (broadcast and converted into self's shape and dtype): self gets none
  template <class C> static void vjp(C& c) { c.accumulate("src", c.grad()); }
  template <class D, class S>
  static constexpr auto result(const D& dst, const S& src) {
    (void)expand_shape(src.shape, dst.shape, op_name<"copy_">);
    return dst;
  }
  // self's dtype and shape; src must expand to that shape
  template <class R> static void infer(R& r) {
    const auto& self = r.input("self");
    detail::require_expands(r, r.input("src").shape, self.shape, "src");
    r.result(self);
  }
};

namespace detail {
// The results of view ops that copy in typex (select, slice, transpose, permute, expand), computed
// eagerly on this thread and still alive: an in-place write to one is refused, as the trace
// refuses it (PyTorch's would write the tensor it was taken from; typex's would silently not).
// Keyed by the result's bytes, each with an observer of their lifetime (an address reused by a
// later allocation is not taken for the view).
struct copied_view {
  std::weak_ptr<std::byte> bytes;
  std::string_view op;
};
inline std::unordered_map<const void*, copied_view>& copied_views() {
  thread_local std::unordered_map<const void*, copied_view> views;
  return views;
}
inline void note_copied_view(const void* data, std::weak_ptr<std::byte> bytes, std::string_view op) {
  auto& views = copied_views();
  thread_local std::size_t pruned_at = 64;
  if (views.size() >= pruned_at) {  // (amortized: the dead ones go when the table has doubled)
    std::erase_if(views, [](const auto& e) { return e.second.bytes.expired(); });
    pruned_at = std::max<std::size_t>(64, 2 * views.size());
  }
  views[data] = copied_view{std::move(bytes), op};
}
// The op whose copied-view result `data` is, if it is alive.
inline std::string_view copied_view_op(const void* data) {
  auto& views = copied_views();
  const auto it = views.find(data);
  if (it == views.end()) return {};
  const auto alive = it->second.bytes.lock();
  if (alive == nullptr || static_cast<const void*>(alive.get()) != data) return {};
  return it->second.op;
}
template <class D>
void check_eager_destination(const D& dst, const std::source_location& loc) {
  const void* data = dst.get_storage().data();
  if (data == nullptr) return;
  if (const std::string_view op = copied_view_op(data); !op.empty()) {
    raise<unsupported_error>([&](auto& w) {
      w.put("typex: an in-place write (at "); w.put(loc.file_name()); w.put(":"); w.put_int(static_cast<long long>(loc.line()));
      w.put(") to the result of "); w.put(op);
      w.put(": in typex that op makes a copy (only reshape, view, flatten, unsqueeze and squeeze share their input's memory), "
            "so the write would not reach the tensor it was taken from, as PyTorch's would; write that tensor with "
            "typex::select_scatter or typex::slice_scatter (copy_(x, slice_scatter(x, value, dim, start, end))), or compute "
            "the new value without writing in place");
    });
  }
}
}  // namespace detail

template <tensor_like D, tensor_like S>
decltype(auto) copy_(const D& dst, const S& src, const std::source_location& loc = std::source_location::current()) {
  if constexpr (is_traced_argument<D>::value) {  // a user input, or an op's result: replaced by the copy
    auto r = apply_op(copy_op{}, &loc, dst, src);
    r.context().overwrite(dst.value(), r.value());  // (the trace layer's tracing_context)
    return r;
  } else if constexpr (is_traced_argument<S>::value) {  // a module tensor: by its storage
    auto r = apply_op(copy_op{}, &loc, dst, src);
    r.context().mutate(dst.get_storage().data(), r.value());
    return r;
  } else {
    detail::check_eager_destination(dst, loc);
    const auto r = apply_op(copy_op{}, &loc, dst, src);
    op_runner<op_mode_t<D, S>>::write(dst, r);  // (while tracing, a write of module state is recorded: the backend's runner)
    return (dst);
  }
}

namespace detail {
// An error here means: an in-place op's result has a dtype its destination cannot hold.
template <fixed_string Op, class D, class R>
constexpr void check_in_place_dtype() {
  constexpr dtype d = D::dtype_type::value, r = R::dtype_type::value;
  if constexpr ((is_floating_point(r) && !is_floating_point(d)) || (d == dtype::b8 && r != dtype::b8)) {
    TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
      w.put("typex::"); w.put(Op.view()); w.put(": the result is "); w.put(name(r)); w.put(", which the destination, ");
      w.put(name(d)); w.put(", cannot hold (PyTorch: result type can't be cast to the desired output type); "
            "convert the destination first, or write the result to a new tensor");
    });
  }
}

// Writes `r`, the result of an in-place op computed from dst, into dst: without a copy node when
// it already has dst's dtype and shape (the graph then reads as torch's functionalized one).
template <fixed_string Op, class D, class R>
decltype(auto) write_in_place(const D& dst, const R& r, const std::source_location& loc) {
  check_in_place_dtype<Op, D, R>();
  constexpr bool same = std::is_same_v<typename D::dtype_type, typename R::dtype_type> &&
                        std::is_same_v<typename D::shape_type, typename R::shape_type>;
  if constexpr (same && is_traced_argument<D>::value) {
    r.context().overwrite(dst.value(), r.value());
    return R(r);
  } else if constexpr (same && is_traced_argument<R>::value) {
    r.context().mutate(dst.get_storage().data(), r.value());
    return R(r);
  } else if constexpr (same) {  // (host tensors: r written as it is, no copy kernel)
    check_eager_destination(dst, loc);
    op_runner<op_mode_t<D, R>>::write(dst, r);
    return (dst);
  } else {
    return copy_(dst, r, loc);
  }
}
}  // namespace detail

// In-place arithmetic: dst op= other (a tensor broadcast to dst's shape, or a number).
template <tensor_like D, class S> requires binary_operands<D, S>
decltype(auto) add_(const D& dst, const S& other, const std::source_location& loc = std::source_location::current()) {
  return detail::write_in_place<"add_">(dst, add(dst, other, loc), loc);
}
template <tensor_like D, class S> requires binary_operands<D, S>
decltype(auto) sub_(const D& dst, const S& other, const std::source_location& loc = std::source_location::current()) {
  return detail::write_in_place<"sub_">(dst, sub(dst, other, loc), loc);
}
template <tensor_like D, class S> requires binary_operands<D, S>
decltype(auto) mul_(const D& dst, const S& other, const std::source_location& loc = std::source_location::current()) {
  return detail::write_in_place<"mul_">(dst, mul(dst, other, loc), loc);
}
template <tensor_like D, class S> requires binary_operands<D, S>
decltype(auto) div_(const D& dst, const S& other, const std::source_location& loc = std::source_location::current()) {
  return detail::write_in_place<"div_">(dst, div(dst, other, loc), loc);
}
// Every element set to `value` / to zero.
template <tensor_like D, scalar_like V>
decltype(auto) fill_(const D& dst, V value, const std::source_location& loc = std::source_location::current()) {
  return detail::write_in_place<"fill_">(dst, full_like(dst, value, loc), loc);
}
template <tensor_like D>
decltype(auto) zero_(const D& dst, const std::source_location& loc = std::source_location::current()) {
  return detail::write_in_place<"zero_">(dst, zeros_like(dst, loc), loc);
}

// This header's ops, for the registry (ops/all.hpp).
using mutation_ops = op_list<copy_op>;

}  // namespace typex
