// typex/backend/cuda/tensor.hpp — typed tensors on a CUDA device: device_tensor<DT, S>.
//
//   auto x = typex::cuda::to_device(host_x, gpu);   // device_tensor<f32, shape<batch, fix<784>>>
//   auto y = typex::relu(x + x);                      // runs on x's device (eager, one op at a time)
//   host_tensor<f32, ...> back = typex::cuda::to_host(y);
//
// A device_tensor has the same type parameters, shape checks and rules as host_tensor: an op on it
// is checked at compile time exactly as on host tensors, and the call's mode is device_mode
// (ops/apply.hpp), which the CUDA backend runs on the tensors' device (eager.hpp). What it does not
// have is element access: its bytes are the device's (to_host copies them). Host and device tensors
// coexist in one program; an op given both is a device_error naming both devices.
#pragma once

#include <typex/backend/cuda/memory.hpp>
#include <typex/core/shape.hpp>
#include <typex/ops/apply.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/tensor/tensor_spec.hpp>

#include <memory>
#include <string_view>
#include <vector>

namespace typex::cuda {

template <dtype_tag_type DT, shape_type S>
class device_tensor {
 public:
  using dtype_type = DT;
  using shape_type = S;
  using value_type = typename DT::type;
  static constexpr dtype scalar_type = DT::value;
  static constexpr std::size_t rank = S::rank;
  static constexpr bool is_pytree_leaf = true;

  // Views a device any_tensor as this type (sharing its memory), checking device, dtype, rank and
  // extents as host_tensor::bind does.
  static device_tensor bind(const any_tensor& t, std::string_view what = "tensor") {
    if (t.device().is_host()) {
      typex::detail::raise<device_error>([&](auto& w) {
        w.put("typex::cuda::device_tensor: "); w.put(what); w.put(" is on the host (copy it with typex::cuda::to_device)");
      });
    }
    if (t.scalar_type() != scalar_type) {
      typex::detail::raise<dtype_error>([&](auto& w) {
        w.put("typex: "); w.put(what); w.put(" has dtype "); w.put(name(t.scalar_type())); w.put(", but its type wants ");
        w.put(name(scalar_type));
      });
    }
    t.check_storage(what);
    device_tensor out;
    out.shape_ = make_shape<S>(t.extents(), what);
    out.t_ = t;
    return out;
  }

  any_tensor erase() const { return t_; }
  const S& shape() const noexcept { return shape_; }
  auto extents() const noexcept { return shape_.extents(); }
  index_t numel() const noexcept { return shape_.numel(); }
  tensor_spec<DT, S> spec() const noexcept { return tensor_spec<DT, S>(shape_); }
  typex::device device() const noexcept { return t_.device(); }
  const storage& get_storage() const noexcept { return t_.get_storage(); }

 private:
  device_tensor() : t_(dtype::f32, {}) {}
  any_tensor t_;
  S shape_;
};

// host_tensor<DT, S> (or a module's tensor) to `rt`'s device, the type kept.
template <dtype_tag_type DT, shape_type S>
device_tensor<DT, S> to_device(const host_tensor<DT, S>& t, const std::shared_ptr<device_runtime>& rt) {
  return device_tensor<DT, S>::bind(to_device(t.erase(), rt), "typex::cuda::to_device's result");
}

// And back (waits for the device's work).
template <dtype_tag_type DT, shape_type S>
host_tensor<DT, S> to_host(const device_tensor<DT, S>& t) {
  return host_tensor<DT, S>::bind(to_host(t.erase()), "typex::cuda::to_host's result");
}

}  // namespace typex::cuda

namespace typex {
template <dtype_tag_type DT, shape_type S>
struct is_device_argument<cuda::device_tensor<DT, S>> : std::true_type {};
}  // namespace typex
