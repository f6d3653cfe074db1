// typex/tensor/host_tensor.hpp — owning host tensors: typed (host_tensor<DT, S>) and type-erased
// (any_tensor).
//
// Both are row-major, contiguous, zero-initialized on creation, and share their storage when
// copied (as torch tensors do; clone() copies the data). Extents are validated against the type
// wherever they enter: constructing a host_tensor from extents, or binding an any_tensor to a typed
// tensor (`host_tensor<f32, S>::bind(t, "input 'x'")`) checks rank, static extents and symbolic
// ranges and throws a typex::shape_error / constraint_violation / dtype_error naming the input.
#pragma once

#include <typex/core/dtype.hpp>
#include <typex/core/shape.hpp>
#include <typex/core/symbol_table.hpp>
#include <typex/tensor/storage.hpp>
#include <typex/tensor/tensor_spec.hpp>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace typex {


// A tensor whose dtype and extents are run-time data (the type-erased program's inputs and outputs).
class any_tensor {
 public:
  static constexpr bool is_pytree_leaf = true;

  // An f32 scalar holding 0 (every any_tensor owns storage for its elements).
  any_tensor() : any_tensor(dtype::f32, {}) {}
  any_tensor(dtype dt, std::vector<index_t> extents)
      : dtype_(dt), extents_(std::move(extents)),
        storage_(detail::checked_bytes(extents_, dt, "tensor")) {}
  any_tensor(dtype dt, std::vector<index_t> extents, storage s) : dtype_(dt), extents_(std::move(extents)), storage_(std::move(s)) {
    const std::size_t need = detail::checked_bytes(extents_, dt, "tensor");
    if (storage_.bytes() < need) detail::storage_too_small("typex::any_tensor", storage_.bytes(), need, storage_.data());
    // (a view at an offset that is not a multiple of the item size: kernels would read misaligned
    // elements, which is undefined behaviour; rejected here rather than copied behind the user's back)
    if (reinterpret_cast<std::uintptr_t>(storage_.data()) % itemsize(dt) != 0) {
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::any_tensor: the storage's address is not aligned to "); w.put(name(dt)); w.put("'s ");
        w.put_int(static_cast<long long>(itemsize(dt))); w.put(" bytes (a storage view at an offset that is not a multiple of the item size)");
      });
    }
  }

  // Throws when this tensor has fewer bytes than its extents need: a moved-from tensor (state_error)
  // or one made over too small a storage. `what` names it ("input 'x'").
  void check_storage(std::string_view what) const {
    if (storage_.bytes() < nbytes() || (storage_.data() == nullptr && nbytes() != 0)) {
      std::string who = "typex: ";
      who += what;
      detail::storage_too_small(who, storage_.bytes(), nbytes(), storage_.data());
    }
  }

  dtype scalar_type() const noexcept { return dtype_; }
  const std::vector<index_t>& extents() const noexcept { return extents_; }
  std::size_t rank() const noexcept { return extents_.size(); }
  // (extents are checked where a tensor is made: this product fits, core/sizes.hpp)
  index_t numel() const noexcept { return detail::unchecked_numel(extents_); }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(numel()) * itemsize(dtype_); }
  const storage& get_storage() const noexcept { return storage_; }
  std::byte* raw_data() const noexcept { return storage_.data(); }
  // Where the elements live (tensor/device.hpp): the host, unless a backend made this tensor.
  typex::device device() const noexcept { return storage_.device(); }

  template <class T>
  T* data() const {
    if (dtype_of_v<T> != dtype_) {
      detail::raise<dtype_error>([&](auto& w) {
        w.put("typex::any_tensor::data<T>: the tensor holds "); w.put(name(dtype_)); w.put(", not ");
        w.put(name(dtype_of_v<T>));
      });
    }
    return reinterpret_cast<T*>(storage_.data());
  }

  std::string to_string() const {
    std::string s(name(dtype_));
    s += '[';
    for (std::size_t i = 0; i < extents_.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(extents_[i]);
    }
    s += ']';
    return s;
  }

  any_tensor clone() const { return any_tensor(dtype_, extents_, storage_.clone()); }

  // This tensor becomes a view of `other` that owns nothing (its dtype, extents and bytes;
  // storage::borrow): other must outlive the use. No allocation once this tensor's extents have the
  // capacity (a runner's slots, refilled every call).
  void borrow(const any_tensor& other) {
    dtype_ = other.dtype_;
    extents_ = other.extents_;
    storage_ = storage::borrow(other.storage_);
  }

  // This tensor (its dtype and extents kept) now reads other's storage: a reshaped view of it,
  // made without allocating. other's storage must hold at least as many bytes as this tensor needs.
  void view_storage_of(const any_tensor& other) {
    const std::size_t need = nbytes();
    if (other.storage_.bytes() < need) detail::storage_too_small("typex::any_tensor::view_storage_of", other.storage_.bytes(), need, other.storage_.data());
    storage_ = other.storage_;
  }

 private:
  dtype dtype_ = dtype::f32;
  std::vector<index_t> extents_;
  storage storage_;
};

template <dtype_tag_type DT, shape_type S>
class host_tensor {
 public:
  using dtype_type = DT;
  using shape_type = S;
  using value_type = typename DT::type;
  static constexpr dtype scalar_type = DT::value;
  static constexpr std::size_t rank = S::rank;
  static constexpr bool is_pytree_leaf = true;

  // A zero-filled tensor of the type's default extents (symbolic dims at their declared minimum).
  host_tensor() : host_tensor(S{}) {}
  explicit host_tensor(const S& s)
      : shape_(s), storage_(detail::checked_bytes(s.extents(), scalar_type, "tensor")) {}
  // Zero-filled, with extents checked against S.
  explicit host_tensor(std::initializer_list<index_t> extents, std::string_view what = "tensor")
      : host_tensor(make_shape<S>(extents, what)) {}
  explicit host_tensor(std::span<const index_t> extents, std::string_view what = "tensor")
      : host_tensor(make_shape<S>(extents, what)) {}

  // A tensor of shape s holding a copy of `values` (row-major; the count must be s.numel()).
  static host_tensor from_values(const S& s, std::span<const value_type> values) {
    host_tensor t(s);
    if (static_cast<index_t>(values.size()) != s.numel()) {
      detail::raise<shape_error>([&](auto& w) {
        w.put("typex::host_tensor::from_values: "); w.put_int(static_cast<long long>(values.size()));
        w.put(" values given for shape "); s.write_values(w); w.put(", which holds "); w.put_int(s.numel());
      });
    }
    value_type* out = t.data();
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return t;
  }
  static host_tensor from_values(const S& s, std::initializer_list<value_type> values) {
    return from_values(s, std::span<const value_type>(values.begin(), values.size()));
  }

  // Views an any_tensor as this type (sharing storage), checking dtype, rank and extents.
  static host_tensor bind(const any_tensor& t, std::string_view what = "tensor") {
    if (t.scalar_type() != scalar_type) {
      detail::raise<dtype_error>([&](auto& w) {
        w.put("typex: "); w.put(what); w.put(" has dtype "); w.put(name(t.scalar_type())); w.put(", but its type ");
        write_type(w); w.put(" wants "); w.put(name(scalar_type));
      });
    }
    t.check_storage(what);
    host_tensor out(make_shape<S>(t.extents(), what), t.get_storage());
    return out;
  }
  // As bind(t, what), also binding its symbols in `symbols` (inputs sharing a symbol must agree).
  static host_tensor bind(const any_tensor& t, symbol_table& symbols, std::string_view what) {
    host_tensor out = bind(t, what);
    bind_symbols(out.shape(), symbols, what);
    return out;
  }

  any_tensor erase() const {
    const auto e = shape_.extents();
    return any_tensor(scalar_type, std::vector<index_t>(e.begin(), e.end()), storage_);
  }

  const S& shape() const noexcept { return shape_; }
  auto extents() const noexcept { return shape_.extents(); }
  index_t numel() const noexcept { return shape_.numel(); }
  tensor_spec<DT, S> spec() const noexcept { return tensor_spec<DT, S>(shape_); }
  value_type* data() const noexcept { return reinterpret_cast<value_type*>(storage_.data()); }
  const storage& get_storage() const noexcept { return storage_; }

  // Unchecked element access (row-major), as Eigen's operator().
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  value_type& operator()(I... idx) const noexcept {
    return data()[offset_of({static_cast<index_t>(idx)...})];
  }
  // Checked element access: an index out of range throws typex::argument_error.
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  value_type& at(I... idx) const {
    const std::array<index_t, rank> ix{static_cast<index_t>(idx)...};
    const auto e = shape_.extents();
    for (std::size_t d = 0; d < rank; ++d) {
      if (ix[d] < 0 || ix[d] >= e[d]) {
        detail::raise<argument_error>([&](auto& w) {
          w.put("typex::host_tensor::at: index "); w.put_int(ix[d]); w.put(" is out of range for dim ");
          w.put_int(static_cast<long long>(d)); w.put(" of shape "); shape_.write_values(w);
        });
      }
    }
    return data()[offset_of(ix)];
  }

  void fill(value_type v) const {
    if (storage_.bytes() < static_cast<std::size_t>(numel()) * sizeof(value_type)) detail::storage_too_small("typex::host_tensor::fill", storage_.bytes(), static_cast<std::size_t>(numel()) * sizeof(value_type), storage_.data());
    value_type* p = data();
    for (index_t i = 0, n = numel(); i < n; ++i) p[i] = v;
  }
  host_tensor clone() const { return host_tensor(shape_, storage_.clone()); }

  template <class W>
  static constexpr void write_type(W& w) {
    w.put("tensor<"); tensor_spec<DT, S>::write_type(w); w.put('>');
  }
  static std::string type_string() { return tensor_spec<DT, S>::type_string(); }
  std::string to_string() const { return spec().to_string(); }

 private:
  host_tensor(const S& s, storage st) : shape_(s), storage_(std::move(st)) {}

  index_t offset_of(const std::array<index_t, rank>& ix) const noexcept {
    const auto e = shape_.extents();
    index_t off = 0;
    for (std::size_t d = 0; d < rank; ++d) off = off * e[d] + ix[d];
    return off;
  }

  S shape_;
  storage storage_;
};

namespace detail {
template <class T> struct is_host_tensor : std::false_type {};
template <class DT, class S> struct is_host_tensor<host_tensor<DT, S>> : std::true_type {};
}  // namespace detail

template <class T>
concept host_tensor_type = detail::is_host_tensor<T>::value;

// Shorthand: tensor<f32, batch, fix<784>> is host_tensor<f32, shape<batch, fix<784>>>.
template <dtype_tag_type DT, class... D>
using tensor = host_tensor<DT, shape<D...>>;

}  // namespace typex
