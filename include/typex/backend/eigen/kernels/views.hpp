// typex/backend/eigen/kernels/views.hpp — the Eigen backend: views and copies: reshape, view, flatten, unsqueeze, permute, transpose, slice.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// views and copies

inline any_tensor with_extents(const any_tensor& x, std::vector<index_t> e, std::string_view op) {
  index_t n = 1;
  for (index_t v : e) n *= v;
  if (n != x.numel()) {
    raise<shape_error>([&](auto& o) {
      o.put(op); o.put(": cannot view "); o.put(x.to_string()); o.put(" with "); o.put_int(n); o.put(" elements");
    });
  }
  return any_tensor(x.scalar_type(), std::move(e), x.get_storage());  // contiguous: no copy
}

inline any_tensor reshape(const kernel_args& a) {  // (reshape's `shape`, view's `size`: argument 1 of both)
  const any_tensor& x = a.tensor("self");
  return with_extents(x, a.sizes(1, x.numel()), a.target());
}

inline any_tensor flatten(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  if (x.rank() == 0) return with_extents(x, {1}, a.target());
  const std::size_t s = wrap_dim(a.target(), a.integer_or_default("start_dim"), x.rank());
  const std::size_t e = wrap_dim(a.target(), a.integer_or_default("end_dim"), x.rank());
  if (s > e) a.fail_text("start_dim", "comes after the end dim");
  std::vector<index_t> out(x.extents().begin(), x.extents().begin() + static_cast<std::ptrdiff_t>(s));
  index_t p = 1;
  for (std::size_t d = s; d <= e; ++d) p *= x.extents()[d];
  out.push_back(p);
  out.insert(out.end(), x.extents().begin() + static_cast<std::ptrdiff_t>(e) + 1, x.extents().end());
  return with_extents(x, std::move(out), a.target());
}

inline any_tensor unsqueeze(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  std::vector<index_t> e = x.extents();
  const std::size_t d = wrap_dim(a.target(), a.integer("dim"), x.rank() + 1);
  e.insert(e.begin() + static_cast<std::ptrdiff_t>(d), 1);
  return with_extents(x, std::move(e), a.target());
}

// dst (contiguous, extents oe) = src read with element strides `is` (a permuted or strided view).
// idx: scratch of oe.size() indices (so that a planned step allocates nothing).
template <class T>
void strided_copy(const T* src, T* dst, const std::vector<index_t>& oe, const std::vector<index_t>& is, std::span<index_t> idx) {
  const std::size_t r = oe.size();
  index_t n = 1;
  for (index_t e : oe) n *= e;
  if (n == 0) return;
  const index_t inner = r ? oe[r - 1] : 1, inner_stride = r ? is[r - 1] : 1;
  std::fill(idx.begin(), idx.end(), index_t{0});
  index_t off = 0;
  for (index_t i = 0; i < n; i += inner) {
    T* d = dst + i;
    if (inner_stride == 1) std::copy(src + off, src + off + inner, d);
    else for (index_t j = 0; j < inner; ++j) d[j] = src[off + j * inner_stride];
    for (std::size_t k = r - (r ? 1 : 0); k-- > 0;) {  // the next row of the outer dims
      off += is[k];
      if (++idx[k] < oe[k]) break;
      off -= is[k] * oe[k];
      idx[k] = 0;
    }
  }
}

// A contiguous copy of x with its dims in order `perm`; into the call's destination when `call` is
// given (the kernel's own result: not a temporary of another kernel).
inline any_tensor permuted(const any_tensor& x, const std::vector<std::size_t>& perm, std::string_view op,
                           const kernel_args* call = nullptr) {
  const std::size_t r = x.rank();
  const std::vector<index_t> in_strides = contiguous_strides(x.extents());
  std::vector<index_t> oe(r), os(r);
  for (std::size_t d = 0; d < r; ++d) {
    oe[d] = x.extents()[perm[d]];
    os[d] = in_strides[perm[d]];
  }
  any_tensor out = call != nullptr ? call->result(x.scalar_type(), oe, false) : any_tensor(x.scalar_type(), oe);
  dispatch<false>(x.scalar_type(), op, [&](auto tag) {
    using T = decltype(tag);
    std::vector<index_t> idx(r);
    strided_copy(x.data<T>(), out.data<T>(), oe, os, idx);
  });
  return out;
}

inline any_tensor permute(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const auto p = a.ints("dims");
  if (p.size() != x.rank()) a.fail_text("dims", "is not a permutation of the input's dims");
  std::vector<std::size_t> perm;
  std::vector<bool> seen(x.rank(), false);
  for (auto v : p) {
    const std::size_t d = wrap_dim(a.target(), v, x.rank());
    if (seen[d]) a.fail_text("dims", "is not a permutation of the input's dims");
    seen[d] = true;
    perm.push_back(d);
  }
  return permuted(x, perm, a.target(), &a);
}

inline any_tensor transpose(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  std::vector<std::size_t> perm(x.rank());
  for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = d;
  if (x.rank() == 0) return x;
  std::swap(perm[wrap_dim(a.target(), a.integer("dim0"), x.rank())], perm[wrap_dim(a.target(), a.integer("dim1"), x.rank())]);
  return permuted(x, perm, a.target(), &a);
}

// (input, dim, start, end, step): Python's bounds, clamped; a copy.
// A slice's rows of x (dim, start, end, step: Python's bounds, clamped; None is the whole dim), as
// x viewed [outer, n, inner]: row j of the slice is x's row start + j * step.
struct slice_rows {
  std::size_t dim;
  index_t n, start, step, len, outer = 1;
  std::size_t row;  // bytes of one row (inner elements)
  std::vector<index_t> extents;  // the slice's
};
inline slice_rows slice_rows_of(const kernel_args& a, const any_tensor& x) {
  if (x.rank() == 0) rank_error(a.target(), "input", x, "at least 1-d");
  slice_rows r;
  r.dim = wrap_dim(a.target(), a.integer_or_default("dim"), x.rank());
  r.n = x.extents()[r.dim];
  r.step = a.integer_or_default("step");
  if (r.step < 1) a.fail_text("step", "should be at least 1");
  auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + r.n : v, 0, r.n); };
  r.start = clamp(a.has("start") ? a.integer("start") : 0);
  const index_t end = std::max(r.start, clamp(a.has("end") ? a.integer("end") : r.n));
  r.len = (end - r.start + r.step - 1) / r.step;
  index_t inner = 1;
  for (std::size_t k = 0; k < r.dim; ++k) r.outer *= x.extents()[k];
  for (std::size_t k = r.dim + 1; k < x.rank(); ++k) inner *= x.extents()[k];
  r.row = static_cast<std::size_t>(inner) * itemsize(x.scalar_type());
  r.extents = x.extents();
  r.extents[r.dim] = r.len;
  return r;
}

inline any_tensor slice(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const slice_rows r = slice_rows_of(a, x);
  any_tensor out = a.result(x.scalar_type(), r.extents);
  for (index_t o = 0; o < r.outer; ++o)
    for (index_t j = 0; j < r.len; ++j)
      std::memcpy(out.raw_data() + static_cast<std::size_t>(o * r.len + j) * r.row,
                  x.raw_data() + static_cast<std::size_t>(o * r.n + r.start + j * r.step) * r.row, r.row);
  return out;
}

// The source of a scatter (src) has the region's shape and the destination's dtype.
inline void check_scatter_source(const kernel_args& a, const any_tensor& x, const any_tensor& src, const std::vector<index_t>& region) {
  if (src.scalar_type() != x.scalar_type()) {
    raise<dtype_error>([&](auto& w) {
      w.put(a.target()); w.put(": the source is "); w.put(name(src.scalar_type())); w.put(" but the destination is ");
      w.put(name(x.scalar_type()));
    });
  }
  if (src.extents() != region) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": the source "); w.put(src.to_string()); w.put(" does not have the shape of the region it is written to, [");
      for (std::size_t i = 0; i < region.size(); ++i) {
        if (i) w.put(", ");
        w.put_int(region[i]);
      }
      w.put("]");
    });
  }
}

// (self, src, dim, start, end, step): self with src written into the slice
inline any_tensor slice_scatter(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& src = a.tensor("src");
  const slice_rows r = slice_rows_of(a, x);
  check_scatter_source(a, x, src, r.extents);
  any_tensor out = x.clone();
  for (index_t o = 0; o < r.outer; ++o)
    for (index_t j = 0; j < r.len; ++j)
      std::memcpy(out.raw_data() + static_cast<std::size_t>(o * r.n + r.start + j * r.step) * r.row,
                  src.raw_data() + static_cast<std::size_t>(o * r.len + j) * r.row, r.row);
  return out;
}

// ---------------------------------------------------------------------------------------------

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(aten::reshape, detail::reshape);
TYPEX_EIGEN_KERNEL(aten::view, detail::reshape);
TYPEX_EIGEN_KERNEL(aten::flatten_using_ints, detail::flatten);
TYPEX_EIGEN_KERNEL(aten::unsqueeze, detail::unsqueeze);
TYPEX_EIGEN_KERNEL(aten::permute, detail::permute);
TYPEX_EIGEN_KERNEL(aten::transpose_int, detail::transpose);
TYPEX_EIGEN_KERNEL(aten::slice_Tensor, detail::slice);
TYPEX_EIGEN_KERNEL(aten::slice_scatter, detail::slice_scatter);
}  // namespace typex::eigen
