// typex/backend/kit/eager.hpp — ops on tensors, run now (eager mode): the part every backend shares.
//
// An eager call's arguments are laid out as the graph would record them (ir::op_arguments) and run
// by the same kernel a program runner uses; the result is bound to the op's rule type (static
// mistakes are compile errors, as when tracing). A backend supplies the kernel runner
// (eigen: typex::eigen::run_kernel) and specializes op_runner<eager_mode> on eager_runner; a device
// backend (CUDA) registers a runner for its device's tensors (set_device_runner), so that tensors
// of several devices coexist in one user program and each call runs where its tensors live.
#pragma once

#include <typex/backend/kit/stepwise.hpp>  // (host_kernel)
#include <typex/core/random.hpp>
#include <typex/ir/call.hpp>
#include <typex/ir/op_arguments.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/mutation.hpp>
#include <typex/tensor/device.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/trace/record.hpp>

#include <array>
#include <atomic>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>

namespace typex::kit {
// The runner of eager calls on tensors of `kind` (CUDA: registered by its backend), or nullptr.
TYPEX_API void set_device_runner(device_kind kind, host_kernel run);
namespace detail {
[[noreturn]] TYPEX_API void mixed_devices(std::string_view op, typex::device a, typex::device b);
TYPEX_API host_kernel device_runner(std::string_view op, typex::device d);
}  // namespace detail
}  // namespace typex::kit

namespace typex {

namespace kit {
// Runs `a` on the devices its tensors live on: HostKernel where they are all on the host, the
// runner a device backend registered (set_device_runner) where they are all on that device; a mix
// is a device_error naming both devices.
template <host_kernel HostKernel>
any_tensor run_on_devices(const ir::call_args& a, std::span<const any_tensor> tensors) {
  typex::device where = typex::device::host();
  const any_tensor* first = nullptr;
  for (const any_tensor& t : tensors) {
    if (first == nullptr) { first = &t; where = t.device(); continue; }
    if (t.device() != where) detail::mixed_devices(a.target(), where, t.device());
  }
  if (where.is_host()) return HostKernel(a);
  return detail::device_runner(a.target(), where)(a);
}

// op_runner<eager_mode>'s body for a backend whose kernels run on host tensors (HostKernel), the
// same for every backend: the call's arguments laid out as the graph would record them, the
// result bound to the op's rule type.
template <host_kernel HostKernel>
struct eager_runner {
  template <class Op, class... A>
  static auto run(const Op& op, const std::source_location* loc, const A&... args) {
    // While a model is traced on this thread, an op reading the state the trace follows (its
    // parameters, buffers, tensor members, or results computed from them) is recorded as a node of
    // the program as well as run: its result is that node's value (tracing_context::bind_eager_result).
    tracing_context* const ctx = current_tracing_context();
    std::optional<ir::value_ref> recorded;
    std::size_t facts = 0;
    if (ctx != nullptr && typex::detail::reads_traced_state(*ctx, args...)) {
      recorded = typex::detail::record_op(*ctx, op, loc, args...).first;
      facts = ctx->requirements().size();  // (the rule runs again below: its facts are recorded already)
    }
    const auto spec = op.result(typex::detail::spec_of_argument(args)...);
    if (recorded) ctx->drop_requirements_from(facts);
    using R = std::remove_cvref_t<decltype(spec)>;
    std::vector<any_tensor> erased;
    erased.reserve(sizeof...(A));
    auto erase = [&](const auto& t) {
      using T = std::remove_cvref_t<decltype(t)>;
      erased.push_back(static_cast<const host_tensor<typename T::dtype_type, typename T::shape_type>&>(t).erase());
      return ir::value_ref{static_cast<ir::node_id>(erased.size() - 1)};
    };
    std::vector<ir::argument> ir_args = ir::op_arguments(op, nullptr, [&](const auto& a) -> ir::argument {
      using T = std::remove_cvref_t<decltype(a)>;
      if constexpr (std::is_null_pointer_v<T>) return ir::none_t{};
      else if constexpr (std::is_same_v<T, bool>) return a;
      else if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(a);
      else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(a);
      else if constexpr (typex::detail::is_tensor_list_v<T>)
        return std::apply([&](const auto&... t) { return std::vector<ir::value_ref>{erase(t)...}; }, a.items);
      else return erase(a);
    }, args...);
    // (pointers taken once every tensor is in `erased`: it no longer moves)
    std::vector<const any_tensor*> tensors(ir_args.size(), nullptr), list;
    for (std::size_t i = 0; i < ir_args.size(); ++i) {
      if (const auto* r = std::get_if<ir::value_ref>(&ir_args[i])) tensors[i] = &erased[r->node];
      if (const auto* l = std::get_if<std::vector<ir::value_ref>>(&ir_args[i]))
        for (const ir::value_ref& r : *l) list.push_back(&erased[r.node]);
    }
    // (a random op on tensors the trace does not follow would run now, and its draw enter the program
    // as a constant: the same mask on every call)
    if constexpr (requires { op.draws(); }) {
      if (op.draws() && ctx != nullptr && !recorded) {
        typex::detail::raise<unsupported_error>([&](auto& w) {
          w.put("typex: "); w.put(Op::target);
          if (loc != nullptr) { w.put(" at "); w.put(format_location(*loc)); }
          w.put(" draws random numbers from tensors that are not traced while the model is traced: it would run now, and "
                "the program would get its result as a constant (the same mask on every call); give it an operand the "
                "trace follows (a traced input, or the module's parameters and buffers, or a value computed from them)");
        });
      }
    }
    // (a recorded random op draws when the program runs, not at export: the thread's stream is left
    // where it was, so that seeding, exporting and running gives the masks the eager model gives)
    std::optional<rng_state> keep_rng;
    if constexpr (requires { op.draws(); })
      if (recorded && op.draws()) keep_rng = get_rng_state();
    any_tensor out = run_on_devices<HostKernel>(ir::call_args(op_id_of<Op>, ir_args, tensors, nullptr, list), erased);
    if (keep_rng) set_rng_state(*keep_rng);
    if (recorded) {
      // (a result sharing its input's memory (reshape) gets its own: the storage is the graph value's key;
      // a write to it reaches the input through the trace's record of the view)
      if (ctx->find_storage(out.get_storage().data()) != nullptr) out = out.clone();
      ctx->bind_eager_result(out, *recorded);
    } else if constexpr (typex::detail::view_op_type<Op> && !typex::detail::shares_memory(Op::target)) {  // (a copy: writes to it are refused)
      typex::detail::note_copied_view(out.raw_data(), out.get_storage().observe(), Op::target);
    }
    return host_tensor<typename R::dtype_type, typename R::shape_type>::bind(out, Op::target);
  }

  // Writes `r`, an in-place op's result in dst's dtype and shape, into dst (copy_, add_, fill_ ...).
  // While a model is traced and dst is module state the trace follows (a buffer, an earlier result
  // computed from state), the write is recorded instead, as the traced write is (a buffer's new
  // value, returned as a BUFFER_MUTATION; a view's write reaching its base; a parameter's, an export
  // error), and dst's memory is left alone: exporting never changes the model's state. A tensor the
  // forward made itself is written, and is the written value from then on.
  template <class D, class R>
  static void write(const D& dst, const R& r) {
    if (tracing_context* const ctx = current_tracing_context()) {
      const void* d = dst.get_storage().data();
      const ir::value_ref* w = ctx->find_storage(r.get_storage().data());
      if (d != nullptr && ctx->follows_storage(d) && !ctx->is_forward_constant(d)) {  // (an enclosing context's too: a write inside control flow)
        const ir::value_ref value = w != nullptr ? ctx->current(*w) : ctx->value_of_tensor(r);
        ctx->overwrite(ctx->value_of_tensor(dst), value);
        return;
      }
      if (w != nullptr) ctx->bind_eager_result(dst.erase(), ctx->current(*w));
    }
    if (dst.numel() != r.numel())  // (the types make them equal; a guard for the memmove)
      typex::detail::raise_message<shape_error>("typex: an in-place write's result does not have its destination's size");
    const std::size_t bytes = static_cast<std::size_t>(r.numel()) * sizeof(*r.data());
    if (bytes != 0) std::memmove(dst.data(), r.data(), bytes);
  }
};

}  // namespace kit
}  // namespace typex

#if TYPEX_HEADER_DEFINITIONS
namespace typex::kit {
namespace detail {
inline std::atomic<host_kernel>& device_runner_slot(device_kind kind) {
  static std::atomic<host_kernel> slots[2] = {nullptr, nullptr};
  return slots[static_cast<std::size_t>(kind) & 1];
}
TYPEX_API void mixed_devices(std::string_view op, typex::device a, typex::device b) {
  typex::detail::raise<device_error>([&](auto& w) {
    w.put("typex: "); w.put(op); w.put(" got tensors on two devices, "); w.put(a.to_string()); w.put(" and ");
    w.put(b.to_string()); w.put(": move them to one device first (typex::cuda::to_device, to_host)");
  });
}
TYPEX_API host_kernel device_runner(std::string_view op, typex::device d) {
  const host_kernel run = device_runner_slot(d.kind).load(std::memory_order_acquire);
  if (run == nullptr) {
    typex::detail::raise<device_error>([&](auto& w) {
      w.put("typex: "); w.put(op); w.put(" got tensors on "); w.put(d.to_string());
      w.put(", and no backend for that device is included (include <typex/backend/cuda.hpp> and link typex::cuda)");
    });
  }
  return run;
}
}  // namespace detail
TYPEX_API void set_device_runner(device_kind kind, host_kernel run) {
  detail::device_runner_slot(kind).store(run, std::memory_order_release);
}
}  // namespace typex::kit
#endif  // TYPEX_HEADER_DEFINITIONS
