// typex/trace/module_tensor.hpp — the tensors a module owns: parameters, buffers, constants.
//
//   typex::parameter<f32, fix<512>, fix<784>> weight;        // trained; lifted as p_<fqn>
//   typex::buffer<f32, fix<512>> running_mean;               // state; in the state dict; b_<fqn>
//   typex::buffer<f32, fix<512>, false> scratch;  (see nonpersistent_buffer) not in the state dict
//   typex::constant<f32, fix<1>> scale;                      // fixed data; lifted as c_<fqn>
// Each is a host_tensor with its role in its type, so the same member works eagerly (it is a
// tensor) and while tracing (the tracer lifts it to a placeholder of the right kind).
#pragma once

#include <typex/tensor/host_tensor.hpp>

namespace typex {

enum class tensor_role : unsigned char { parameter, buffer, constant };

template <dtype_tag_type DT, shape_type S, tensor_role Role, bool Persistent = true>
class module_tensor : public host_tensor<DT, S> {
 public:
  using base = host_tensor<DT, S>;
  static constexpr tensor_role role = Role;
  static constexpr bool persistent = Persistent;
  static_assert(Persistent || Role == tensor_role::buffer, "typex: only buffers can be non-persistent");

  using base::base;
  module_tensor() = default;
  // Wraps a tensor (sharing its storage): tied weights are two module tensors over one storage.
  explicit module_tensor(const base& t) : base(t) {}

  const base& tensor() const noexcept { return *this; }
};

template <dtype_tag_type DT, class... D>
using parameter = module_tensor<DT, shape<D...>, tensor_role::parameter>;
template <dtype_tag_type DT, class... D>
using buffer = module_tensor<DT, shape<D...>, tensor_role::buffer, true>;
template <dtype_tag_type DT, class... D>
using nonpersistent_buffer = module_tensor<DT, shape<D...>, tensor_role::buffer, false>;
template <dtype_tag_type DT, class... D>
using constant = module_tensor<DT, shape<D...>, tensor_role::constant>;

namespace detail {
template <class T> struct is_module_tensor : std::false_type {};
template <class DT, class S, tensor_role R, bool P> struct is_module_tensor<module_tensor<DT, S, R, P>> : std::true_type {};
}  // namespace detail

template <class T>
concept module_tensor_type = detail::is_module_tensor<T>::value;

}  // namespace typex
