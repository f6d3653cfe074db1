// typex/ops/mutation.hpp — copy_(dst, src): writing into a module's state, as torch's Tensor.copy_.
//
//   copy_(running_mean, new_mean)   self.running_mean.copy_(new_mean)
//                                   -> copy = aten.copy.default(b_running_mean, new_mean)
//                                      and the output `copy: BUFFER_MUTATION target='running_mean'`
//
// Eagerly, copy_ writes src (broadcast to dst's shape, converted to dst's dtype) into dst's memory
// and returns dst. While tracing (src is traced), nothing is written: the graph records the
// functional copy, later reads of dst in the same trace see it, and export_program returns it as a
// buffer mutation, which a program's runner applies to its buffers after each call (torch.export's
// functionalization). dst must then be a buffer of the exported module; writing to a traced value
// (a user input or an intermediate) is a compile error, to a parameter or a captured tensor an
// export error. Only a traced source records: copy_ of a host tensor during a trace runs eagerly
// and writes dst (as_traced(t, x) makes the source part of the graph).
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/expand.hpp>
#include <typex/core/sentence.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <cstring>
#include <source_location>
#include <string_view>

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
};

namespace detail {
template <class D>
constexpr auto check_copy_destination() {
  if constexpr (is_traced_argument<D>::value) {
    TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
      w.put("typex::copy_: the destination is a traced value (a user input or an op's result), which an exported "
            "program cannot write to; copy_ into a buffer of the module, or return the new value");
    });
  }
}
}  // namespace detail

template <tensor_like D, tensor_like S>
decltype(auto) copy_(const D& dst, const S& src, const std::source_location& loc = std::source_location::current()) {
  detail::check_copy_destination<D>();
  if constexpr (is_traced_argument<S>::value && !is_traced_argument<D>::value) {
    auto r = apply_op(copy_op{}, &loc, dst, src);
    r.context().mutate(dst.get_storage().data(), r.value());  // (the trace layer's tracing_context)
    return r;
  } else if constexpr (!is_traced_argument<D>::value) {
    const auto r = apply_op(copy_op{}, &loc, dst, src);
    const std::size_t bytes = static_cast<std::size_t>(r.numel()) * sizeof(*r.data());
    if (bytes != 0) std::memmove(dst.data(), r.data(), bytes);
    return (dst);
  }
}

// This header's ops, for the registry (ops/all.hpp).
using mutation_ops = op_list<copy_op>;

}  // namespace typex
