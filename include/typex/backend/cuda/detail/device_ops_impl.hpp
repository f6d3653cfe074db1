// typex/backend/cuda/detail/device_ops_impl.hpp — the definitions of the CUDA backend's device
// operations (device_ops.hpp): compiled once in typex::cuda (src/cuda/engine.cpp), or inline with
// the engine in header-only builds (program.hpp includes detail/engine_impl.hpp, which includes this).
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/device_ops.hpp>
#include <typex/backend/cuda/launch.hpp>
#include <typex/backend/cuda/memory.hpp>
#include <typex/tensor/device_ops.hpp>

#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace typex::cuda::detail {

TYPEX_CUDA_API any_tensor make_on_device(const any_tensor& like, bool copy) {
  const std::shared_ptr<device_runtime> rt = runtime_of(like.get_storage(), "typex::cuda: a new tensor like a device tensor");
  device_memory m(rt);
  any_tensor out = m.make_tensor(like.scalar_type(), like.extents());
  if (out.nbytes() != 0) {
    if (copy) rt->copy_on_device(out.raw_data(), like.raw_data(), like.nbytes());
    else rt->fill_zero(out.raw_data(), out.nbytes());
  }
  rt->synchronize();
  return out;
}

TYPEX_CUDA_API void copy_tensor_bytes(const any_tensor& dst, const any_tensor& src) {
  const bool to_host = dst.device().is_host(), from_host = src.device().is_host();
  const std::shared_ptr<device_runtime> rt =
      runtime_of((to_host ? src : dst).get_storage(), "typex::cuda: a copy of a device tensor's bytes");
  if (!to_host && !from_host) {  // (both on a device: the same one, and both emulated or both real)
    const std::shared_ptr<device_runtime> other = runtime_of(src.get_storage(), "typex::cuda: a copy of a device tensor's bytes");
    if (src.device() != dst.device() || other->info().emulated != rt->info().emulated)
      typex::detail::raise<device_error>([&](auto& w) {
        w.put("typex::cuda: a copy from "); w.put(src.device().to_string()); w.put(" to "); w.put(dst.device().to_string());
        w.put(" of memory of two different runtimes (copy between devices through the host)");
      });
  }
  if (src.nbytes() != 0) {
    if (to_host) rt->copy_to_host(dst.raw_data(), src.raw_data(), src.nbytes());
    else if (from_host) rt->copy_to_device(dst.raw_data(), src.raw_data(), src.nbytes());
    else rt->copy_on_device(dst.raw_data(), src.raw_data(), src.nbytes());
  }
  rt->synchronize();
}

TYPEX_CUDA_API void optimizer_step(std::span<const optimizer_update> updates) {
  const auto runtime = [&](const any_tensor& t, const std::shared_ptr<device_runtime>* same) {
    std::shared_ptr<device_runtime> rt = runtime_of(t.get_storage(), "typex::optim: a step on a device");
    if (same != nullptr && (t.device() != (*same)->where() || rt->info().emulated != (*same)->info().emulated))
      typex::detail::raise<device_error>([&](auto& w) {
        w.put("typex::optim: a parameter on "); w.put((*same)->where().to_string()); w.put(" and its gradient or state on ");
        w.put(t.device().to_string()); w.put(" (of another runtime): an update reads and writes one device");
      });
    return rt;
  };
  // every update checked and its launch record made before any runs: an error steps nothing
  std::vector<std::pair<std::shared_ptr<device_runtime>, kernel_launch>> launches;
  for (const optimizer_update& u : updates) {
    std::shared_ptr<device_runtime> rt = runtime(*u.param, nullptr);
    optim_params p;
    p.kind = u.kind == optimizer_update::algorithm::adam ? optim_kind::adam
             : u.kind == optimizer_update::algorithm::sgd ? optim_kind::sgd
                                                          : optim_kind::scale;
    p.f64 = u.param->scalar_type() == dtype::f64;
    p.maximize = u.maximize, p.first = u.first, p.nesterov = u.nesterov, p.decoupled = u.decoupled;
    p.weight_decay_on = u.weight_decay != 0;
    p.param = u.param->raw_data();
    const auto operand = [&](const any_tensor* t) -> std::byte* {
      if (t == nullptr) return nullptr;
      (void)runtime(*t, &rt);
      if (t->nbytes() != u.param->nbytes())
        typex::detail::raise<shape_error>([&](auto& w) {
          w.put("typex::optim: an update of "); w.put(u.param->to_string()); w.put(" with "); w.put(t->to_string());
        });
      return t->raw_data();
    };
    p.grad = operand(u.grad);
    p.buf1 = operand(u.buf1), p.buf2 = operand(u.buf2), p.buf3 = operand(u.buf3);
    p.n = u.param->numel();
    p.weight_decay = u.weight_decay, p.momentum = u.momentum, p.keep = u.keep, p.lr_step = u.lr_step;
    p.step_size = u.step_size, p.bias2_sqrt = u.bias2_sqrt, p.one_minus_beta1 = u.one_minus_beta1, p.beta2 = u.beta2;
    p.one_minus_beta2 = u.one_minus_beta2, p.eps = u.eps, p.decay = u.decay, p.factor = u.factor;
    if (p.n != 0) launches.emplace_back(std::move(rt), optim_launch(p));
  }
  // every runtime touched synchronized when this returns or throws (a failed launch leaves no
  // kernel of this step reading gradients the caller may free)
  struct synchronizer {
    std::vector<std::shared_ptr<device_runtime>> touched;
    ~synchronizer() {
      for (const auto& rt : touched) {
        try {
          rt->synchronize();
        } catch (...) {  // (the launch's own error is the one reported)
        }
      }
    }
  } sync;
  for (const auto& [rt, k] : launches) {
    bool seen = false;
    for (const auto& t : sync.touched) seen = seen || t == rt;
    if (!seen) sync.touched.push_back(rt);
    rt->launch(k, "typex::optim's update of a parameter");
  }
  for (const auto& rt : sync.touched) rt->synchronize();  // (an asynchronous failure reported here)
  sync.touched.clear();
}

TYPEX_CUDA_API void power_sums(const any_tensor& t, double norm_type, std::span<double> sums) {
  const std::shared_ptr<device_runtime> rt = runtime_of(t.get_storage(), "typex::optim::clip_grad_norm_: a gradient on a device");
  const std::int64_t n = t.numel(), chunks = (n + power_sum_chunk - 1) / power_sum_chunk;
  if ((t.scalar_type() != dtype::f32 && t.scalar_type() != dtype::f64) || static_cast<std::int64_t>(sums.size()) != chunks)
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put("typex::optim::clip_grad_norm_: the power sums of "); w.put(t.to_string()); w.put(" (f32 or f64) into ");
      w.put_int(static_cast<long long>(sums.size())); w.put(" chunk sums");
    });
  if (chunks == 0) return;
  device_memory m(rt);
  const any_tensor out = m.make_tensor(dtype::f64, {chunks});
  optim_params p;
  p.kind = optim_kind::power_sum;
  p.f64 = t.scalar_type() == dtype::f64;
  p.param = t.raw_data();
  p.n = n;
  p.norm_type = norm_type;
  p.inf_norm = std::isinf(norm_type);
  p.sums = reinterpret_cast<double*>(out.raw_data());
  p.chunk = power_sum_chunk;
  rt->launch(optim_launch(p), "typex::optim::clip_grad_norm_'s power sums of a gradient");
  rt->copy_to_host(sums.data(), out.raw_data(), static_cast<std::size_t>(chunks) * sizeof(double));
  rt->synchronize();
}

}  // namespace typex::cuda::detail
