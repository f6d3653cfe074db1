// typex/tensor/device_ops.hpp — what a device backend lends the rest of typex for tensors on its
// devices, where the host cannot touch the bytes: copies, fresh tensors, and the optimizers' updates.
//
// program_module keeps a program's state (written buffers, trained parameters) where its backend
// runs (Backend::place_state): on a CUDA device those are device tensors, which the module copies,
// clones and writes back through these operations; typex::optim steps device parameters through
// `step`, with the same update (torch.optim's single-tensor algorithm) the host loop runs. The CUDA
// backend registers its own (backend/cuda/device_ops.hpp, included by <typex/backend/cuda.hpp>);
// a tensor on a device whose backend is not included is a device_error saying what to include.
#pragma once

#include <typex/core/error.hpp>
#include <typex/tensor/device.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>

namespace typex {

// One optimizer update of one parameter: torch.optim's single-tensor step, with the step's scalars
// computed on the host exactly as the host loop computes them (nn/optim.hpp), in double; the
// device converts each to the parameter's dtype as the host loop does.
struct optimizer_update {
  enum class algorithm : std::uint8_t {
    sgd,    // buf1: the momentum buffer (null: no momentum)
    adam,   // buf1: exp_avg, buf2: exp_avg_sq, buf3: max_exp_avg_sq (AMSGrad) or null
    scale,  // param *= factor (clip_grad_norm_'s scaling of a gradient)
  };
  algorithm kind = algorithm::sgd;
  const any_tensor* param = nullptr;  // updated in place
  const any_tensor* grad = nullptr;   // of param's dtype, extents and device
  const any_tensor* buf1 = nullptr;
  const any_tensor* buf2 = nullptr;
  const any_tensor* buf3 = nullptr;
  bool maximize = false;
  bool first = false;      // sgd: the momentum buffer's first step (it becomes the gradient)
  bool nesterov = false;   // sgd
  bool decoupled = false;  // adam: AdamW's decay of the parameter, not of the gradient
  double weight_decay = 0;
  double momentum = 0, keep = 1, lr_step = 0;  // sgd: keep = 1 - dampening, lr_step = -lr
  double step_size = 0, bias2_sqrt = 1, one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0, eps = 0, decay = 1;  // adam
  double factor = 1;  // scale
};

// clip_grad_norm_'s sums, computed alike on the host and on a device so that both give the same
// bits: a tensor's elements in chunks of power_sum_chunk, each chunk's sum of |x|^p (p = 1 and 2 as
// |x| and |x| |x|; the largest |x| for p = inf) accumulated in double in element order, a NaN making
// the chunk NaN. The chunks are then added in order. The device rounds each product and sum on its
// own (math::mul_rn / add_rn); the host's plain `acc + a * a` does too where it is not compiled
// with FMA contraction (typex's libraries are not; docs/cuda_backend.md).
inline constexpr index_t power_sum_chunk = 1024;

// The host's chunk sums of the n elements at `d` (f32 or f64) for norm_type p (>= 1, or +inf) into
// `sums` (ceil(n / power_sum_chunk) of them): what device_ops::power_sums computes on a device.
template <class T>
void host_power_sums(const T* d, index_t n, double norm_type, std::span<double> sums) noexcept {
  const bool inf = std::isinf(norm_type);
  for (std::size_t c = 0; c < sums.size(); ++c) {
    const index_t end = std::min<index_t>(n, static_cast<index_t>(c + 1) * power_sum_chunk);
    double acc = 0;
    for (index_t k = static_cast<index_t>(c) * power_sum_chunk; k < end; ++k) {
      const double a = std::abs(static_cast<double>(d[k]));
      // (a NaN makes the chunk NaN under either norm, as torch's: std::max alone would drop it)
      if (std::isnan(a) || std::isnan(acc)) acc = std::numeric_limits<double>::quiet_NaN();
      else if (inf) acc = std::max(acc, a);
      else acc = acc + (norm_type == 1 ? a : norm_type == 2 ? a * a : std::pow(a, norm_type));
    }
    sums[c] = acc;
  }
}

// One tensor's chunk sums (device_ops::power_sums): ceil(numel / power_sum_chunk) of them into `sums`.
struct power_sum_request {
  const any_tensor* t = nullptr;
  std::span<double> sums;
};

struct device_ops {
  // A new tensor of `like`'s dtype and extents on its device: a copy of it where `copy`, else zeros.
  any_tensor (*make)(const any_tensor& like, bool copy) = nullptr;
  // src's bytes into dst (equal byte counts; each on the host or on this kind of device), finished
  // when it returns.
  void (*copy)(const any_tensor& dst, const any_tensor& src) = nullptr;
  // The updates, each on its parameter's device, finished when it returns: as if in order (updates
  // that touch the same memory run in order; others may run together, in one launch).
  void (*step)(std::span<const optimizer_update> updates) = nullptr;
  // The power_sum_chunk sums of each request's tensor (f32 or f64, on this kind of device) for
  // norm_type p (>= 1, or inf) into its `sums`, every one on the host when it returns: computed
  // together, with one synchronization per device runtime (clip_grad_norm_ asks for all of its
  // device gradients at once), not one per tensor.
  void (*power_sums)(std::span<const power_sum_request> requests, double norm_type) = nullptr;
};

namespace detail {
inline std::atomic<const device_ops*>& device_ops_slot(device_kind kind) noexcept {
  static std::atomic<const device_ops*> slots[2] = {nullptr, nullptr};
  return slots[static_cast<std::size_t>(kind) & 1];
}
}  // namespace detail

// Registers `ops` for tensors on devices of `kind` (a backend does, once, when included).
inline void set_device_ops(device_kind kind, const device_ops* ops) noexcept {
  detail::device_ops_slot(kind).store(ops, std::memory_order_release);
}

// The operations for tensors on `d` (not the host), or a device_error from `who` saying what to include.
inline const device_ops& device_ops_for(typex::device d, std::string_view who) {
  const device_ops* ops = d.is_host() ? nullptr : detail::device_ops_slot(d.kind).load(std::memory_order_acquire);
  if (ops == nullptr)
    typex::detail::raise<device_error>([&](auto& w) {
      w.put(who); w.put(": a tensor on "); w.put(d.to_string());
      w.put(d.is_host() ? " has no device operations" : ", and no backend for that device is included (include <typex/backend/cuda.hpp> and link typex::cuda)");
    });
  return *ops;
}

// A copy of `t` where it lives (host or device).
inline any_tensor clone_where_it_is(const any_tensor& t, std::string_view who) {
  if (t.device().is_host()) return t.clone();
  return device_ops_for(t.device(), who).make(t, true);
}
// Zeros of `t`'s dtype and extents where it lives.
inline any_tensor zeros_where_it_is(const any_tensor& t, std::string_view who) {
  if (t.device().is_host()) {
    any_tensor z(t.scalar_type(), t.extents());
    if (z.nbytes() != 0) std::memset(z.raw_data(), 0, z.nbytes());
    return z;
  }
  return device_ops_for(t.device(), who).make(t, false);
}
// src's bytes into dst (equal sizes), wherever each lives; finished when it returns.
inline void copy_bytes(const any_tensor& dst, const any_tensor& src, std::string_view who) {
  if (src.nbytes() != dst.nbytes())
    typex::detail::raise<shape_error>([&](auto& w) {
      w.put(who); w.put(": a copy of "); w.put(src.to_string()); w.put(" into "); w.put(dst.to_string());
    });
  if (src.nbytes() == 0) return;
  if (dst.device().is_host() && src.device().is_host()) {
    std::memmove(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  device_ops_for(dst.device().is_host() ? src.device() : dst.device(), who).copy(dst, src);
}
// A host copy of `t` (itself, cloned, where it is on the host).
inline any_tensor host_copy(const any_tensor& t, std::string_view who) {
  if (t.device().is_host()) return t.clone();
  any_tensor h(t.scalar_type(), t.extents());
  copy_bytes(h, t, who);
  return h;
}

}  // namespace typex
