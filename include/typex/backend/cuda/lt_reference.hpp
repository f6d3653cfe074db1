// typex/backend/cuda/lt_reference.hpp — the emulated device's model of cublasLtMatmul.
//
// The emulated device (device.hpp) runs a cuBLASLt matrix product by this reference instead of the
// library. To make that an honest test of the lowering, the model knows nothing of how lt.hpp built
// the product: it reads every attribute it depends on back from the real cuBLASLt descriptor objects
// (cublasLtMatmulDescGetAttribute, cublasLtMatrixLayoutGetAttribute) — transposes, epilogue, bias
// pointer and type, each layout's type, order, rows, columns, leading dimension, batch count and batch
// stride — and computes, in cuBLAS's column-major terms and for each batch p,
//
//     D[p] = epilogue(alpha · op(A[p]) · op(B[p]) + beta · C[p] (+ bias[p]))
//
// with the documented semantics: C is not read when beta is 0; the bias is indexed by D's row and is
// added before the activation; GELU is the tanh approximation (see lt.hpp); BGRADA / BGRADB store D
// as DEFAULT does and write to the bias pointer the sums over k of op(A)'s rows (D's rows of them) or
// of op(B)'s columns (D's columns), for the plain product only (one batch, alpha 1, beta 0, f32 or f64
// compute: what the gradient epilogues do otherwise is not documented); DGELU multiplies the product
// by the tanh-form GELU's derivative at the aux matrix (the GELU's input: D's shape and type, at
// EPILOGUE_AUX_POINTER with leading dimension EPILOGUE_AUX_LD, a multiple of 8 and at least D's rows),
// for the plain product only as well; GELU_AUX / GELU_AUX_BIAS store GELU's input (after the bias) in
// the aux matrix too (same layout rules). Products are accumulated
// in double. A wrong transpose flag, leading dimension, epilogue or bias pointer in a descriptor
// therefore changes the emulator's result (tests/unit/cuda/cublaslt.cpp plants each one).
//
// Like cublasLtMatmul, the model refuses inconsistent descriptors (op(A)'s rows differ from D's, a
// leading dimension below the rows, batch counts that differ, a bias epilogue without a bias pointer):
// device_error naming CUBLAS_STATUS_INVALID_VALUE. What it does not model it also refuses with
// device_error rather than guess: a data, compute or scale type other than f32 (CUBLAS_COMPUTE_32F,
// CUDA_R_32F; or its FAST_TF32 / FAST_16BF / FAST_16F compute types, modelled as the operands
// rounded to the narrower format, operand_rounding, then the same sums) or f64 (CUBLAS_COMPUTE_64F,
// CUDA_R_64F), an order other than CUBLASLT_ORDER_COL, an
// epilogue outside DEFAULT / BIAS / RELU / RELU_BIAS / GELU / GELU_BIAS / GELU_AUX / GELU_AUX_BIAS / BGRADA /
// BGRADB / DGELU, a pointer
// mode other than host,
// planar-complex or pointer-array batches. Whether cuBLASLt supports a combination the model accepts
// (an algorithm exists), and its numerics, only a GPU can say (the contract tests).
//
// Host C++ only; the addresses in matmul_args are host addresses on the emulated device.
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/lt.hpp>
#include <typex/core/error.hpp>

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace typex::cuda {

namespace detail {

// The start of every message of the model, naming the product.
inline std::string lt_model_prefix(const lt_matmul& m) {
  return std::string("emulated cublasLtMatmul (") + (m.label.empty() ? std::string("a matrix product") : m.label) + "): ";
}

// cublasLtMatmul's own refusal of the descriptors, as the emulator reports it.
[[noreturn]] inline void lt_invalid(const lt_matmul& m, const std::string& why) {
  typex::detail::raise_message<device_error>(lt_model_prefix(m) + "cuBLASLt would return CUBLAS_STATUS_INVALID_VALUE: " + why);
}

// What the model does not model: refused, not guessed.
[[noreturn]] inline void lt_unmodelled(const lt_matmul& m, const std::string& why) {
  typex::detail::raise_message<device_error>(lt_model_prefix(m) + "not modelled by the emulated device: " + why);
}

// One attribute of the matmul descriptor, read back from cuBLASLt (exactly sizeof(V) bytes: cuBLASLt
// refuses a size other than the attribute's, so a wrong V is an error, not a misread).
template <class V>
V lt_desc_attr(const lt_matmul& m, cublasLtMatmulDescAttributes_t attr, std::string_view attr_name) {
  V v{};
  std::size_t written = 0;
  const cublasStatus_t s = cublasLtMatmulDescGetAttribute(m.desc(), attr, &v, sizeof v, &written);
  check_lt(s, std::string("cublasLtMatmulDescGetAttribute(").append(attr_name).append(")"), m.label);
  if (written != sizeof v) {
    lt_unmodelled(m, std::string(attr_name) + " read back " + std::to_string(written) + " bytes, expected " + std::to_string(sizeof v));
  }
  return v;
}

template <class V>
V lt_layout_attr(const lt_matmul& m, cublasLtMatrixLayout_t l, char which, cublasLtMatrixLayoutAttribute_t attr,
                 std::string_view attr_name) {
  V v{};
  std::size_t written = 0;
  const cublasStatus_t s = cublasLtMatrixLayoutGetAttribute(l, attr, &v, sizeof v, &written);
  check_lt(s, std::string("cublasLtMatrixLayoutGetAttribute(").append(1, which).append(", ").append(attr_name).append(")"), m.label);
  if (written != sizeof v) {
    lt_unmodelled(m, std::string(1, which) + "'s " + std::string(attr_name) + " read back " + std::to_string(written) +
                         " bytes, expected " + std::to_string(sizeof v));
  }
  return v;
}

// A matrix layout as read back from cuBLASLt.
struct lt_layout {
  char which = '?';
  std::uint32_t type = 0;
  std::int32_t order = 0;
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
  std::int32_t batch = 1;
  std::int64_t stride = 0;
};

inline lt_layout read_layout(const lt_matmul& m, cublasLtMatrixLayout_t l, char which) {
  if (l == nullptr) lt_invalid(m, std::string("matrix layout ") + which + " is null");
  lt_layout r;
  r.which = which;
  r.type = lt_layout_attr<std::uint32_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_TYPE, "CUBLASLT_MATRIX_LAYOUT_TYPE");
  r.order = lt_layout_attr<std::int32_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_ORDER, "CUBLASLT_MATRIX_LAYOUT_ORDER");
  r.rows = lt_layout_attr<std::uint64_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_ROWS, "CUBLASLT_MATRIX_LAYOUT_ROWS");
  r.cols = lt_layout_attr<std::uint64_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_COLS, "CUBLASLT_MATRIX_LAYOUT_COLS");
  r.ld = lt_layout_attr<std::int64_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_LD, "CUBLASLT_MATRIX_LAYOUT_LD");
  r.batch = lt_layout_attr<std::int32_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT");
  r.stride = lt_layout_attr<std::int64_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          "CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET");
  const auto plane = lt_layout_attr<std::int64_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, "CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET");
  const auto mode = lt_layout_attr<std::uint32_t>(m, l, which, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, "CUBLASLT_MATRIX_LAYOUT_BATCH_MODE");
  const std::string w(1, which);
  if (r.order != CUBLASLT_ORDER_COL) lt_unmodelled(m, w + "'s order is " + std::to_string(r.order) + ", not CUBLASLT_ORDER_COL");
  if (plane != 0) lt_unmodelled(m, w + " is planar-complex (CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET " + std::to_string(plane) + ")");
  if (mode != CUBLASLT_BATCH_MODE_STRIDED) lt_unmodelled(m, w + "'s batch mode is not CUBLASLT_BATCH_MODE_STRIDED");
  const auto min_ld = static_cast<std::int64_t>(std::max<std::uint64_t>(1, r.rows));
  if (r.ld < min_ld) {
    lt_invalid(m, w + "'s leading dimension " + std::to_string(r.ld) + " is less than its rows " + std::to_string(r.rows) + " (or 1)");
  }
  if (r.batch < 1) lt_invalid(m, w + "'s batch count is " + std::to_string(r.batch));
  if (r.stride < 0) lt_unmodelled(m, w + "'s batch stride is negative (" + std::to_string(r.stride) + ")");
  return r;
}

// An f32 operand as a reduced compute type reads it (CUBLAS_COMPUTE_32F_FAST_*): rounded to nearest
// even to `bits` significant bits (tf32 11, bf16 8, f16 11), with the format's subnormals below its
// smallest normal (2^-126 for tf32 and bf16, 2^-14 for f16) and, for f16, its range (magnitudes from
// 65520, which round past its largest 65504, are inf). bits = 24: the value itself. NaN and inf
// stay as they are. (The model rounds to nearest; whether a GPU rounds or truncates, or runs a
// 16-bit mode as TF32, which cuBLAS allows, is the contract tests' to bound: every one of them is
// within one unit of the last bit the mode keeps.)
struct operand_rounding {
  int bits = 24;
  bool f16_range = false;
  float operator()(float x) const noexcept {
    if (bits >= 24 || !std::isfinite(x) || x == 0.0f) return x;
    if (f16_range && !(std::fabs(x) < 65520.0f)) return std::copysign(std::numeric_limits<float>::infinity(), x);
    int exp = 0;
    (void)std::frexp(x, &exp);  // |x| = f 2^exp, f in [0.5, 1)
    const int lowest = (f16_range ? -14 : -126) - (bits - 1);  // (the spacing of the format's subnormals)
    const int e = std::max(exp - bits, lowest);
    return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(x), -e)), e));
  }
};

// torch's gelu(approximate='tanh'), which is what cuBLASLt's GELU epilogues compute.
inline double gelu_tanh(double x) noexcept {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
// Its derivative (DGELU's factor), written out here rather than taken from the op's definition, so that
// the model is a second statement of the formula.
inline double gelu_tanh_derivative(double x) noexcept {
  const double t = std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);
}
// The aux matrix: its address and leading dimension (column-major, D's shape); DGELU reads it,
// GELU_AUX writes it (`written`).
template <class T>
struct lt_aux {
  T* data = nullptr;
  std::int64_t ld = 0;
  bool written = false;
};

// The computation, once everything is read back and checked (T is the type of every matrix and of the
// bias).
template <class T>
void lt_compute(const lt_layout& la, bool trans_a, const lt_layout& lb, bool trans_b, const lt_layout& lc,
                const lt_layout& ld, const T* bias, std::int64_t bias_stride, bool relu, bool gelu, const matmul_args& args,
                std::int64_t k, operand_rounding round = {}, T* bias_grad = nullptr, char bias_grad_of = 0, lt_aux<T> aux = {}) {
  const auto* A = static_cast<const T*>(args.a);
  const auto* B = static_cast<const T*>(args.b);
  const auto* C = static_cast<const T*>(args.c);
  auto* D = static_cast<T*>(args.d);
  const double alpha = args.alpha, beta = args.beta;
  const auto rows = static_cast<std::int64_t>(ld.rows), cols = static_cast<std::int64_t>(ld.cols);
  for (std::int64_t p = 0; p < ld.batch; ++p) {
    const T* a = A + p * la.stride;
    const T* b = B + p * lb.stride;
    const T* c = beta != 0.0 ? C + p * lc.stride : nullptr;
    T* d = D + p * ld.stride;
    const T* bp = bias != nullptr ? bias + p * bias_stride : nullptr;
    for (std::int64_t j = 0; j < cols; ++j) {
      for (std::int64_t i = 0; i < rows; ++i) {
        double acc = 0.0;
        for (std::int64_t l = 0; l < k; ++l) {
          double av = trans_a ? a[l + i * la.ld] : a[i + l * la.ld];  // op(A)(i, l)
          double bv = trans_b ? b[j + l * lb.ld] : b[l + j * lb.ld];  // op(B)(l, j)
          if constexpr (std::is_same_v<T, float>) {
            if (round.bits < 24) av = round(static_cast<float>(av)), bv = round(static_cast<float>(bv));
          }
          acc += av * bv;
        }
        double v = alpha * acc;
        if (c != nullptr) v += beta * static_cast<double>(c[i + j * lc.ld]);
        if (bp != nullptr) v += static_cast<double>(bp[i]);
        if (relu) v = v > 0.0 ? v : 0.0;
        if (aux.written) aux.data[i + j * aux.ld] = static_cast<T>(v);  // (GELU's input)
        if (gelu) v = gelu_tanh(v);
        if (aux.data != nullptr && !aux.written) v *= gelu_tanh_derivative(static_cast<double>(aux.data[i + j * aux.ld]));
        d[i + j * ld.ld] = static_cast<T>(v);
      }
    }
  }
  // The bias gradient (BGRADA / BGRADB; one batch, checked by the caller): the sums over k of op(A)'s
  // rows (D's rows of them) or of op(B)'s columns (D's columns), in double, stored once.
  if (bias_grad != nullptr) {
    const bool of_a = bias_grad_of == 'A';
    const std::int64_t count = of_a ? rows : cols;
    for (std::int64_t x = 0; x < count; ++x) {
      double sum = 0.0;
      for (std::int64_t l = 0; l < k; ++l) {
        sum += of_a ? static_cast<double>(trans_a ? A[l + x * la.ld] : A[x + l * la.ld])
                    : static_cast<double>(trans_b ? B[x + l * lb.ld] : B[l + x * lb.ld]);
      }
      bias_grad[x] = static_cast<T>(sum);
    }
  }
}

}  // namespace detail

// Runs the product that `m`'s descriptors describe on the operands in `args` (host addresses), as
// cublasLtMatmul would (header comment). device_error for descriptors cuBLASLt would refuse, for what
// the model does not model, and for a call whose bias disagrees with the descriptor's.
inline void reference_matmul(const lt_matmul& m, const matmul_args& args) {
  using namespace detail;
  if (!m) {
    typex::detail::raise_message<device_error>(lt_model_prefix(m) + "the lt_matmul has no descriptors (it was moved from)");
  }

  // The operation: types, pointer mode, transposes, epilogue.
  const auto compute = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, "CUBLASLT_MATMUL_DESC_COMPUTE_TYPE");
  const auto scale = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_SCALE_TYPE, "CUBLASLT_MATMUL_DESC_SCALE_TYPE");
  const auto pointer_mode = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_POINTER_MODE, "CUBLASLT_MATMUL_DESC_POINTER_MODE");
  const auto transa = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_TRANSA, "CUBLASLT_MATMUL_DESC_TRANSA");
  const auto transb = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_TRANSB, "CUBLASLT_MATMUL_DESC_TRANSB");
  const auto transc = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_TRANSC, "CUBLASLT_MATMUL_DESC_TRANSC");
  const auto fill = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_FILL_MODE, "CUBLASLT_MATMUL_DESC_FILL_MODE");
  const auto epi = lt_desc_attr<std::uint32_t>(m, CUBLASLT_MATMUL_DESC_EPILOGUE, "CUBLASLT_MATMUL_DESC_EPILOGUE");

  std::uint32_t data_type = 0;
  operand_rounding round;
  if (compute == CUBLAS_COMPUTE_32F && scale == CUDA_R_32F) {
    data_type = CUDA_R_32F;
  } else if ((compute == CUBLAS_COMPUTE_32F_FAST_TF32 || compute == CUBLAS_COMPUTE_32F_FAST_16BF || compute == CUBLAS_COMPUTE_32F_FAST_16F) &&
             scale == CUDA_R_32F) {
    data_type = CUDA_R_32F;
    round.bits = compute == CUBLAS_COMPUTE_32F_FAST_16BF ? 8 : 11;
    round.f16_range = compute == CUBLAS_COMPUTE_32F_FAST_16F;
  } else if (compute == CUBLAS_COMPUTE_64F && scale == CUDA_R_64F) {
    data_type = CUDA_R_64F;
  } else {
    lt_unmodelled(m, std::string("compute type ") + std::to_string(compute) + " with scale type " + std::to_string(scale) +
                         " (modelled: CUBLAS_COMPUTE_32F and its FAST_TF32 / FAST_16BF / FAST_16F forms with CUDA_R_32F, "
                         "CUBLAS_COMPUTE_64F with CUDA_R_64F)");
  }
  if (pointer_mode != CUBLASLT_POINTER_MODE_HOST) {
    lt_unmodelled(m, std::string("pointer mode ") + std::to_string(pointer_mode) + " (alpha and beta are modelled as host scalars)");
  }
  const auto op = [&](std::int32_t t, const char* which) {
    // (CUBLAS_OP_C is CUBLAS_OP_T for real types.)
    if (t == CUBLAS_OP_N) return false;
    if (t == CUBLAS_OP_T || t == CUBLAS_OP_C) return true;
    lt_invalid(m, std::string(which) + " is " + std::to_string(t) + ", not a cublasOperation_t");
  };
  const bool trans_a = op(transa, "CUBLASLT_MATMUL_DESC_TRANSA");
  const bool trans_b = op(transb, "CUBLASLT_MATMUL_DESC_TRANSB");
  if (transc != CUBLAS_OP_N) lt_invalid(m, std::string("CUBLASLT_MATMUL_DESC_TRANSC is ") + std::to_string(transc) + " (only CUBLAS_OP_N is supported)");
  if (fill != CUBLAS_FILL_MODE_FULL) lt_unmodelled(m, std::string("fill mode ") + std::to_string(fill) + " (only CUBLAS_FILL_MODE_FULL)");

  bool bias_epilogue = false, relu = false, gelu = false, dgelu = false, gelu_aux = false;
  char bias_grad_of = 0;  // 'A' or 'B': the operand whose sums over k BGRADA / BGRADB write
  switch (epi) {
    case CUBLASLT_EPILOGUE_DEFAULT: break;
    case CUBLASLT_EPILOGUE_BIAS: bias_epilogue = true; break;
    case CUBLASLT_EPILOGUE_RELU: relu = true; break;
    case CUBLASLT_EPILOGUE_RELU_BIAS: relu = bias_epilogue = true; break;
    case CUBLASLT_EPILOGUE_GELU: gelu = true; break;
    case CUBLASLT_EPILOGUE_GELU_BIAS: gelu = bias_epilogue = true; break;
    case CUBLASLT_EPILOGUE_BGRADA: bias_grad_of = 'A'; break;
    case CUBLASLT_EPILOGUE_BGRADB: bias_grad_of = 'B'; break;
    case CUBLASLT_EPILOGUE_DGELU: dgelu = true; break;
    case CUBLASLT_EPILOGUE_GELU_AUX: gelu = gelu_aux = true; break;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: gelu = gelu_aux = bias_epilogue = true; break;
    default:
      lt_unmodelled(m, std::string("epilogue ") + std::to_string(epi) +
                           " (modelled: DEFAULT, BIAS, RELU, RELU_BIAS, GELU, GELU_BIAS, GELU_AUX, GELU_AUX_BIAS, BGRADA, BGRADB, "
                           "DGELU; RELU_AUX, DRELU and DGELU_BGRAD are not)");
  }

  // The layouts, and the shape rules cublasLtMatmul checks.
  const lt_layout la = read_layout(m, m.layout_a(), 'A');
  const lt_layout lb = read_layout(m, m.layout_b(), 'B');
  const lt_layout lc = read_layout(m, m.layout_c(), 'C');
  const lt_layout ld = read_layout(m, m.layout_d(), 'D');
  for (const lt_layout* l : {&la, &lb, &lc, &ld}) {
    if (l->type != data_type) {
      lt_unmodelled(m, std::string(1, l->which) + "'s data type is " + std::to_string(l->type) + ", the compute type's is " +
                           std::to_string(data_type) + " (mixed types are not modelled)");
    }
    if (l->batch != ld.batch) {
      lt_invalid(m, std::string(1, l->which) + "'s batch count " + std::to_string(l->batch) + " differs from D's " + std::to_string(ld.batch));
    }
  }
  const std::uint64_t a_rows = trans_a ? la.cols : la.rows, a_cols = trans_a ? la.rows : la.cols;
  const std::uint64_t b_rows = trans_b ? lb.cols : lb.rows, b_cols = trans_b ? lb.rows : lb.cols;
  const auto dims = [](std::uint64_t r, std::uint64_t c) { return std::to_string(r) + "x" + std::to_string(c); };
  if (a_rows != ld.rows || b_cols != ld.cols || a_cols != b_rows) {
    lt_invalid(m, std::string("op(A) is ") + dims(a_rows, a_cols) + ", op(B) " + dims(b_rows, b_cols) + ", D " + dims(ld.rows, ld.cols) +
                      " (op(A)·op(B) must have D's shape)");
  }
  if (lc.rows != ld.rows || lc.cols != ld.cols) lt_invalid(m, std::string("C is ") + dims(lc.rows, lc.cols) + ", D " + dims(ld.rows, ld.cols));
  if (ld.batch > 1 && ld.rows > 0 && ld.cols > 0 && ld.stride < ld.ld * static_cast<std::int64_t>(ld.cols)) {
    lt_unmodelled(m, std::string("D's batch stride ") + std::to_string(ld.stride) + " makes the batch's outputs overlap");
  }

  // The bias: the descriptor's pointer is the one used; the call's is a cross-check.
  const void* bias = nullptr;
  std::int64_t bias_stride = 0;
  if (bias_epilogue) {
    bias = lt_desc_attr<const void*>(m, CUBLASLT_MATMUL_DESC_BIAS_POINTER, "CUBLASLT_MATMUL_DESC_BIAS_POINTER");
    const auto bias_type = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE");
    bias_stride = lt_desc_attr<std::int64_t>(m, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, "CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE");
    if (bias == nullptr) lt_invalid(m, "the epilogue adds a bias, but CUBLASLT_MATMUL_DESC_BIAS_POINTER is null");
    // (-1, the default, is D's type.)
    if (bias_type != -1 && bias_type != static_cast<std::int32_t>(data_type)) {
      lt_unmodelled(m, std::string("bias data type ") + std::to_string(bias_type) + " differs from D's " + std::to_string(data_type));
    }
    if (bias_stride < 0) lt_unmodelled(m, std::string("negative bias batch stride ") + std::to_string(bias_stride));
    if (args.bias != nullptr && args.bias != bias) {
      lt_invalid(m, "the call's bias differs from the descriptor's CUBLASLT_MATMUL_DESC_BIAS_POINTER (the descriptor's is used)");
    }
  } else if (bias_grad_of != 0) {
    // The bias gradient: the descriptor's pointer receives it (D's type); the call's is a cross-check.
    bias = lt_desc_attr<const void*>(m, CUBLASLT_MATMUL_DESC_BIAS_POINTER, "CUBLASLT_MATMUL_DESC_BIAS_POINTER");
    const auto bias_type = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE");
    if (bias == nullptr) lt_invalid(m, "the epilogue writes a bias gradient, but CUBLASLT_MATMUL_DESC_BIAS_POINTER is null");
    if (bias_type != -1 && bias_type != static_cast<std::int32_t>(data_type)) {
      lt_unmodelled(m, std::string("bias data type ") + std::to_string(bias_type) + " differs from D's " + std::to_string(data_type));
    }
    if (args.bias != nullptr && args.bias != bias) {
      lt_invalid(m, "the call's bias differs from the descriptor's CUBLASLT_MATMUL_DESC_BIAS_POINTER (the descriptor's is used)");
    }
    // (what the gradient epilogues do with scales, batches and reduced-precision operands is not
    // documented: modelled for the plain product only, which is what typex asks for)
    if (ld.batch != 1) lt_unmodelled(m, std::string("a bias-gradient epilogue over ") + std::to_string(ld.batch) + " batches");
    if (args.alpha != 1.0f || args.beta != 0.0f) lt_unmodelled(m, "a bias-gradient epilogue with alpha != 1 or beta != 0");
    if (round.bits < 24) lt_unmodelled(m, "a bias-gradient epilogue with a reduced-precision compute type");
  } else if (args.bias != nullptr) {
    lt_invalid(m, std::string("the call passes a bias, but the descriptor's epilogue (") + std::to_string(epi) + ") adds none");
  }

  // The aux matrix (DGELU's input, GELU_AUX's output): the descriptor's pointer and leading dimension
  // (there is no call argument).
  const void* aux = nullptr;
  std::int64_t aux_ld = 0;
  if (dgelu || gelu_aux) {
    aux = lt_desc_attr<const void*>(m, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER");
    aux_ld = lt_desc_attr<std::int64_t>(m, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD");
    const auto aux_type = lt_desc_attr<std::int32_t>(m, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE");
    if (aux == nullptr) lt_invalid(m, "the epilogue reads or writes GELU's input, but CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER is null");
    if (aux_ld < static_cast<std::int64_t>(ld.rows) || aux_ld % 8 != 0) {
      lt_invalid(m, std::string("CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD is ") + std::to_string(aux_ld) +
                        "; it must be a multiple of 8 and at least D's rows, " + std::to_string(ld.rows));
    }
    // (-1, the default, is D's type.)
    if (aux_type != -1 && aux_type != static_cast<std::int32_t>(data_type)) {
      lt_unmodelled(m, std::string("aux data type ") + std::to_string(aux_type) + " differs from D's " + std::to_string(data_type));
    }
    if (ld.batch != 1) lt_unmodelled(m, std::string("an aux epilogue over ") + std::to_string(ld.batch) + " batches");
    if (dgelu && (args.alpha != 1.0f || args.beta != 0.0f)) lt_unmodelled(m, "the DGELU epilogue with alpha != 1 or beta != 0");
    if (dgelu && round.bits < 24) lt_unmodelled(m, "the DGELU epilogue with a reduced-precision compute type");
  }

  // The operands the shapes say are read.
  const bool empty = ld.rows == 0 || ld.cols == 0;
  const bool reads_ab = !empty && a_cols > 0;
  if (!empty && args.d == nullptr) lt_invalid(m, "D's pointer is null");
  if (reads_ab && (args.a == nullptr || args.b == nullptr)) lt_invalid(m, "A's or B's pointer is null");
  if (!empty && args.beta != 0.0f && args.c == nullptr) lt_invalid(m, "beta is not 0 but C's pointer is null");
  if (empty) return;

  const auto k = static_cast<std::int64_t>(a_cols);
  // (a bias gradient is written, not read: the pointer is the model's output there)
  void* const bias_grad = bias_grad_of != 0 ? const_cast<void*>(bias) : nullptr;
  if (bias_grad != nullptr) bias = nullptr;
  if (data_type == CUDA_R_32F) {
    lt_compute<float>(la, trans_a, lb, trans_b, lc, ld, static_cast<const float*>(bias), bias_stride, relu, gelu, args, k, round,
                      static_cast<float*>(bias_grad), bias_grad_of, {static_cast<float*>(const_cast<void*>(aux)), aux_ld, gelu_aux});
  } else {
    lt_compute<double>(la, trans_a, lb, trans_b, lc, ld, static_cast<const double*>(bias), bias_stride, relu, gelu, args, k, {},
                       static_cast<double*>(bias_grad), bias_grad_of, {static_cast<double*>(const_cast<void*>(aux)), aux_ld, gelu_aux});
  }
}

}  // namespace typex::cuda
