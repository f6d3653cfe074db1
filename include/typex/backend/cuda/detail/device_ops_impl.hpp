// typex/backend/cuda/detail/device_ops_impl.hpp — the definitions of the CUDA backend's device
// operations (device_ops.hpp): compiled once in typex::cuda (src/cuda/engine.cpp), or inline with
// the engine in header-only builds (program.hpp includes detail/engine_impl.hpp, which includes this).
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/device_ops.hpp>
#include <typex/backend/cuda/launch.hpp>
#include <typex/backend/cuda/memory.hpp>
#include <typex/tensor/device_ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
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

// The runtimes a batch of launches used, each synchronized once: by finish() when the batch went
// well (an asynchronous failure is thrown there), by the destructor when it throws (errors
// swallowed: the launch's own is the one reported). Declared after what its launches read, so that
// nothing they read is freed before they end.
struct runtimes_touched {
  std::vector<std::shared_ptr<device_runtime>> touched;
  runtimes_touched() = default;
  runtimes_touched(const runtimes_touched&) = delete;
  runtimes_touched& operator=(const runtimes_touched&) = delete;
  ~runtimes_touched() {
    for (const auto& rt : touched) {
      try {
        rt->synchronize();
      } catch (...) {
      }
    }
  }
  void touch(const std::shared_ptr<device_runtime>& rt) {
    for (const auto& t : touched)
      if (t == rt) return;
    touched.push_back(rt);
  }
  void finish() {
    for (const auto& rt : touched) rt->synchronize();
    touched.clear();
  }
};

// A fused step's block: this many elements of one parameter (4 per thread of elementwise_threads).
inline constexpr std::int64_t fused_step_chunk = 4 * std::int64_t{elementwise_threads};

// Whether no two updates touch overlapping memory (parameter, gradient, state): then one launch may
// run them all, in any order. Every byte range sorted by its start and swept once: a range that
// starts before the furthest end so far, owned by another update, overlaps it (were it to overlap
// an earlier range of a third update only, those two would overlap each other, found before).
inline bool disjoint_updates(std::span<const std::pair<std::shared_ptr<device_runtime>, optim_params>> entries) {
  struct range {
    std::uintptr_t begin, end;
    std::size_t owner;
  };
  std::vector<range> r;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const optim_params& p = entries[i].second;
    const std::uintptr_t bytes = static_cast<std::uintptr_t>(p.n) * (p.f64 ? 8u : 4u);
    for (const void* a : {static_cast<const void*>(p.param), p.grad, static_cast<const void*>(p.buf1), static_cast<const void*>(p.buf2),
                          static_cast<const void*>(p.buf3)})
      if (a != nullptr) r.push_back({reinterpret_cast<std::uintptr_t>(a), reinterpret_cast<std::uintptr_t>(a) + bytes, i});
  }
  std::sort(r.begin(), r.end(), [](const range& a, const range& b) { return a.begin < b.begin; });
  std::uintptr_t furthest = 0;
  std::size_t owner = 0;
  for (std::size_t k = 0; k < r.size(); ++k) {
    if (k > 0 && r[k].begin < furthest && r[k].owner != owner) return false;
    if (k == 0 || r[k].end > furthest) furthest = r[k].end, owner = r[k].owner;
  }
  return true;
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
  // every update checked and its parameters made before any runs: an error steps nothing
  std::vector<std::pair<std::shared_ptr<device_runtime>, optim_params>> entries;
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
    if (p.n == 0) continue;
    (void)optim_launch(p);  // (its checks, before anything runs)
    entries.emplace_back(std::move(rt), p);
  }
  // The launches: one update alone, or several through a table in device memory (its entries read
  // from `updates` by the copy, which must stay valid until the synchronization: declared before
  // `sync`, so destroyed after it, on every path)
  struct launch_group {
    std::shared_ptr<device_runtime> rt;
    std::vector<optim_params> updates;  // (one: launched alone; more: a table's entries)
    std::int64_t blocks = 0;
    std::optional<any_tensor> table;    // (none: each update launched alone)
  };
  std::vector<launch_group> groups;
  // (a failed launch leaves no kernel of this step reading gradients the caller may free)
  runtimes_touched sync;
  const auto launch_one = [&](const std::shared_ptr<device_runtime>& rt, const optim_params& p) {
    sync.touch(rt);
    rt->launch(optim_launch(p), "typex::optim's update of a parameter");
  };
  // One launch per runtime and dtype where no two updates touch the same memory (the usual step:
  // distinct parameters, each with its own gradient and state), in any order then. Otherwise one
  // launch per update, in the updates' order; and where a group's table cannot be allocated, one
  // launch per update of that group. Every table is allocated and filled before the first launch:
  // an error there steps nothing.
  if (entries.size() < 2 || !disjoint_updates(entries)) {
    for (const auto& [rt, p] : entries) groups.push_back({rt, {p}, 0, std::nullopt});
  } else {
    std::vector<bool> done(entries.size(), false);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (done[i]) continue;
      launch_group g{entries[i].first, {}, 0, std::nullopt};
      for (std::size_t j = i; j < entries.size(); ++j) {
        if (done[j] || entries[j].first != entries[i].first || entries[j].second.f64 != entries[i].second.f64) continue;
        const std::int64_t b = (entries[j].second.n + fused_step_chunk - 1) / fused_step_chunk;
        if (g.blocks + b > std::int64_t{0x7fffffff}) {
          if (j == i) {  // (more than a launch's blocks alone: its own grid-stride launch)
            done[j] = true;
            g.updates.push_back(entries[j].second);
            break;
          }
          continue;  // (the next launch's)
        }
        done[j] = true;
        g.updates.push_back(entries[j].second);
        g.updates.back().first_block = g.blocks;
        g.blocks += b;
      }
      groups.push_back(std::move(g));
    }
    for (launch_group& g : groups) {
      if (g.updates.size() < 2) continue;
      try {
        g.table = device_memory(g.rt).make_tensor(dtype::i64, {static_cast<index_t>((g.updates.size() * sizeof(optim_params) + 7) / 8)});
      } catch (const device_error&) {  // (no room for the table: these updates one by one, as they fit)
        continue;
      }
      sync.touch(g.rt);
      g.rt->copy_to_device(g.table->raw_data(), g.updates.data(), g.updates.size() * sizeof(optim_params));
    }
  }
  for (const launch_group& g : groups) {
    if (!g.table) {
      for (const optim_params& p : g.updates) launch_one(g.rt, p);
      continue;
    }
    optim_params many;
    many.kind = optim_kind::many;
    many.f64 = g.updates.front().f64;
    many.table = reinterpret_cast<const optim_params*>(g.table->raw_data());
    many.count = static_cast<std::int32_t>(g.updates.size());
    many.blocks = g.blocks;
    many.chunk = fused_step_chunk;
    sync.touch(g.rt);
    g.rt->launch(optim_launch(many), "typex::optim's update of its parameters (one launch)");
  }
  sync.finish();  // (an asynchronous failure reported here)
}

TYPEX_CUDA_API void power_sums(std::span<const power_sum_request> requests, double norm_type) {
  // every request checked before anything runs
  std::vector<std::shared_ptr<device_runtime>> rts;
  for (const power_sum_request& r : requests) {
    const any_tensor& t = *r.t;
    rts.push_back(runtime_of(t.get_storage(), "typex::optim::clip_grad_norm_: a gradient on a device"));
    const std::int64_t chunks = (t.numel() + power_sum_chunk - 1) / power_sum_chunk;
    if ((t.scalar_type() != dtype::f32 && t.scalar_type() != dtype::f64) || static_cast<std::int64_t>(r.sums.size()) != chunks ||
        !(norm_type >= 1))
      typex::detail::raise<argument_error>([&](auto& w) {
        w.put("typex::optim::clip_grad_norm_: the power sums of "); w.put(t.to_string()); w.put(" (f32 or f64) into ");
        w.put_int(static_cast<long long>(r.sums.size())); w.put(" chunk sums, of a norm type at least 1");
      });
  }
  // The launches: per runtime and dtype, one over all their tensors (a table of power_sum entries
  // and every chunk's sum in one device buffer, read back in one copy), or one per tensor where it
  // has the group to itself or the device has no room for the buffer. Declared before `sync`: the
  // device buffers and the host memory the copies write stay until the synchronization.
  struct sum_group {
    std::shared_ptr<device_runtime> rt;
    bool f64 = false;
    std::vector<std::size_t> members;  // (indices into requests)
    any_tensor buffer;                 // (the table, then the sums)
    std::vector<optim_params> table;
    std::vector<double> host;          // (the group's sums, copied back)
  };
  std::vector<sum_group> groups;
  std::vector<any_tensor> outs;  // (one tensor's sums on the device)
  runtimes_touched sync;
  const auto params_of = [&](std::size_t i) {
    const any_tensor& t = *requests[i].t;
    optim_params p;
    p.kind = optim_kind::power_sum;
    p.f64 = t.scalar_type() == dtype::f64;
    p.param = t.raw_data();
    p.n = t.numel();
    p.norm_type = norm_type;
    p.inf_norm = std::isinf(norm_type);
    p.chunk = power_sum_chunk;
    return p;
  };
  const auto one = [&](std::size_t i) {
    const std::shared_ptr<device_runtime>& rt = rts[i];
    const std::int64_t chunks = static_cast<std::int64_t>(requests[i].sums.size());
    sync.touch(rt);
    outs.push_back(device_memory(rt).make_tensor(dtype::f64, {chunks}));
    optim_params p = params_of(i);
    p.sums = reinterpret_cast<double*>(outs.back().raw_data());
    rt->launch(optim_launch(p), "typex::optim::clip_grad_norm_'s power sums of a gradient");
    rt->copy_to_host(requests[i].sums.data(), outs.back().raw_data(), static_cast<std::size_t>(chunks) * sizeof(double));
  };
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].sums.empty()) continue;
    const bool f64 = requests[i].t->scalar_type() == dtype::f64;
    std::size_t k = 0;
    while (k < groups.size() && (groups[k].rt != rts[i] || groups[k].f64 != f64)) ++k;
    if (k == groups.size()) groups.push_back({rts[i], f64, {}, {}, {}, {}});
    groups[k].members.push_back(i);
  }
  for (sum_group& g : groups) {
    if (g.members.size() == 1) {
      one(g.members.front());
      continue;
    }
    std::int64_t total = 0;
    for (const std::size_t i : g.members) {
      g.table.push_back(params_of(i));
      g.table.back().first_block = total;
      total += static_cast<std::int64_t>(requests[i].sums.size());
    }
    const std::int64_t table_words = static_cast<std::int64_t>((g.table.size() * sizeof(optim_params) + 7) / 8);
    try {
      g.buffer = device_memory(g.rt).make_tensor(dtype::i64, {static_cast<index_t>(table_words + total)});
    } catch (const device_error&) {  // (no room for them together: each on its own, as it fits)
      for (const std::size_t i : g.members) one(i);
      g.members.clear();
      continue;
    }
    double* sums = reinterpret_cast<double*>(g.buffer.raw_data()) + table_words;
    for (optim_params& e : g.table) e.sums = sums + e.first_block;
    sync.touch(g.rt);
    g.rt->copy_to_device(g.buffer.raw_data(), g.table.data(), g.table.size() * sizeof(optim_params));
    optim_params many;
    many.kind = optim_kind::many_power_sums;
    many.f64 = g.f64;
    many.table = reinterpret_cast<const optim_params*>(g.buffer.raw_data());
    many.count = static_cast<std::int32_t>(g.table.size());
    many.n = total;
    g.rt->launch(optim_launch(many), "typex::optim::clip_grad_norm_'s power sums of its gradients (one launch)");
    g.host.resize(static_cast<std::size_t>(total));
    g.rt->copy_to_host(g.host.data(), sums, static_cast<std::size_t>(total) * sizeof(double));
  }
  sync.finish();  // (an asynchronous failure reported here)
  for (const sum_group& g : groups) {  // (each tensor's sums, from its group's copy)
    if (g.host.empty()) continue;
    for (std::size_t m = 0; m < g.members.size(); ++m) {
      const power_sum_request& r = requests[g.members[m]];
      std::copy_n(g.host.begin() + g.table[m].first_block, r.sums.size(), r.sums.begin());
    }
  }
}

}  // namespace typex::cuda::detail
