// typex/backend/cuda/eager.hpp — ops on device tensors, run now (eager mode on a CUDA device).
//
// A call with a device_tensor argument is in device_mode (ops/apply.hpp): the op's rule gives the
// result's type at compile time, as for host tensors, and the call runs on the tensors' device as a
// program of one node through the same engine, lowering and kernels a program uses (an op the CUDA
// backend does not run is an unsupported_error naming it). The result is a device_tensor of the
// rule's type. Host and device tensors in one call: a device_error naming both devices.
//
// Each call plans its node (a few launch records, the result's memory from the device's pool): it
// is for the odd op between programs, and for checking a program op by op; a model runs as a
// program. Calls while a model is traced are not recorded (device tensors are not module state).
#pragma once

#include <typex/backend/cuda/data_dependent.hpp>
#include <typex/backend/cuda/program.hpp>
#include <typex/backend/cuda/tensor.hpp>
#include <typex/backend/kit/eager.hpp>
#include <typex/ir/describe.hpp>
#include <typex/ir/op_arguments.hpp>
#include <typex/ops/indexing.hpp>

#include <memory>
#include <type_traits>
#include <vector>

namespace typex::cuda {
namespace detail {

// The call `a` (every tensor on one CUDA device) as a program of one node, run on that device; the
// data-dependent ops by their own kernels (data_dependent.hpp: a program of one node cannot be
// planned when the data give its result's size).
inline any_tensor run_call(const ir::call_args& a) {
  if (a.op() == op_id_of<aten::nonzero>) return nonzero_on_device(a);
  if (a.op() == op_id_of<aten::masked_select>) return masked_select_on_device(a);
  std::shared_ptr<device_runtime> rt;
  auto g = std::make_shared<ir::graph>();
  std::vector<ir::argument> args(a.arguments().begin(), a.arguments().end());
  std::vector<any_tensor> inputs;
  const auto place = [&](const any_tensor& t) {
    if (!rt) rt = detail::runtime_of(t.get_storage(), a.target());
    std::vector<ir::sym_expr> shape(t.extents().begin(), t.extents().end());
    inputs.push_back(t);
    std::string name = "arg";
    name += std::to_string(inputs.size() - 1);
    return ir::value_ref{g->add_placeholder(name, {t.scalar_type(), std::move(shape)})};
  };
  std::size_t list_k = 0;
  for (std::size_t k = 0; k < args.size(); ++k) {
    // (a symbolic size, in a program run node by node: its value now, the one-node program's
    // constant; a size list whose one entry no bound symbol gives, a view's anonymous dim, is
    // inferred from the viewed tensor's element count, as the Eigen backend's view kernels do)
    if (std::holds_alternative<ir::sym_expr>(args[k])) {
      args[k] = a.integer(k);
    } else if (std::holds_alternative<std::vector<ir::sym_expr>>(args[k])) {
      try {
        args[k] = a.ints(k);
      } catch (const shape_error&) {
        if (!a.is_tensor(0)) throw;
        const std::vector<index_t> sizes = a.sizes(k, a.tensor(0).numel());
        args[k] = std::vector<std::int64_t>(sizes.begin(), sizes.end());
      }
    }
    if (a.is_tensor(k)) args[k] = place(a.tensor(k));
    else if (auto* refs = std::get_if<std::vector<ir::value_ref>>(&args[k]))
      for (ir::value_ref& r : *refs) r = place(*a.list()[list_k++]);
  }
  if (!rt) rt = step_runtime;
  if (!rt) {
    typex::detail::raise<device_error>([&](auto& w) {
      w.put("typex::cuda: "); w.put(a.target()); w.put(" has no tensor argument to say which device runs it");
    });
  }
  std::vector<ir::tensor_meta> vals = ir::infer_meta(*g, a.op(), args);
  const ir::node_id n = g->add_call({.target = a.op(), .args = std::move(args), .vals = std::move(vals), .nn_module_stack = {}, .stack_trace = ""});
  g->set_output({ir::value_ref{n}});
  program_binding b;
  b.graph = std::move(g);
  b.inputs = b.graph->placeholders();
  b.user_inputs = b.inputs.size();
  // (on the tensors' runtime itself: a stream, pool and cuBLASLt handle per call would be a GPU's worth
  // of set-up per op, and each result would keep them alive)
  // (in a program run node by node, the program's compile options: its products' precision, its
  // convolutions' engine; the device, graphs and plans are this call's)
  compile_options o = step_options ? *step_options : compile_options{};
  o.device = rt;
  o.graphs = false;
  o.max_plans = 1;
  const std::shared_ptr<kit::engine> e = make_engine_on(std::move(b), o, rt, rt);
  std::vector<any_tensor> out;
  e->run(inputs, symbol_table{}, out);
  return std::move(out.front());
}

// (the kit's eager runner finds this one for calls whose type-erased tensors live on a CUDA device)
inline const bool registered_device_runner = (kit::set_device_runner(device_kind::cuda, &run_call), true);

[[noreturn]] inline void no_host_kernel_in_device_mode(std::string_view op) {
  typex::detail::raise<device_error>([&](auto& w) {
    w.put("typex::cuda: "); w.put(op); w.put(" got no tensor on a CUDA device");
  });
}
inline any_tensor host_kernel_in_device_mode(const ir::call_args& a) { no_host_kernel_in_device_mode(a.target()); }

}  // namespace detail
}  // namespace typex::cuda

namespace typex {

template <>
struct op_runner<device_mode> {
  template <class Op, class... A>
  static auto run(const Op& op, const std::source_location*, const A&... args) {
    const auto spec = op.result(detail::spec_of_argument(args)...);  // (the rule: static mistakes are compile errors)
    using R = std::remove_cvref_t<decltype(spec)>;
    std::vector<any_tensor> erased;
    erased.reserve(sizeof...(A));
    auto erase = [&](const auto& t) {
      using T = std::remove_cvref_t<decltype(t)>;
      if constexpr (is_device_argument<T>::value) erased.push_back(t.erase());
      else erased.push_back(static_cast<const host_tensor<typename T::dtype_type, typename T::shape_type>&>(t).erase());
      return ir::value_ref{static_cast<ir::node_id>(erased.size() - 1)};
    };
    std::vector<ir::argument> ir_args = ir::op_arguments(op, nullptr, [&](const auto& a) -> ir::argument {
      using T = std::remove_cvref_t<decltype(a)>;
      if constexpr (std::is_null_pointer_v<T>) return ir::none_t{};
      else if constexpr (std::is_same_v<T, bool>) return a;
      else if constexpr (std::is_integral_v<T>) return static_cast<std::int64_t>(a);
      else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(a);
      else if constexpr (detail::is_tensor_list_v<T>)
        return std::apply([&](const auto&... t) { return std::vector<ir::value_ref>{erase(t)...}; }, a.items);
      else return erase(a);
    }, args...);
    std::vector<const any_tensor*> tensors(ir_args.size(), nullptr), list;
    for (std::size_t i = 0; i < ir_args.size(); ++i) {
      if (const auto* r = std::get_if<ir::value_ref>(&ir_args[i])) tensors[i] = &erased[r->node];
      if (const auto* l = std::get_if<std::vector<ir::value_ref>>(&ir_args[i]))
        for (const ir::value_ref& r : *l) list.push_back(&erased[r.node]);
    }
    const ir::call_args call(op_id_of<Op>, ir_args, tensors, nullptr, list);
    const any_tensor out = kit::run_on_devices<&cuda::detail::host_kernel_in_device_mode>(call, erased);
    return cuda::device_tensor<typename R::dtype_type, typename R::shape_type>::bind(out, Op::target);
  }
};

}  // namespace typex
