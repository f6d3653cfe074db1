// typex/backend/eigen/gemm.hpp — the CPU backend's matrix product, with fused epilogues.
//
//   C[m, n] = act(alpha * A[m, k] B[k, n] + beta * C + bias)
//
// Blocked as BLIS / Eigen's GEBP: B is packed into panels of nr columns (kc rows at a time, zero
// padded), A into micro-panels of mr rows; a micro-kernel keeps an mr x nr tile of C in registers
// and does one rank-1 update per k with 2 packet loads of B and mr broadcasts of A. It is written
// with Eigen's packet primitives, so it uses the widest vectors the target has (AVX-512, AVX2,
// NEON, ...). Two things Eigen's own product does not give us:
//  - speed under g++: the B packets are pinned in registers (TYPEX_KEEP_IN_REGISTER, config.hpp);
//    g++ 12 otherwise re-loads them from memory in every FMA and Eigen's GEBP runs at ~75 % of
//    the FMA peak under g++ instead of ~94 % under clang (measured; see docs/ops_and_eigen_backend.md);
//  - the epilogue: bias (per column or per row), alpha/beta and ReLU are applied to each finished
//    tile while it is in registers or L1, any other activation to each block of rows once its
//    column panels are done (in L2), instead of in another pass over C.
// A constant right-hand side (a linear layer's weight) is packed once (packed_rhs) and reused by
// every call. Work is split over the thread pool by column panels, or by rows when A has more
// than half as many rows as B has columns (each thread then packs only its rows) or there are
// fewer panels than threads. Scratch (packed A per thread, packed B per call) lives in buffers
// that only grow: no allocation in steady state.
#pragma once

#include <typex/backend/eigen/thread_pool.hpp>
#include <typex/core/shape.hpp>
#include <typex/ops/unary.hpp>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace typex::eigen::detail {
// An activation's parts: an op's attributes and the functions that apply it to f32 / f64 rows.
// The same type in every unit whatever its vector width (activation, below, is one type per width),
// so it is what crosses from a user's unit (register_activation, activation.hpp) to the library's
// fusion table; the functions themselves were compiled in the unit that made them.
struct activation_fns {
  alignas(std::max_align_t) unsigned char storage[32] = {};
  void (*f32)(const unsigned char*, float*, index_t) = nullptr;
  void (*f64)(const unsigned char*, double*, index_t) = nullptr;
  bool relu = false;
};

inline namespace TYPEX_SIMD_ABI {  // (config.hpp: one name per vector width)

// The op math of ops/ (op.math(m, x, y)) on Eigen arrays: one expression, vectorised with packets.
template <class T>
struct array_math {
  using scalar_type = T;
  static constexpr T k(double v) noexcept { return static_cast<T>(v); }
  template <class X> static auto exp(const X& x) { return x.exp(); }
  template <class X> static auto log(const X& x) { return x.log(); }
  template <class X> static auto log1p(const X& x) { return x.log1p(); }
  template <class X> static auto sqrt(const X& x) { return x.sqrt(); }
  template <class X> static auto sin(const X& x) { return x.sin(); }
  template <class X> static auto cos(const X& x) { return x.cos(); }
  template <class X> static auto tanh(const X& x) { return x.tanh(); }
  template <class X> static auto erf(const X& x) { return x.erf(); }
  template <class X> static auto abs(const X& x) { return x.abs(); }
  // (Eigen orders pmax's / pmin's operands so that a NaN x stays NaN, as torch)
  template <class X> static auto max(const X& x, T c) { return x.max(c); }
  template <class X> static auto min(const X& x, T c) { return x.min(c); }
};

// Whether Op is an activation: a unary pointwise op (its math written once, ops/unary.hpp) that
// says it may run in the epilogue of the op before it (`static constexpr bool epilogue = true`).
// That one flag is the fusion rule: the planner fuses GEMM / convolution + activation, chains
// activations after pointwise ops and gives them a vectorised step, for any such op, a user's too.
template <class Op>
concept activation_op = Op::epilogue && requires(const Op& op, Eigen::Map<Eigen::Array<float, Eigen::Dynamic, 1>>& x) {
  op.math(array_math<float>{}, x, x);
};

// One activation (an op of activation_op, with its attributes) applied in place to rows of f32 or
// f64 values: what a GEMM, a convolution, a pointwise pass or a chain link applies. The null
// activation does nothing.
class activation {
 public:
  activation() = default;
  explicit activation(const activation_fns& f) noexcept : f_(f) {}

  template <activation_op Op>
  static activation of(const Op& op) {
    static_assert(std::is_trivially_copyable_v<Op> && sizeof(Op) <= sizeof(activation_fns::storage) &&
                      alignof(Op) <= alignof(std::max_align_t),
                  "typex::eigen: an activation op must be a small trivially copyable struct (its attributes)");
    activation a;
    std::memcpy(a.f_.storage, &op, sizeof(Op));
    a.f_.f32 = &rows<Op, float>;
    a.f_.f64 = &rows<Op, double>;
    a.f_.relu = std::is_same_v<Op, relu_op>;
    return a;
  }
  // its parts, to hand to a unit compiled for another vector width
  const activation_fns& fns() const noexcept { return f_; }

  explicit operator bool() const noexcept { return f_.f32 != nullptr; }
  // ReLU: the GEMM's micro-kernel applies it in registers
  bool is_relu() const noexcept { return f_.relu; }

  template <class T>
  void operator()(T* p, index_t n) const {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    if constexpr (std::is_same_v<T, float>) f_.f32(f_.storage, p, n);
    else f_.f64(f_.storage, p, n);
  }

 private:
  template <class Op, class T>
  static void rows(const unsigned char* storage, T* p, index_t n) {
    Op op;
    std::memcpy(&op, storage, sizeof(Op));
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> x(p, n);
    op.math(array_math<T>{}, x, x);
  }

  activation_fns f_;
};

// Applies `act` to p[0, n). The pointwise kernels of these ops call this too, so that a fused
// program and eager calls give the same bits.
template <class T>
void activate(T* p, index_t n, const activation& act) {
  if (act) act(p, n);
}

// A buffer that grows and never shrinks (per thread for packing scratch).
template <class T>
class grow_buffer {
 public:
  grow_buffer() = default;
  grow_buffer(const grow_buffer&) = delete;
  grow_buffer& operator=(const grow_buffer&) = delete;
  ~grow_buffer() { release(); }
  T* get(std::size_t n) {
    if (n > size_) {
      release();
      p_ = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}));
      size_ = n;
    }
    return p_;
  }

 private:
  void release() {
    if (p_ != nullptr) ::operator delete(p_, std::align_val_t{64});
    p_ = nullptr;
    size_ = 0;
  }
  T* p_ = nullptr;
  std::size_t size_ = 0;
};

template <class T>
struct gemm_traits {
  using packet = typename Eigen::internal::packet_traits<T>::type;
  static constexpr int lanes = Eigen::internal::packet_traits<T>::size;
  static constexpr int nr = 2 * lanes;                                                 // tile columns
  static constexpr int mr = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 12 : 6;   // tile rows
#ifdef TYPEX_GEMM_MAX_KC
  static constexpr index_t max_kc = TYPEX_GEMM_MAX_KC;
#else
  static constexpr index_t max_kc = 384;  // depth of a block: a B micro-panel stays in L1
#endif
  static constexpr index_t mc = mr * 16;             // rows of a packed A block (L2)
  // k split into equal blocks of at most max_kc (K = 288 is one block, not 256 + a thin 32)
  static constexpr index_t kc_for(index_t k) noexcept {
    const index_t blocks = k <= 0 ? 1 : (k + max_kc - 1) / max_kc;
    return k <= 0 ? 1 : (k + blocks - 1) / blocks;
  }
};

// A strided matrix operand: element (i, j) at data[i * rs + j * cs].
template <class T>
struct matrix_ref {
  const T* data;
  index_t rs, cs;
  const T& operator()(index_t i, index_t j) const noexcept { return data[i * rs + j * cs]; }
  // The element's address, without forming a reference (an empty operand's data may be null)
  const T* at(index_t i, index_t j) const noexcept { return data + (i * rs + j * cs); }
};

template <class T>
void pack_rows(const T* src, index_t rs, index_t kcp, index_t h, T* dst, index_t ldd);

TYPEX_VECTOR_TEMPLATE_ARGS_BEGIN
// The right-hand side packed into nr-column panels, kc rows at a time: block p (rows
// [p*kc, p*kc + kcp)) holds its panels one after the other, each kcp x nr, zero padded.
template <class T>
struct packed_rhs {
  index_t k = 0, n = 0;
  T* data = nullptr;  // not owned
  index_t kc = gemm_traits<T>::kc_for(k);

  static index_t padded_n(index_t n) noexcept { return (n + gemm_traits<T>::nr - 1) / gemm_traits<T>::nr * gemm_traits<T>::nr; }
  static std::size_t size_for(index_t k, index_t n) noexcept { return static_cast<std::size_t>(k * padded_n(n)); }

  // Packs b (k x n) into out (size_for(k, n) elements).
  static packed_rhs pack(matrix_ref<T> b, index_t k, index_t n, T* out) {
    constexpr int nr = gemm_traits<T>::nr;
    const index_t kc = gemm_traits<T>::kc_for(k);
    const index_t np = padded_n(n);
    for (index_t p0 = 0; p0 < k; p0 += kc) {
      const index_t kcp = std::min(kc, k - p0);
      T* block = out + p0 * np;
      for (index_t j0 = 0; j0 < n; j0 += nr) {
        T* panel = block + j0 * kcp;
        const index_t w = std::min<index_t>(nr, n - j0);
        if (b.rs == 1 && b.cs != 1 && w == nr && nr % gemm_traits<T>::lanes == 0) {
          // (a column-major B, a linear layer's weight read as W^T: each column is contiguous in k,
          // so a panel is nr / L blocks of L columns transposed L x L in packets, not a gather of
          // one element per column per row)
          constexpr int L = gemm_traits<T>::lanes;
          for (int q = 0; q < nr; q += L) pack_rows(b.at(p0, j0 + q), b.cs, kcp, index_t{L}, panel + q, index_t{nr});
          continue;
        }
        for (index_t kk = 0; kk < kcp; ++kk) {
          T* row = panel + kk * nr;
          if (b.cs == 1 && w == nr) {  // (row-major B: a contiguous run; a whole panel's as packets, not
            const T* src = b.at(p0 + kk, j0);  // a call to memmove per 64 bytes, nor scalar moves)
            using P = typename gemm_traits<T>::packet;
            constexpr int L = gemm_traits<T>::lanes;
            for (int q = 0; q < nr; q += L) Eigen::internal::pstoreu(row + q, Eigen::internal::ploadu<P>(src + q));
            continue;
          }
          if (b.cs == 1) std::copy_n(b.at(p0 + kk, j0), w, row);
          else for (index_t jj = 0; jj < w; ++jj) row[jj] = b(p0 + kk, j0 + jj);
          std::fill(row + w, row + nr, T(0));
        }
      }
    }
    return packed_rhs{k, n, out, kc};
  }
  const T* panel(index_t p0, index_t j0) const noexcept {
    const index_t kcp = std::min(kc, k - p0);
    return data + p0 * padded_n(n) + j0 * kcp;
  }
};
TYPEX_VECTOR_TEMPLATE_ARGS_END

// Packs h rows of a row-major A (row stride rs, columns contiguous), kcp columns, into dst as the
// micro-kernel reads them (column after column, h values each): L x L packet transposes (the rows
// padded to L) where h <= L, each transposed packet stored whole — its lanes past h are written
// over by the next store, or land past the panel: callers pack panels in address order and keep
// L elements of slack past the last one.
TYPEX_VECTOR_TEMPLATE_ARGS_BEGIN
// ldd: the distance between dst's columns (default h; packed_rhs::pack packs a column-major B's
// panel as two such blocks of L rows, ldd = nr)
template <class T>
void pack_rows(const T* src, index_t rs, index_t kcp, index_t h, T* dst, index_t ldd) {
  using traits = gemm_traits<T>;
  using P = typename traits::packet;
  using namespace Eigen::internal;
  constexpr int L = traits::lanes;
  if (ldd == 0) ldd = h;
  index_t kk = 0;
  if (h <= L) {
    for (; kk + L <= kcp; kk += L) {
      PacketBlock<P, L> block;
      for (int ii = 0; ii < L; ++ii) block.packet[ii] = ii < h ? ploadu<P>(src + ii * rs + kk) : pset1<P>(T(0));
      ptranspose(block);
      for (int q = 0; q < L; ++q) pstoreu(dst + (kk + q) * ldd, block.packet[q]);
    }
  }
  for (; kk < kcp; ++kk)
    for (index_t ii = 0; ii < h; ++ii) dst[kk * ldd + ii] = src[ii * rs + kk];
}
TYPEX_VECTOR_TEMPLATE_ARGS_END

// Rows [r, r + h) x columns [p0, p0 + kcp) of a, packed into dst as the micro-kernel reads them
// (gemm_range's per-call packing and packed_lhs share it): packet transposes for a row-major a, a
// k-outer gather otherwise (h reading streams, one writing stream; 2x the rows-outer order, whose
// writes revisit each cache line of the panel h times). May write L elements past the panel.
template <class T>
void pack_micro_panel(matrix_ref<T> a, index_t r, index_t h, index_t p0, index_t kcp, T* dst) {
  const T* src = a.at(r, p0);
  if (a.cs == 1) {
    pack_rows(src, a.rs, kcp, h, dst, h);
    return;
  }
  constexpr int mr = gemm_traits<T>::mr;
  if (a.rs == 1 && h == mr) {  // (a column-major A, dY^T of a weight gradient: each column's mr values are contiguous)
    for (index_t kk = 0; kk < kcp; ++kk, dst += mr) {
      const T* col = src + kk * a.cs;
      for (int ii = 0; ii < mr; ++ii) dst[ii] = col[ii];
    }
    return;
  }
  for (index_t kk = 0; kk < kcp; ++kk, dst += h)
    for (index_t ii = 0; ii < h; ++ii) dst[ii] = src[ii * a.rs + kk * a.cs];
}

// The left-hand side packed as the micro-kernel reads it: micro-panels of mr rows (the last one
// shorter), each holding its rows for the whole k, one kc block after the other, column by column
// (kc x h, h the panel's rows). Used for a constant left operand (a convolution's weights), packed
// once where gemm_range would otherwise pack it again for every product.
template <class T>
struct packed_lhs {
  index_t m = 0, k = 0;
  const T* data = nullptr;  // not owned
  index_t kc = gemm_traits<T>::kc_for(k);

  // m * k, and the packing's slack (pack_micro_panel)
  static std::size_t size_for(index_t m, index_t k) noexcept { return static_cast<std::size_t>(m * k + gemm_traits<T>::lanes); }

  // Packs a (m x k) into out (size_for(m, k) elements).
  static packed_lhs pack(matrix_ref<T> a, index_t m, index_t k, T* out) {
    constexpr int mr = gemm_traits<T>::mr;
    const index_t kc = gemm_traits<T>::kc_for(k);
    for (index_t r = 0; r < m; r += mr) {
      const index_t h = std::min<index_t>(mr, m - r);
      for (index_t p0 = 0; p0 < k; p0 += kc) pack_micro_panel(a, r, h, p0, std::min(kc, k - p0), out + r * k + h * p0);
    }
    return packed_lhs{m, k, out, kc};
  }
  // The micro-panel of rows [r, r + mr) (r a multiple of mr), k block starting at p0.
  const T* panel(index_t r, index_t p0) const noexcept {
    return data + r * k + std::min<index_t>(gemm_traits<T>::mr, m - r) * p0;
  }
};

// What happens to a finished tile of C.
template <class T>
struct gemm_epilogue {
  T alpha = T(1);
  T beta = T(0);                  // C = beta * C + ...; 0: C is not read (may hold garbage)
  const T* bias = nullptr;        // added after the product
  bool bias_per_row = false;      // bias[i] (a convolution's channel) instead of bias[j]
  activation act;
};

// The mr x nr micro-kernel: A micro-panel (kc x MR, packed) times B micro-panel (kc x nr), stored
// to c (row stride ldc) — either a tile of C itself (added to what c holds when `accumulate`: the
// k blocks after the first), with the column or row bias added and ReLU applied in registers, or a
// scratch tile that the caller finishes (other activations: gemm_range, per block of rows).
template <class T, int MR>
void micro_kernel(index_t kc, const T* a, const T* b, T* c, index_t ldc, const T* col_bias, const T* row_bias, bool relu,
                  bool accumulate) {
  using traits = gemm_traits<T>;
  using P = typename traits::packet;
  using namespace Eigen::internal;
  constexpr int L = traits::lanes;
  P c0[MR], c1[MR];
  TYPEX_UNROLL  // (every loop over the tile's rows unrolled: the accumulators stay registers, no memset of a stack copy per call)
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = pset1<P>(T(0));
  if constexpr (MR == 1) {
    // one row (a batch-1 product: a GEMV that streams B): four k steps in flight on their own
    // accumulators, so that the FMA latency does not bound the loop (one chain of 2 accumulators
    // ran at ~16 bytes of B per cycle, below what L3 delivers)
    constexpr index_t nr = traits::nr;
    P x0 = c0[0], x1 = c1[0], y0 = x0, y1 = x0, z0 = x0, z1 = x0, w0 = x0, w1 = x0;
    index_t k = 0;
    for (; k + 4 <= kc; k += 4, a += 4, b += 4 * nr) {
      x0 = pmadd(pset1<P>(a[0]), ploadu<P>(b), x0), x1 = pmadd(pset1<P>(a[0]), ploadu<P>(b + L), x1);
      y0 = pmadd(pset1<P>(a[1]), ploadu<P>(b + nr), y0), y1 = pmadd(pset1<P>(a[1]), ploadu<P>(b + nr + L), y1);
      z0 = pmadd(pset1<P>(a[2]), ploadu<P>(b + 2 * nr), z0), z1 = pmadd(pset1<P>(a[2]), ploadu<P>(b + 2 * nr + L), z1);
      w0 = pmadd(pset1<P>(a[3]), ploadu<P>(b + 3 * nr), w0), w1 = pmadd(pset1<P>(a[3]), ploadu<P>(b + 3 * nr + L), w1);
    }
    for (; k < kc; ++k, ++a, b += nr) x0 = pmadd(pset1<P>(a[0]), ploadu<P>(b), x0), x1 = pmadd(pset1<P>(a[0]), ploadu<P>(b + L), x1);
    c0[0] = padd(padd(x0, y0), padd(z0, w0));
    c1[0] = padd(padd(x1, y1), padd(z1, w1));
  } else {
    TYPEX_UNROLL_4
    for (index_t k = 0; k < kc; ++k) {
      P b0 = ploadu<P>(b);
      P b1 = ploadu<P>(b + L);
      TYPEX_KEEP_IN_REGISTER(b0);
      TYPEX_KEEP_IN_REGISTER(b1);
      TYPEX_UNROLL
      for (int i = 0; i < MR; ++i) {
        const P ai = pset1<P>(a[i]);
        c0[i] = pmadd(ai, b0, c0[i]);
        c1[i] = pmadd(ai, b1, c1[i]);
      }
      a += MR;
      b += traits::nr;
    }
  }
  const P zero = pset1<P>(T(0));
  const P cb0 = col_bias ? ploadu<P>(col_bias) : zero, cb1 = col_bias ? ploadu<P>(col_bias + L) : zero;
  TYPEX_UNROLL
  for (int i = 0; i < MR; ++i) {
    if (accumulate) {
      c0[i] = padd(ploadu<P>(c + i * ldc), c0[i]);
      c1[i] = padd(ploadu<P>(c + i * ldc + L), c1[i]);
    }
    P r0 = padd(c0[i], cb0), r1 = padd(c1[i], cb1);
    if (row_bias != nullptr) {
      const P rb = pset1<P>(row_bias[i]);
      r0 = padd(r0, rb);
      r1 = padd(r1, rb);
    }
    if (relu) {  // (Eigen's pmax(x, 0) keeps a NaN x, as activate() does)
      r0 = pmax(r0, zero);
      r1 = pmax(r1, zero);
    }
    pstoreu(c + i * ldc, r0);
    pstoreu(c + i * ldc + L, r1);
  }
}

template <class T, int... MR>
constexpr auto micro_kernel_table(std::integer_sequence<int, MR...>) {
  using fn = void (*)(index_t, const T*, const T*, T*, index_t, const T*, const T*, bool, bool);
  return std::array<fn, sizeof...(MR)>{&micro_kernel<T, MR + 1>...};
}

template <class T>
grow_buffer<T>& a_scratch() {
  static thread_local grow_buffer<T> b;
  return b;
}
template <class T>
grow_buffer<T>& b_scratch() {
  static thread_local grow_buffer<T> b;
  return b;
}

// C rows [i0, i1) x columns [j0, j1) (j0 a multiple of nr) on the calling thread.
// A is read through `a`, or from `pa` when it is packed already (i0 then a multiple of mr).
template <class T>
void gemm_range(index_t i0, index_t i1, index_t j0, index_t j1, matrix_ref<T> a, const packed_lhs<T>* pa, const packed_rhs<T>& b,
                T* c, index_t ldc, const gemm_epilogue<T>& ep) {
  using traits = gemm_traits<T>;
  constexpr int mr = traits::mr, nr = traits::nr;
  static constexpr auto kernels = micro_kernel_table<T>(std::make_integer_sequence<int, mr>{});
  const index_t k = b.k;
  const index_t kc = b.kc;
  T* apack = pa != nullptr ? nullptr : a_scratch<T>().get(static_cast<std::size_t>(traits::mc * traits::max_kc + traits::lanes));
  alignas(64) T tile[mr * nr];
  using row = Eigen::Array<T, 1, Eigen::Dynamic>;
  for (index_t p0 = 0; p0 < k || (k == 0 && p0 == 0); p0 += kc) {
    const index_t kcp = std::min(kc, k - p0);
    const bool first = p0 == 0, last = p0 + kc >= k;
    // a plain epilogue: full tiles go straight to C (added to it after the first k block, or from
    // the first with beta = 1 and nothing after the sum)
    const bool add_to_c = ep.beta == T(1) && ep.bias == nullptr && !ep.act;
    const bool direct = ep.alpha == T(1) && (ep.beta == T(0) || add_to_c);
    for (index_t ic = i0; ic < i1; ic += traits::mc) {
      const index_t mcp = std::min(traits::mc, i1 - ic);
      // pack A rows [ic, ic + mcp) x [p0, p0 + kcp): micro-panels of mr rows (the last may be shorter)
      for (index_t ir = 0; ir < mcp && pa == nullptr; ir += mr) {
        const index_t h = std::min<index_t>(mr, mcp - ir);
        if (h == 1 && a.cs == 1) continue;  // a one-row micro-panel is the row itself (batch 1: no copy)
        pack_micro_panel(a, ic + ir, h, p0, kcp, apack + ir * kcp);
      }
      for (index_t jr = j0; jr < j1; jr += nr) {
        const T* bpanel = b.panel(p0, jr);
        const index_t w = std::min<index_t>(nr, j1 - jr);
        for (index_t ir = 0; ir < mcp; ir += mr) {
          const index_t h = std::min<index_t>(mr, mcp - ir);
          const auto kernel = kernels[static_cast<std::size_t>(h - 1)];
          const T* apanel = pa != nullptr ? pa->panel(ic + ir, p0) : h == 1 && a.cs == 1 ? a.at(ic + ir, p0) : apack + ir * kcp;
          if (direct && w == nr) {  // the whole epilogue but a non-ReLU activation, in registers
            T* dst = c + (ic + ir) * ldc + jr;
            const bool bias = last && ep.bias != nullptr;
            kernel(kcp, apanel, bpanel, dst, ldc, bias && !ep.bias_per_row ? ep.bias + jr : nullptr,
                   bias && ep.bias_per_row ? ep.bias + ic + ir : nullptr, last && ep.act.is_relu(), !first || add_to_c);
            continue;
          }
          kernel(kcp, apanel, bpanel, tile, nr, nullptr, nullptr, false, false);
          for (index_t ii = 0; ii < h; ++ii) {
            const index_t i = ic + ir + ii;
            Eigen::Map<row> out(c + i * ldc + jr, w);
            const Eigen::Map<const row> acc(tile + ii * nr, w);
            if (!first) out += ep.alpha * acc;
            else if (ep.beta == T(0)) out = ep.alpha * acc;
            else out = ep.beta * out + ep.alpha * acc;
            if (!last) continue;
            if (ep.bias != nullptr) {
              if (ep.bias_per_row) out += ep.bias[i];
              else out += Eigen::Map<const row>(ep.bias + jr, w);
            }
            if (ep.act.is_relu()) activate(out.data(), w, ep.act);
          }
        }
      }
      // Any other activation, over the block's whole rows once every panel is done (they are in L2):
      // applied to a tile's 16-value rows, an exact GELU ran latency-bound, two packets per call (6 %
      // of the transformer's forward at batch 8); over rows of (j1 - j0) values its packets overlap.
      if (last && ep.act && !ep.act.is_relu())
        for (index_t i = ic; i < ic + mcp; ++i) activate(c + i * ldc + j0, j1 - j0, ep.act);
    }
    if (k == 0) break;
  }
}

// C = epilogue(A B) with B packed (and A too when pa is given); splits the work over `threads`
// threads of the pool.
template <class T>
void gemm_split(index_t m, matrix_ref<T> a, const packed_lhs<T>* pa, const packed_rhs<T>& b, T* c, index_t ldc,
                const gemm_epilogue<T>& ep, int threads) {
  constexpr int nr = gemm_traits<T>::nr, mr = gemm_traits<T>::mr;
  const index_t n = b.n;
  if (m == 0 || n == 0) return;
  const index_t panels = (n + nr - 1) / nr;
  // enough work per thread to pay for waking it: ~64k multiply-adds
  const index_t work = m * n * std::max<index_t>(b.k, 1);
  const int t = static_cast<int>(std::clamp<index_t>(std::min<index_t>(threads, work / 65536), 1, threads));
  if (t == 1) {
    gemm_range(0, m, 0, n, a, pa, b, c, ldc, ep);
    return;
  }
  // Columns or rows: by column panels each thread packs all of A and reads its share of the (packed)
  // B; by rows it packs its share of A and reads all of B. Packing A costs about twice what reading
  // packed B does (read, transpose, write), so rows win when 2m > n: the CNN's 9216 x 128 linear at
  // batch 256 packed 9.4 MB of A on each thread by columns. (A packed already: columns.)
  const index_t row_blocks = (m + mr - 1) / mr;
  const bool by_columns = panels >= t && (pa != nullptr || 2 * m <= n || row_blocks < t);
  auto task = [&](int i) {
    if (by_columns) {
      const index_t p0 = panels * i / t, p1 = panels * (i + 1) / t;
      gemm_range<T>(0, m, p0 * nr, std::min(n, p1 * nr), a, pa, b, c, ldc, ep);
    } else {
      const index_t blocks = (m + mr - 1) / mr;
      const index_t r0 = blocks * i / t * mr, r1 = std::min(m, blocks * (i + 1) / t * mr);
      if (r0 < r1) gemm_range<T>(r0, r1, 0, n, a, pa, b, c, ldc, ep);
    }
  };
  thread_pool::instance().run(t, task);
}

template <class T>
void gemm(index_t m, matrix_ref<T> a, const packed_rhs<T>& b, T* c, index_t ldc, const gemm_epilogue<T>& ep, int threads = 1) {
  gemm_split<T>(m, a, nullptr, b, c, ldc, ep, threads);
}
template <class T>
void gemm(const packed_lhs<T>& a, const packed_rhs<T>& b, T* c, index_t ldc, const gemm_epilogue<T>& ep, int threads = 1) {
  gemm_split<T>(a.m, matrix_ref<T>{a.data, 0, 0}, &a, b, c, ldc, ep, threads);
}

// As gemm, packing B (k x n, any strides) into per-thread scratch first.
template <class T>
void gemm(index_t m, index_t n, index_t k, matrix_ref<T> a, matrix_ref<T> b, T* c, index_t ldc, const gemm_epilogue<T>& ep,
          int threads = 1) {
  T* scratch = b_scratch<T>().get(std::max<std::size_t>(packed_rhs<T>::size_for(k, n), 1));
  const packed_rhs<T> pb = packed_rhs<T>::pack(b, k, n, scratch);
  gemm(m, a, pb, c, ldc, ep, threads);
}

}  // namespace TYPEX_SIMD_ABI
}  // namespace typex::eigen::detail
