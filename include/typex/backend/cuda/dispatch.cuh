// typex/backend/cuda/dispatch.cuh — from a launch record (launch.hpp) to the kernel it names: the
// one switch, compiled by nvcc for the GPU (src/cuda includes it) and by the host compiler for the
// emulated device (the stream is ignored there). The geometry is the record's, as the lowering's
// helpers (chain_launch, ...) made it.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/kernels/attention.cuh>
#include <typex/backend/cuda/kernels/attention_backward.cuh>
#include <typex/backend/cuda/kernels/conv.cuh>
#include <typex/backend/cuda/kernels/copy.cuh>
#include <typex/backend/cuda/kernels/index.cuh>
#include <typex/backend/cuda/kernels/loss.cuh>
#include <typex/backend/cuda/kernels/map.cuh>
#include <typex/backend/cuda/kernels/norm.cuh>
#include <typex/backend/cuda/kernels/optim.cuh>
#include <typex/backend/cuda/kernels/pointwise.cuh>
#include <typex/backend/cuda/kernels/pool.cuh>
#include <typex/backend/cuda/kernels/reduce.cuh>
#include <typex/backend/cuda/kernels/select.cuh>
#include <typex/backend/cuda/launch.hpp>
#include <typex/core/error.hpp>

#include <cstdint>
#include <string>
#include <variant>

namespace typex::cuda {

namespace detail {
template <class P>
const P& launch_params(const kernel_launch& k) {
  if (const P* p = std::get_if<P>(&k.params)) return *p;
  typex::detail::raise_message<device_error>(std::string("typex::cuda::dispatch: a launch record of kind '") + kernel_name(k.kind) +
                                             "' holds the parameters of another kernel");
}
}  // namespace detail

// Launches k on `stream` (cudaStream_t natively; anything, ignored, on the emulator).
template <class Stream>
void dispatch(const kernel_launch& k, Stream stream) {
  switch (k.kind) {
    case kernel_kind::chain: {
      const chain_params& p = detail::launch_params<chain_params>(k);
      if (p.dtype == chain_dtype::f32) TYPEX_LAUNCH(kernels::chain_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p);
      else TYPEX_LAUNCH(kernels::chain_kernel<double>, k.grid, k.block, k.shared_bytes, stream)(p);
      return;
    }
    case kernel_kind::copy: {
      const copy_params& p = detail::launch_params<copy_params>(k);
      switch (p.itemsize) {
        case 1: TYPEX_LAUNCH(kernels::copy_kernel<std::uint8_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case 2: TYPEX_LAUNCH(kernels::copy_kernel<std::uint16_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case 4: TYPEX_LAUNCH(kernels::copy_kernel<std::uint32_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case 8: TYPEX_LAUNCH(kernels::copy_kernel<std::uint64_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        default: break;
      }
      typex::detail::raise_message<device_error>(std::string("typex::cuda::dispatch: a copy of ") + std::to_string(p.itemsize) +
                                                 "-byte items (1, 2, 4 or 8)");
    }
    case kernel_kind::reduce: {
      const reduce_params& p = detail::launch_params<reduce_params>(k);
      switch (p.type) {
        case reduce_type::f32: TYPEX_LAUNCH((kernels::row_reduce_kernel<float, float>), k.grid, k.block, k.shared_bytes, stream)(p); return;
        case reduce_type::f64: TYPEX_LAUNCH((kernels::row_reduce_kernel<double, double>), k.grid, k.block, k.shared_bytes, stream)(p); return;
        case reduce_type::i64:
          TYPEX_LAUNCH((kernels::row_reduce_kernel<std::int64_t, std::int64_t>), k.grid, k.block, k.shared_bytes, stream)(p);
          return;
        case reduce_type::i32:
          TYPEX_LAUNCH((kernels::row_reduce_kernel<std::int32_t, std::int64_t>), k.grid, k.block, k.shared_bytes, stream)(p);
          return;
        case reduce_type::b8: TYPEX_LAUNCH((kernels::row_reduce_kernel<bool, std::int64_t>), k.grid, k.block, k.shared_bytes, stream)(p); return;
      }
      typex::detail::raise_message<device_error>("typex::cuda::dispatch: a reduction of an unknown element type");
    }
    case kernel_kind::norm: {
      const norm_params& p = detail::launch_params<norm_params>(k);
      TYPEX_LAUNCH(kernels::layer_norm_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p);
      return;
    }
    case kernel_kind::conv: {
      const conv_params& p = detail::launch_params<conv_params>(k);
      if (p.f64) TYPEX_LAUNCH(kernels::conv2d_kernel<double>, k.grid, k.block, k.shared_bytes, stream)(p);
      else TYPEX_LAUNCH(kernels::conv2d_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p);
      return;
    }
    case kernel_kind::attention: {
      const attention_params& p = detail::launch_params<attention_params>(k);
      switch (p.pass) {
        case attention_pass::grad_query: TYPEX_LAUNCH((kernels::attention_grad_query_kernel<float>), k.grid, k.block, k.shared_bytes, stream)(p); return;
        case attention_pass::grad_key:
          TYPEX_LAUNCH((kernels::attention_grad_kv_kernel<float, kernels::attention_grad_key>), k.grid, k.block, k.shared_bytes, stream)(p);
          return;
        case attention_pass::grad_value:
          TYPEX_LAUNCH((kernels::attention_grad_kv_kernel<float, kernels::attention_grad_value>), k.grid, k.block, k.shared_bytes, stream)(p);
          return;
        case attention_pass::grad_key_value:
          TYPEX_LAUNCH((kernels::attention_grad_kv_kernel<float, kernels::attention_grad_key | kernels::attention_grad_value>), k.grid,
                       k.block, k.shared_bytes, stream)(p);
          return;
        case attention_pass::stats:
          if (attention_value_columns(p.ev) == 2) TYPEX_LAUNCH((kernels::attention_kernel<float, 2, true>), k.grid, k.block, k.shared_bytes, stream)(p);
          else TYPEX_LAUNCH((kernels::attention_kernel<float, 4, true>), k.grid, k.block, k.shared_bytes, stream)(p);
          return;
        case attention_pass::forward: break;
      }
      if (attention_value_columns(p.ev) == 2)
        TYPEX_LAUNCH((kernels::attention_kernel<float, 2>), k.grid, k.block, k.shared_bytes, stream)(p);
      else
        TYPEX_LAUNCH((kernels::attention_kernel<float, 4>), k.grid, k.block, k.shared_bytes, stream)(p);
      return;
    }
    case kernel_kind::optim: {
      const optim_params& p = detail::launch_params<optim_params>(k);
      if (p.f64) TYPEX_LAUNCH(kernels::optim_kernel<double>, k.grid, k.block, k.shared_bytes, stream)(p);
      else TYPEX_LAUNCH(kernels::optim_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p);
      return;
    }
    case kernel_kind::map: {
      const map_params& p = detail::launch_params<map_params>(k);
      switch (p.compute) {
        case map_compute::f32: TYPEX_LAUNCH(kernels::map_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case map_compute::f64: TYPEX_LAUNCH(kernels::map_kernel<double>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case map_compute::i64: TYPEX_LAUNCH(kernels::map_kernel<std::int64_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
      }
      break;
    }
    case kernel_kind::select: {
      const select_params& p = detail::launch_params<select_params>(k);
      switch (p.coords ? 8 : p.itemsize) {
        case 1: TYPEX_LAUNCH(kernels::select_kernel<std::uint8_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case 2: TYPEX_LAUNCH(kernels::select_kernel<std::uint16_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case 4: TYPEX_LAUNCH(kernels::select_kernel<std::uint32_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        default: TYPEX_LAUNCH(kernels::select_kernel<std::uint64_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
      }
    }
    case kernel_kind::index: {
      const index_params& p = detail::launch_params<index_params>(k);
      if (p.kind == index_kind::count) {
        TYPEX_LAUNCH(kernels::index_kernel<double>, k.grid, k.block, k.shared_bytes, stream)(p);
        return;
      }
      if (p.kind == index_kind::add) {
        if (p.itemsize == 4) TYPEX_LAUNCH(kernels::index_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p);
        else TYPEX_LAUNCH(kernels::index_kernel<double>, k.grid, k.block, k.shared_bytes, stream)(p);
        return;
      }
      switch (p.itemsize) {
        case 1: TYPEX_LAUNCH(kernels::index_kernel<std::uint8_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case 2: TYPEX_LAUNCH(kernels::index_kernel<std::uint16_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        case 4: TYPEX_LAUNCH(kernels::index_kernel<std::uint32_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
        default: TYPEX_LAUNCH(kernels::index_kernel<std::uint64_t>, k.grid, k.block, k.shared_bytes, stream)(p); return;
      }
    }
    case kernel_kind::loss: {
      const loss_params& p = detail::launch_params<loss_params>(k);
      TYPEX_LAUNCH(kernels::loss_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p);
      return;
    }
    case kernel_kind::pool: {
      const pool_params& p = detail::launch_params<pool_params>(k);
      if (p.f64) TYPEX_LAUNCH(kernels::pool2d_kernel<double>, k.grid, k.block, k.shared_bytes, stream)(p);
      else TYPEX_LAUNCH(kernels::pool2d_kernel<float>, k.grid, k.block, k.shared_bytes, stream)(p);
      return;
    }
  }
  typex::detail::raise_message<device_error>("typex::cuda::dispatch: an unknown kernel kind");
}

}  // namespace typex::cuda
