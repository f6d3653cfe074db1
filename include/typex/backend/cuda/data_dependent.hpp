// typex/backend/cuda/data_dependent.hpp — the ops whose result's size only the data give
// (nonzero, masked_select), on tensors on a CUDA device, and the runtime of a program run node by
// node (step_runtime). The ops: kernels/select.cuh's count pass, the chunks' counts back to the
// host (one synchronization: the result must be allocated), their offsets up, the write pass. A program with these ops runs on the kit's stepwise engine, node by
// node (engine_impl.hpp), and these are its kernels for them. Host C++ only.
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/launch.hpp>
#include <typex/backend/cuda/memory.hpp>
#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>
#include <typex/ir/call.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace typex::cuda {
namespace detail {

// The runtime a call with no tensor argument (full, arange) runs on, where a program is running
// node by node on a device (the stepwise engine sets it for its call: engine_impl.hpp; eager.hpp's
// run_call reads it); null elsewhere.
inline thread_local std::shared_ptr<device_runtime> step_runtime;

// nonzero and masked_select on the device (kernels/select.cuh): a count pass, the chunks' counts
// back to the host (the result's size, which only the data give), their offsets up, a write pass.
// The stepwise engine's kernels for these ops (their results are sized by the data).
inline any_tensor select_on_device(const ir::call_args& a, bool coords) {
  const any_tensor& self = a.tensor(0);
  const std::shared_ptr<device_runtime> rt = detail::runtime_of(self.get_storage(), a.target());
  const std::size_t rank = self.rank();
  if (rank > static_cast<std::size_t>(max_rank))
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex::cuda: "); w.put(a.target()); w.put(" of a tensor of rank "); w.put_int(static_cast<long long>(rank));
      w.put(" (the CUDA kernel takes at most "); w.put_int(max_rank); w.put(")");
    });
  select_params p;
  p.rank = static_cast<std::int32_t>(rank);
  p.n = self.numel();
  p.coords = coords;
  for (std::size_t d = 0; d < rank; ++d) p.extent[d] = self.extents()[d];
  broadcast_strides(self.extents(), rank, p.src_stride);
  if (coords) {  // (nonzero: the condition is self)
    p.cond = self.raw_data();
    p.cond_itemsize = static_cast<std::int32_t>(itemsize(self.scalar_type()));
    p.cond_float = is_floating_point(self.scalar_type());
    for (std::size_t d = 0; d < rank; ++d) p.cond_stride[d] = p.src_stride[d];
  } else {  // (masked_select: a bool mask expanded to self's shape, right-aligned)
    const any_tensor& mask = a.tensor(1);
    // (what the op's rule says, checked again: this function takes any call)
    bool expands = mask.scalar_type() == dtype::b8 && mask.rank() <= rank;
    for (std::size_t k = 0; expands && k < mask.rank(); ++k) {
      const index_t m = mask.extents()[mask.rank() - 1 - k], s = self.extents()[rank - 1 - k];
      expands = m == s || m == 1;
    }
    if (!expands)
      typex::detail::raise<shape_error>([&](auto& w) {
        w.put("typex::cuda: "); w.put(a.target()); w.put(": the mask is "); w.put(mask.to_string());
        w.put("; a bool mask that expands to self's "); w.put(self.to_string()); w.put(" is expected");
      });
    if (mask.device() != self.device() || detail::runtime_of(mask.get_storage(), a.target())->info().emulated != rt->info().emulated)
      typex::detail::raise<device_error>([&](auto& w) { w.put("typex::cuda: "); w.put(a.target()); w.put(": self and the mask are on different devices"); });
    p.src = self.raw_data();
    p.itemsize = static_cast<std::int32_t>(itemsize(self.scalar_type()));
    p.cond = mask.raw_data();
    p.cond_itemsize = 1;
    broadcast_strides(mask.extents(), rank, p.cond_stride);
  }
  device_memory memory(rt);
  const dtype out_dt = coords ? dtype::i64 : self.scalar_type();
  if (p.n == 0) return memory.make_tensor(out_dt, coords ? std::vector<index_t>{0, static_cast<index_t>(rank)} : std::vector<index_t>{0});
  const std::int64_t blocks = select_blocks(p.n);
  const any_tensor counts = memory.make_tensor(dtype::i64, {blocks});
  const std::string what = std::string(a.target()) + " (a data-dependent size)";
  p.kind = select_kind::count;
  p.counts = reinterpret_cast<std::int64_t*>(counts.raw_data());
  rt->launch(select_launch(p), what);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(blocks));
  rt->copy_to_host(offsets.data(), counts.raw_data(), offsets.size() * sizeof(std::int64_t));
  rt->synchronize();
  std::int64_t total = 0;
  for (std::int64_t& o : offsets) {  // (exclusive prefix sums: each chunk's first output row)
    const std::int64_t c = o;
    o = total;
    total += c;
  }
  any_tensor out = memory.make_tensor(out_dt, coords ? std::vector<index_t>{total, static_cast<index_t>(rank)} : std::vector<index_t>{total});
  if (total > 0) {
    rt->copy_to_device(counts.raw_data(), offsets.data(), offsets.size() * sizeof(std::int64_t));
    p.kind = select_kind::write;
    p.counts = nullptr;
    p.offsets = reinterpret_cast<const std::int64_t*>(counts.raw_data());
    p.out = out.raw_data();
    rt->launch(select_launch(p), what);
    rt->synchronize();  // (the offsets' host copy goes with this frame)
  }
  return out;
}
}  // namespace detail

// aten.nonzero(self) and aten.masked_select(self, mask) of tensors on a CUDA device: new device
// tensors (the kit's stepwise engine's kernels for these ops; any call_args naming device tensors).
inline any_tensor nonzero_on_device(const ir::call_args& a) { return detail::select_on_device(a, true); }
inline any_tensor masked_select_on_device(const ir::call_args& a) { return detail::select_on_device(a, false); }


}  // namespace typex::cuda
