// typex/backend/eigen/kernels/selection.hpp — the Eigen backend: logical ops, casts, where, masked_fill, nonzero, masked_select, index_select, gather, tril / triu, expand, select, squeeze, cat, stack.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// logical ops, casts, selection (where, masked_fill, index_select, gather, tril / triu), expand,
// select, squeeze, cat, stack

inline any_tensor logical_not(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  any_tensor out = a.result(dtype::b8, x.extents());
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    bool* po = out.data<bool>();
    for (index_t i = 0, n = x.numel(); i < n; ++i) po[i] = convert<compute_t<T>>(px[i]) == compute_t<T>(0);
  });
  return out;
}

// (input, dtype): always a new tensor, as x.to(dtype, copy=True).
inline any_tensor to_copy(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const dtype d = a.scalar_type("dtype");
  return x.scalar_type() == d ? x.clone() : to_dtype(x, d);
}

// Calls f(out_index, offsets) for every element of the output extents `oe`, with each operand's
// element offset (operand k read with element strides strides[k]; 0 where it broadcasts).
template <std::size_t N, class F>
void for_each_strided(const std::vector<index_t>& oe, const std::array<std::vector<index_t>, N>& strides, F&& f) {
  index_t n = 1;
  for (index_t e : oe) n *= e;
  const std::size_t r = oe.size();
  std::vector<index_t> idx(r, 0);
  std::array<index_t, N> off{};
  for (index_t i = 0; i < n; ++i) {
    f(i, off);
    for (std::size_t d = r; d-- > 0;) {
      ++idx[d];
      for (std::size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < oe[d]) break;
      for (std::size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * oe[d];
      idx[d] = 0;
    }
  }
}

inline void require_bool(std::string_view op, std::string_view what, const any_tensor& t) {
  if (t.scalar_type() != dtype::b8) rank_error(op, what, t, "a bool tensor");
}

// (condition, self, other): the three broadcast; self and other promote.
inline any_tensor where(const kernel_args& a) {
  const any_tensor& c = a.tensor("condition");
  require_bool(a.target(), "condition", c);
  const dtype d = promote_types(a.tensor("self").scalar_type(), a.tensor("other").scalar_type());
  const any_tensor X = to_dtype(a.tensor("self"), d), Y = to_dtype(a.tensor("other"), d);
  const auto oe = broadcast_extents(a.target(), c.extents(), broadcast_extents(a.target(), X.extents(), Y.extents()));
  any_tensor out = a.result(d, oe);
  const std::array<std::vector<index_t>, 3> strides{broadcast_strides(c.extents(), oe), broadcast_strides(X.extents(), oe),
                                                    broadcast_strides(Y.extents(), oe)};
  dispatch<false>(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    const bool* pc = c.data<bool>();
    const T *px = X.data<T>(), *py = Y.data<T>();
    T* po = out.data<T>();
    for_each_strided(oe, strides, [&](index_t i, const std::array<index_t, 3>& o) { po[i] = pc[o[0]] ? px[o[1]] : py[o[2]]; });
  });
  return out;
}

// The mask must broadcast to x's extents exactly (not widen x).
inline void require_expands_to(std::string_view op, std::string_view what, const any_tensor& m, const std::vector<index_t>& to) {
  bool ok = m.rank() <= to.size();
  for (std::size_t k = 0; ok && k < m.rank(); ++k) {
    const index_t e = m.extents()[m.rank() - 1 - k];
    ok = e == 1 || e == to[to.size() - 1 - k];
  }
  if (!ok) {
    raise<shape_error>([&](auto& w) {
      w.put(op); w.put(": the "); w.put(what); w.put(' '); w.put(m.to_string()); w.put(" does not broadcast to ");
      w.put(tensor_shape(m.scalar_type(), to).extents_string());
    });
  }
}

// (self, mask, value)
inline any_tensor masked_fill(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& m = a.tensor("mask");
  require_bool(a.target(), "mask", m);
  require_expands_to(a.target(), "mask", m, x.extents());
  const double value = a.real("value");
  // (a mask of the input's trailing shape — the same shape, or one broadcast over leading dims as
  // an attention mask is — one pass per block, vectorizable: the derivatives of relu and of masked
  // scores run here over whole activations)
  const index_t inner = m.numel();
  bool trailing = m.rank() <= x.rank();
  for (std::size_t k = 0; trailing && k < m.rank(); ++k)
    trailing = m.extents()[m.rank() - 1 - k] == x.extents()[x.rank() - 1 - k];
  if (trailing && inner > 0) {
    any_tensor out = a.result(x.scalar_type(), x.extents());
    dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
      using T = decltype(tag);
      const T v = convert<T>(value);
      const bool* pm = m.data<bool>();
      const T* px = x.data<T>();
      T* po = out.data<T>();
      for (index_t b = 0, blocks = x.numel() / inner; b < blocks; ++b)
        for (index_t i = 0; i < inner; ++i) po[b * inner + i] = pm[i] ? v : px[b * inner + i];
    });
    return out;
  }
  any_tensor out = x.clone();
  const std::array<std::vector<index_t>, 1> strides{broadcast_strides(m.extents(), x.extents())};
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T v = convert<T>(value);
    const bool* pm = m.data<bool>();
    T* po = out.data<T>();
    for_each_strided(x.extents(), strides, [&](index_t i, const std::array<index_t, 1>& o) {
      if (pm[o[0]]) po[i] = v;
    });
  });
  return out;
}

// (self): the indices of the nonzero elements, [n, rank] in row-major order (NaN is nonzero, as
// in torch; -0.0 is zero). Its size depends on the data.
inline any_tensor nonzero(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const std::size_t r = x.rank();
  std::vector<index_t> hits;
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (index_t i = 0; i < x.numel(); ++i)
      if constexpr (std::is_arithmetic_v<T>) {
        if (p[i] != T(0)) hits.push_back(i);
      } else if (static_cast<float>(p[i]) != 0.0f) {  // (half, bfloat16)
        hits.push_back(i);
      }
  });
  any_tensor out = a.result(dtype::i64, {static_cast<index_t>(hits.size()), static_cast<index_t>(r)});
  std::int64_t* po = out.data<std::int64_t>();
  for (std::size_t k = 0; k < hits.size(); ++k) {
    index_t flat = hits[k];
    for (std::size_t d = r; d-- > 0;) {
      po[k * r + d] = flat % x.extents()[d];
      flat /= x.extents()[d];
    }
  }
  return out;
}

// (self, mask): the elements of self where mask is true, 1-d, in row-major order; the mask
// broadcasts to self's shape. Its size depends on the data.
inline any_tensor masked_select(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& m = a.tensor("mask");
  require_bool(a.target(), "mask", m);
  require_expands_to(a.target(), "mask", m, x.extents());
  const std::array<std::vector<index_t>, 1> strides{broadcast_strides(m.extents(), x.extents())};
  const bool* pm = m.data<bool>();
  index_t n = 0;
  for_each_strided(x.extents(), strides, [&](index_t, const std::array<index_t, 1>& o) { n += pm[o[0]] ? 1 : 0; });
  any_tensor out = a.result(x.scalar_type(), {n});
  const std::size_t size = itemsize(x.scalar_type());
  index_t k = 0;
  for_each_strided(x.extents(), strides, [&](index_t i, const std::array<index_t, 1>& o) {
    if (pm[o[0]]) std::memcpy(out.raw_data() + static_cast<std::size_t>(k++) * size, x.raw_data() + static_cast<std::size_t>(i) * size, size);
  });
  return out;
}

// Extents before, at and after dim d.
struct around_dim {
  index_t outer = 1, n = 1, inner = 1;
  around_dim(const std::vector<index_t>& e, std::size_t d) : n(e[d]) {
    for (std::size_t k = 0; k < d; ++k) outer *= e[k];
    for (std::size_t k = d + 1; k < e.size(); ++k) inner *= e[k];
  }
};

[[noreturn]] inline void index_out_of_range(std::string_view op, std::int64_t index, std::size_t dim, index_t extent) {
  raise<argument_error>([&](auto& w) {
    w.put(op); w.put(": index "); w.put_int(index); w.put(" is out of range for dim "); w.put_int(static_cast<long long>(dim));
    w.put(" of extent "); w.put_int(extent);
  });
}

// Index i of an extent-n dim, negative from the end; out of [-n, n) is an error.
inline index_t wrap_index(std::string_view op, std::int64_t i, std::size_t dim, index_t n) {
  if (i < -n || i >= n) index_out_of_range(op, i, dim, n);
  return i < 0 ? i + n : i;
}

// The row a select reads or writes (dim, index: negative from the end), as x viewed
// [outer, n, inner]: row o of the result is x's row o * n + at.
struct select_rows {
  around_dim g;
  index_t at;
  std::size_t row;               // bytes of one row (inner elements)
  std::vector<index_t> extents;  // the selected slice's (x's without dim)
};
inline select_rows select_rows_of(const kernel_args& a, const any_tensor& x) {
  if (x.rank() == 0) rank_error(a.target(), "input", x, "at least 1-d");
  const std::size_t d = wrap_dim(a.target(), a.integer("dim"), x.rank());
  const around_dim g(x.extents(), d);
  std::vector<index_t> e = x.extents();
  e.erase(e.begin() + static_cast<std::ptrdiff_t>(d));
  return {g, wrap_index(a.target(), a.integer("index"), d, g.n), static_cast<std::size_t>(g.inner) * itemsize(x.scalar_type()), std::move(e)};
}

// (self, dim, index)
inline any_tensor select(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const select_rows r = select_rows_of(a, x);
  any_tensor out = a.result(x.scalar_type(), r.extents);
  for (index_t o = 0; o < r.g.outer; ++o)
    std::memcpy(out.raw_data() + static_cast<std::size_t>(o) * r.row, x.raw_data() + static_cast<std::size_t>(o * r.g.n + r.at) * r.row, r.row);
  return out;
}

// (self, src, dim, index): self with src written at index along dim
inline any_tensor select_scatter(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& src = a.tensor("src");
  const select_rows r = select_rows_of(a, x);
  check_scatter_source(a, x, src, r.extents);
  any_tensor out = x.clone();
  for (index_t o = 0; o < r.g.outer; ++o)
    std::memcpy(out.raw_data() + static_cast<std::size_t>(o * r.g.n + r.at) * r.row, src.raw_data() + static_cast<std::size_t>(o) * r.row, r.row);
  return out;
}

// (self, dim): dim must be 1 (typex's squeeze rule; PyTorch would keep a dim that is not).
inline any_tensor squeeze(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  if (x.rank() == 0) return x;
  const std::size_t d = wrap_dim(a.target(), a.integer("dim"), x.rank());
  if (x.extents()[d] != 1) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": dim "); w.put_int(static_cast<long long>(d)); w.put(" of "); w.put(x.to_string());
      w.put(" is not 1; only a dim of extent 1 can be squeezed");
    });
  }
  std::vector<index_t> e = x.extents();
  e.erase(e.begin() + static_cast<std::ptrdiff_t>(d));
  return with_extents(x, std::move(e), a.target());
}

// (self, sizes): -1 keeps the input's extent; a contiguous copy.
inline any_tensor expand(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const auto sizes = a.ints("size");
  if (sizes.size() < x.rank()) a.fail_text("size", "has fewer sizes than the input has dims");
  std::vector<index_t> oe(sizes.begin(), sizes.end());
  const std::size_t lead = oe.size() - x.rank();
  for (std::size_t k = 0; k < oe.size(); ++k) {
    const index_t in = k < lead ? -2 : x.extents()[k - lead];
    if (oe[k] == -1 && in != -2) oe[k] = in;
    if (oe[k] < 0 || (in != -2 && in != 1 && in != oe[k])) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": cannot expand "); w.put(x.to_string()); w.put(" to sizes ");
        w.put(tensor_shape(x.scalar_type(), sizes).extents_string()); w.put(" at dim "); w.put_int(static_cast<long long>(k));
        w.put(" (only dims of extent 1 repeat)");
      });
    }
  }
  any_tensor out = a.result(x.scalar_type(), oe);
  const std::vector<index_t> is = broadcast_strides(x.extents(), oe);
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<index_t> idx(oe.size());
    strided_copy(x.data<T>(), out.data<T>(), oe, is, idx);
  });
  return out;
}

// Each index of an integer tensor as i64 (i64 or i32 accepted, as torch's index ops).
inline any_tensor index_tensor(std::string_view op, const any_tensor& idx, bool allow_i32) {
  if (!(idx.scalar_type() == dtype::i64 || (allow_i32 && idx.scalar_type() == dtype::i32)))
    rank_error(op, "index", idx, allow_i32 ? "an i64 or i32 tensor" : "an i64 tensor");
  return to_dtype(idx, dtype::i64);
}

// (self, dim, index): the slices of x along dim at the 1-d index's positions.
inline any_tensor index_select(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor I = index_tensor(a.target(), a.tensor("index"), true);
  if (I.rank() > 1) rank_error(a.target(), "index", I, "1-d");
  const std::size_t d = x.rank() == 0 ? 0 : wrap_dim(a.target(), a.integer("dim"), x.rank());
  std::vector<index_t> ext = x.rank() == 0 ? std::vector<index_t>{1} : x.extents();
  const around_dim g(ext, d);
  const index_t k = I.numel();
  if (x.rank() == 0 && k != 1) rank_error(a.target(), "index", I, "a single index for a 0-d input");
  ext[d] = k;
  if (x.rank() == 0) ext.clear();
  any_tensor out = a.result(x.scalar_type(), ext);
  const std::int64_t* pi = I.data<std::int64_t>();
  for (index_t j = 0; j < k; ++j)  // (negative indices are errors too, as torch's index_select)
    if (pi[j] < 0 || pi[j] >= g.n) index_out_of_range(a.target(), pi[j], d, g.n);
  const std::size_t row = static_cast<std::size_t>(g.inner) * itemsize(x.scalar_type());
  for (index_t o = 0; o < g.outer; ++o)
    for (index_t j = 0; j < k; ++j)
      std::memcpy(out.raw_data() + static_cast<std::size_t>(o * k + j) * row, x.raw_data() + static_cast<std::size_t>(o * g.n + pi[j]) * row,
                  row);
  return out;
}

// (self, dim, index): out[..i..] = x[..index[..i..]..] along dim; the index has x's rank and,
// off dim, extents no larger than x's.
inline any_tensor gather(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor I = index_tensor(a.target(), a.tensor("index"), false);
  const std::size_t r = x.rank();
  if (I.rank() != r) rank_error(a.target(), "index", I, "of the input's rank");
  if (r == 0) {
    (void)wrap_index(a.target(), *I.data<std::int64_t>(), 0, 1);
    return x.clone();
  }
  const std::size_t d = wrap_dim(a.target(), a.integer("dim"), r);
  for (std::size_t k = 0; k < r; ++k) {
    if (k != d && I.extents()[k] > x.extents()[k]) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": index "); w.put(I.to_string()); w.put(" is larger than the input "); w.put(x.to_string());
        w.put(" at dim "); w.put_int(static_cast<long long>(k));
      });
    }
  }
  const std::vector<index_t> xs = contiguous_strides(x.extents());
  std::vector<index_t> s = xs;
  s[d] = 0;  // the gathered dim's offset comes from the index
  any_tensor out = a.result(x.scalar_type(), I.extents());
  const std::int64_t* pi = I.data<std::int64_t>();
  const std::size_t item = itemsize(x.scalar_type());
  const index_t n = x.extents()[d];
  const std::array<std::vector<index_t>, 1> strides{s};
  for_each_strided(I.extents(), strides, [&](index_t i, const std::array<index_t, 1>& o) {
    const std::int64_t j = pi[i];
    if (j < 0 || j >= n) index_out_of_range(a.target(), j, d, n);
    std::memcpy(out.raw_data() + static_cast<std::size_t>(i) * item, x.raw_data() + static_cast<std::size_t>(o[0] + j * xs[d]) * item, item);
  });
  return out;
}

// (self, dim, index, source, alpha): self with alpha * source's slices along dim added at the
// positions the 1-d index names (repeated indices accumulate): index_select's gradient.
inline any_tensor index_add(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& src = a.tensor("source");
  const any_tensor I = index_tensor(a.target(), a.tensor("index"), true);
  if (I.rank() > 1) rank_error(a.target(), "index", I, "1-d");
  const std::size_t r = x.rank();
  const std::size_t d = r == 0 ? 0 : wrap_dim(a.target(), a.integer("dim"), r);
  std::vector<index_t> ext = r == 0 ? std::vector<index_t>{1} : x.extents();
  const around_dim g(ext, d);
  const index_t k = I.numel();
  std::vector<index_t> want = ext;
  want[d] = k;
  if (src.numel() != g.outer * k * g.inner || (src.rank() != 0 && src.rank() != r) || (r > 0 && src.extents() != want) ||
      src.scalar_type() != x.scalar_type())
    rank_error(a.target(), "source", src, "the input's shape with the index's length at dim, and its dtype");
  const std::int64_t* pi = I.data<std::int64_t>();
  for (index_t j = 0; j < k; ++j)
    if (pi[j] < -g.n || pi[j] >= g.n) index_out_of_range(a.target(), pi[j], d, g.n);
  any_tensor out = x.clone();
  const double alpha = a.real_or_default("alpha");
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    T* o = out.data<T>();
    const T* ps = src.data<T>();
    for (index_t oo = 0; oo < g.outer; ++oo)
      for (index_t j = 0; j < k; ++j) {
        const index_t row = pi[j] < 0 ? pi[j] + g.n : pi[j];
        T* dst = o + (oo * g.n + row) * g.inner;
        const T* from = ps + (oo * k + j) * g.inner;
        for (index_t i = 0; i < g.inner; ++i) dst[i] = convert<T>(convert<C>(dst[i]) + static_cast<C>(alpha) * convert<C>(from[i]));
      }
  });
  return out;
}

// (self, dim, index, src): self with src's elements added at the positions index names along
// dim (out[..index[i]..] += src[i] for each i of index's shape): gather's gradient.
inline any_tensor scatter_add(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& src = a.tensor("src");
  const any_tensor I = index_tensor(a.target(), a.tensor("index"), false);
  const std::size_t r = x.rank();
  if (I.rank() != r || src.rank() != r) rank_error(a.target(), "index", I, "of the input's rank (and src too)");
  if (src.scalar_type() != x.scalar_type()) rank_error(a.target(), "src", src, "of the input's dtype");
  any_tensor out = x.clone();
  if (r == 0) {
    (void)wrap_index(a.target(), *I.data<std::int64_t>(), 0, 1);
    dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
      using T = decltype(tag);
      *out.data<T>() = convert<T>(convert<compute_t<T>>(*out.data<T>()) + convert<compute_t<T>>(*src.data<T>()));
    });
    return out;
  }
  const std::size_t d = wrap_dim(a.target(), a.integer("dim"), r);
  for (std::size_t k = 0; k < r; ++k) {
    if (I.extents()[k] > src.extents()[k] || (k != d && I.extents()[k] > x.extents()[k])) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": index "); w.put(I.to_string()); w.put(" is larger than src "); w.put(src.to_string());
        w.put(" or the input "); w.put(x.to_string()); w.put(" at dim "); w.put_int(static_cast<long long>(k));
      });
    }
  }
  const std::vector<index_t> xs = contiguous_strides(x.extents());
  std::vector<index_t> so = xs;
  so[d] = 0;
  const std::array<std::vector<index_t>, 2> strides{so, contiguous_strides(src.extents())};
  const std::int64_t* pi = I.data<std::int64_t>();
  const index_t n = x.extents()[d];
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    T* o = out.data<T>();
    const T* ps = src.data<T>();
    for_each_strided(I.extents(), strides, [&](index_t i, const std::array<index_t, 2>& off) {
      const std::int64_t j = pi[i];
      if (j < 0 || j >= n) index_out_of_range(a.target(), j, d, n);
      T& dst = o[off[0] + j * xs[d]];
      dst = convert<T>(convert<C>(dst) + convert<C>(ps[off[1]]));
    });
  });
  return out;
}

// (self, mask, source): self and the bool mask broadcast together (torch's expand_outplace), the
// positions where the mask is true taking source's elements in row-major order: masked_select's
// gradient.
inline any_tensor masked_scatter(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& m = a.tensor("mask");
  const any_tensor& src = a.tensor("source");
  require_bool(a.target(), "mask", m);
  if (src.scalar_type() != x.scalar_type()) rank_error(a.target(), "source", src, "of the input's dtype");
  const std::vector<index_t> oe = broadcast_extents(a.target(), x.extents(), m.extents());
  const std::array<std::vector<index_t>, 2> strides{broadcast_strides(x.extents(), oe), broadcast_strides(m.extents(), oe)};
  const bool* pm = m.data<bool>();
  index_t n = 0;
  for_each_strided(oe, strides, [&](index_t, const std::array<index_t, 2>& o) { n += pm[o[1]] ? 1 : 0; });
  if (n > src.numel()) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": the mask selects "); w.put_int(n); w.put(" elements, but source "); w.put(src.to_string());
      w.put(" has "); w.put_int(src.numel());
    });
  }
  any_tensor out = a.result(x.scalar_type(), oe);
  const std::size_t size = itemsize(x.scalar_type());
  index_t k = 0;
  for_each_strided(oe, strides, [&](index_t i, const std::array<index_t, 2>& o) {
    const std::byte* from = pm[o[1]] ? src.raw_data() + static_cast<std::size_t>(k++) * size : x.raw_data() + static_cast<std::size_t>(o[0]) * size;
    std::memcpy(out.raw_data() + static_cast<std::size_t>(i) * size, from, size);
  });
  return out;
}

// (self, diagonal): zero above (tril) or below (triu) the diagonal of the last two dims.
template <bool Lower>
any_tensor triangle(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  if (x.rank() < 2) rank_error(a.target(), "input", x, "at least 2-d");
  const std::int64_t k = a.integer_or_default("diagonal");
  const index_t rows = x.extents()[x.rank() - 2], cols = x.extents()[x.rank() - 1];
  any_tensor out = x.clone();
  const std::size_t item = itemsize(x.scalar_type());
  for (index_t m = 0, count = rows * cols == 0 ? 0 : x.numel() / (rows * cols); m < count; ++m) {
    for (index_t i = 0; i < rows; ++i) {
      // zero the columns j with j - i > k (tril) or j - i < k (triu)
      const index_t lo = Lower ? std::clamp<index_t>(i + k + 1, 0, cols) : 0;
      const index_t hi = Lower ? cols : std::clamp<index_t>(i + k, 0, cols);
      if (hi > lo)
        std::memset(out.raw_data() + static_cast<std::size_t>((m * rows + i) * cols + lo) * item, 0, static_cast<std::size_t>(hi - lo) * item);
    }
  }
  return out;
}

// (tensors, dim): every tensor has one rank and the same extents off dim; dtypes promote.
inline any_tensor cat(const kernel_args& a) {
  const auto list = a.tensor_list("tensors");
  if (list.empty()) a.fail_text("tensors", "is empty; cat needs at least one tensor");
  const any_tensor& first = *list.front();
  if (first.rank() == 0) rank_error(a.target(), "tensor", first, "at least 1-d");
  const std::size_t d = wrap_dim(a.target(), a.integer_or_default("dim"), first.rank());
  dtype dt = first.scalar_type();
  std::vector<index_t> oe = first.extents();
  oe[d] = 0;
  for (std::size_t t = 0; t < list.size(); ++t) {
    const any_tensor& x = *list[t];
    dt = promote_types(dt, x.scalar_type());
    bool ok = x.rank() == first.rank();
    for (std::size_t k = 0; ok && k < x.rank(); ++k) ok = k == d || x.extents()[k] == first.extents()[k];
    if (!ok) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": tensor "); w.put_int(static_cast<long long>(t)); w.put(' '); w.put(x.to_string());
        w.put(" does not match tensor 0 "); w.put(first.to_string()); w.put(" off the concatenated dim ");
        w.put_int(static_cast<long long>(d));
      });
    }
    oe[d] += x.extents()[d];
  }
  any_tensor out = a.result(dt, oe);
  const around_dim g(oe, d);
  const std::size_t item = itemsize(dt);
  index_t at = 0;  // the dim-d offset of the current tensor
  for (const any_tensor* p : list) {
    const any_tensor x = to_dtype(*p, dt);
    const index_t len = x.extents()[d];
    const std::size_t block = static_cast<std::size_t>(len * g.inner) * item;
    for (index_t o = 0; o < g.outer; ++o)
      std::memcpy(out.raw_data() + static_cast<std::size_t>((o * g.n + at) * g.inner) * item,
                  x.raw_data() + static_cast<std::size_t>(o) * block, block);
    at += len;
  }
  return out;
}

// (tensors, dim): equal shapes, joined along a new dim.
inline any_tensor stack(const kernel_args& a) {
  const auto list = a.tensor_list("tensors");
  if (list.empty()) a.fail_text("tensors", "is empty; stack needs at least one tensor");
  const any_tensor& first = *list.front();
  const std::size_t d = wrap_dim(a.target(), a.integer_or_default("dim"), first.rank() + 1);
  std::vector<any_tensor> parts;
  for (std::size_t t = 0; t < list.size(); ++t) {
    if (list[t]->extents() != first.extents()) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": tensor "); w.put_int(static_cast<long long>(t)); w.put(' '); w.put(list[t]->to_string());
        w.put(" does not have tensor 0's shape "); w.put(first.to_string()); w.put("; stacked tensors must be equal in shape");
      });
    }
    std::vector<index_t> e = list[t]->extents();
    e.insert(e.begin() + static_cast<std::ptrdiff_t>(d), 1);
    parts.push_back(any_tensor(list[t]->scalar_type(), std::move(e), list[t]->get_storage()));
  }
  std::vector<const any_tensor*> ptrs;
  for (const any_tensor& p : parts) ptrs.push_back(&p);
  const std::vector<ir::argument> args{std::vector<ir::value_ref>(parts.size()), static_cast<std::int64_t>(d)};
  const std::array<const any_tensor*, 2> none{nullptr, nullptr};
  return cat(kernel_args(a.op(), args, none, nullptr, ptrs));
}

// ---------------------------------------------------------------------------------------------

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(logical_not_op, detail::logical_not);
TYPEX_EIGEN_KERNEL(aten::_to_copy, detail::to_copy);
TYPEX_EIGEN_KERNEL(aten::select_int, detail::select);
TYPEX_EIGEN_KERNEL(aten::select_scatter, detail::select_scatter);
TYPEX_EIGEN_KERNEL(aten::squeeze_dim, detail::squeeze);
TYPEX_EIGEN_KERNEL(aten::expand, detail::expand);
TYPEX_EIGEN_KERNEL(where_op, detail::where);
TYPEX_EIGEN_KERNEL(masked_fill_op, detail::masked_fill);
TYPEX_EIGEN_KERNEL(aten::index_select, detail::index_select);
TYPEX_EIGEN_KERNEL(aten::gather, detail::gather);
TYPEX_EIGEN_KERNEL(aten::tril, detail::triangle<true>);
TYPEX_EIGEN_KERNEL(aten::triu, detail::triangle<false>);
TYPEX_EIGEN_KERNEL(aten::nonzero, detail::nonzero);
TYPEX_EIGEN_KERNEL(aten::masked_select, detail::masked_select);
TYPEX_EIGEN_KERNEL(aten::index_add, detail::index_add);
TYPEX_EIGEN_KERNEL(aten::scatter_add, detail::scatter_add);
TYPEX_EIGEN_KERNEL(aten::masked_scatter, detail::masked_scatter);
TYPEX_EIGEN_KERNEL(aten::cat, detail::cat);
TYPEX_EIGEN_KERNEL(aten::stack, detail::stack);
}  // namespace typex::eigen
