// typex/backend/cuda/lt.hpp — one matrix product through cuBLASLt: its descriptors, built with the real
// library at plan time.
//
// typex's tensors are row-major; cuBLAS(Lt) is column-major. A row-major matrix X[r, c] with row stride
// ld is, byte for byte, the column-major matrix Xᵀ[c, r] with leading dimension ld. So the row-major
// product C[m, n] = op(A)[m, k] · op(B)[k, n] is computed as the column-major product
// Cᵀ[n, m] = op(B)ᵀ[n, k] · op(A)ᵀ[k, m]: cuBLAS's "A" is typex's B and cuBLAS's "B" is typex's A (what
// ggml and llm.c do). For torch's linear, Y[m, n] = X[m, k] · W[n, k]ᵀ + b[n], that gives
// Yᵀ = W·Xᵀ with cuBLAS A = W (column-major k×n, ld k, op T), B = X (column-major k×m, ld k, op N),
// C = D = column-major n×m (ld n), and the bias indexed by D's rows (n), as cuBLASLt's BIAS epilogue
// wants.
//
// An lt_matmul owns (RAII, move-only) the cublasLtMatmulDesc_t and the four cublasLtMatrixLayout_t of
// A, B, C and D. Creating and configuring these needs no GPU and no driver (cuBLASLt's descriptor calls
// are host-only), so the CPU build constructs exactly the objects the GPU run hands to cublasLtMatmul,
// and the emulated device's reference model (lt_reference.hpp) reads them back attribute by attribute.
// What does need a GPU, the cublasLtHandle_t and the algorithm (cublasLtMatmulAlgoGetHeuristic), is the
// native device's business: `algo` below is its slot.
//
// The bias pointer is part of the descriptor (CUBLASLT_MATMUL_DESC_BIAS_POINTER), not of the call. The
// lowering sets it once, at plan time, with set_bias_pointer(): typex's arena never moves while a plan
// lives, so the address is known then. Neither device sets it per call; matmul_args::bias (device.hpp)
// is only a cross-check, which both devices make against the descriptor's attribute. Because the bias
// the devices use is the one read back from the descriptor, a wrong pointer in the descriptor cannot
// hide behind a right one in the call.
//
// Epilogues: cuBLASLt's GELU epilogue is the tanh approximation
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), which is torch's gelu(approximate='tanh'). typex's default
// gelu (approximate='none') is the exact erf form; it is deliberately not mapped to any epilogue here:
// the lowering runs it as the BIAS epilogue followed by its own erf-GELU kernel. That cuBLASLt's GELU
// really is the tanh form (NVIDIA documents it; PyTorch and TensorRT-LLM rely on it) is a GPU contract
// test's to confirm: the emulator's model assumes it and cannot check it.
//
// Types: f32 (CUBLAS_COMPUTE_32F, scale type CUDA_R_32F; not TF32, unless a reduced matmul_precision
// (device.hpp) asks for CUBLAS_COMPUTE_32F_FAST_TF32 / _16BF / _16F: f32 operands read rounded, f32
// sums) and f64 (CUBLAS_COMPUTE_64F, scale type CUDA_R_64F). matmul_args carries alpha and beta as float: for an f64 product the native device
// passes them to cublasLtMatmul as double (the scale type says which).
//
// Host C++ only; it includes <cublasLt.h> (only typex/backend/cuda may include CUDA headers). Users link
// -lcublasLt (no libcudart is needed for anything in this header).
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>

#include <cublasLt.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace typex::cuda {

// The activation cuBLASLt applies to alpha·op(A)·op(B) + beta·C (+ bias) before storing D.
enum class epilogue : unsigned char {
  none,            // CUBLASLT_EPILOGUE_DEFAULT
  bias,            // CUBLASLT_EPILOGUE_BIAS: + bias[row of D]
  relu,            // CUBLASLT_EPILOGUE_RELU
  relu_bias,       // CUBLASLT_EPILOGUE_RELU_BIAS: relu(· + bias)
  gelu_tanh,       // CUBLASLT_EPILOGUE_GELU: the tanh approximation (not erf; see the header comment)
  gelu_tanh_bias,  // CUBLASLT_EPILOGUE_GELU_BIAS: gelu_tanh(· + bias)
  // The bias-gradient epilogues: D as `none` stores it, and the bias pointer receives the sums over
  // k of one operand (a linear layer's bias gradient, next to its weight gradient). In typex's
  // row-major terms (cuBLAS's A is typex's B, its B typex's A: the header comment):
  bgrad_a,  // CUBLASLT_EPILOGUE_BGRADA: n sums, bias[j] = Σ_l op(B)[l, j] (the right operand's columns)
  bgrad_b,  // CUBLASLT_EPILOGUE_BGRADB: m sums, bias[i] = Σ_l op(A)[i, l] (the left operand's rows)
  // GELU's gradient (the tanh form's, as the GELU epilogues'): D = (alpha·op(A)·op(B)) ⊙ gelu_tanh'(aux),
  // aux the GELU's input, an input matrix of D's shape and type at the descriptor's
  // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER with leading dimension EPILOGUE_AUX_LD (in typex's
  // row-major terms its row stride: a multiple of 8, at least n). torch's gelu_backward(g, x,
  // approximate='tanh') of a product g.
  dgelu_tanh,  // CUBLASLT_EPILOGUE_DGELU
  // The tanh GELU of the forward that also stores its input (the pre-activation, after the bias) in
  // the aux matrix (same layout rules as DGELU's): the value gelu_backward reads in training.
  gelu_tanh_aux,       // CUBLASLT_EPILOGUE_GELU_AUX
  gelu_tanh_aux_bias,  // CUBLASLT_EPILOGUE_GELU_AUX_BIAS: gelu_tanh_aux(· + bias)
};

constexpr std::string_view name(epilogue e) noexcept {
  switch (e) {
    case epilogue::none: return "none";
    case epilogue::bias: return "bias";
    case epilogue::relu: return "relu";
    case epilogue::relu_bias: return "relu_bias";
    case epilogue::gelu_tanh: return "gelu_tanh";
    case epilogue::gelu_tanh_bias: return "gelu_tanh_bias";
    case epilogue::bgrad_a: return "bgrad_a";
    case epilogue::bgrad_b: return "bgrad_b";
    case epilogue::dgelu_tanh: return "dgelu_tanh";
    case epilogue::gelu_tanh_aux: return "gelu_tanh_aux";
    case epilogue::gelu_tanh_aux_bias: return "gelu_tanh_aux_bias";
  }
  return "?";
}

constexpr bool has_bias(epilogue e) noexcept {
  return e == epilogue::bias || e == epilogue::relu_bias || e == epilogue::gelu_tanh_bias || e == epilogue::gelu_tanh_aux_bias;
}

// Whether the epilogue writes a bias gradient to the bias pointer (instead of reading a bias there).
constexpr bool writes_bias_gradient(epilogue e) noexcept { return e == epilogue::bgrad_a || e == epilogue::bgrad_b; }

// Whether the epilogue reads an input matrix at the descriptor's aux pointer (set_aux), or writes one.
constexpr bool reads_aux(epilogue e) noexcept { return e == epilogue::dgelu_tanh; }
constexpr bool writes_aux(epilogue e) noexcept { return e == epilogue::gelu_tanh_aux || e == epilogue::gelu_tanh_aux_bias; }
constexpr bool uses_aux(epilogue e) noexcept { return reads_aux(e) || writes_aux(e); }

// Whether the descriptor's bias pointer is used at all.
constexpr bool uses_bias_pointer(epilogue e) noexcept { return has_bias(e) || writes_bias_gradient(e); }

// The same activation with a bias added first (none → bias, relu → relu_bias, gelu_tanh → gelu_tanh_bias).
constexpr epilogue with_bias(epilogue e) noexcept {
  switch (e) {
    case epilogue::none: return epilogue::bias;
    case epilogue::relu: return epilogue::relu_bias;
    case epilogue::gelu_tanh: return epilogue::gelu_tanh_bias;
    case epilogue::gelu_tanh_aux: return epilogue::gelu_tanh_aux_bias;
    default: return e;
  }
}

constexpr cublasLtEpilogue_t to_cublaslt(epilogue e) noexcept {
  switch (e) {
    case epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case epilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case epilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case epilogue::gelu_tanh: return CUBLASLT_EPILOGUE_GELU;
    case epilogue::gelu_tanh_bias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case epilogue::bgrad_a: return CUBLASLT_EPILOGUE_BGRADA;
    case epilogue::bgrad_b: return CUBLASLT_EPILOGUE_BGRADB;
    case epilogue::dgelu_tanh: return CUBLASLT_EPILOGUE_DGELU;
    case epilogue::gelu_tanh_aux: return CUBLASLT_EPILOGUE_GELU_AUX;
    case epilogue::gelu_tanh_aux_bias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

namespace detail {

// cuBLAS's name for a status ("CUBLAS_STATUS_INVALID_VALUE"), spelled here rather than asked of
// cublasLtGetStatusName, so that a message never depends on the library answering.
constexpr std::string_view cublas_status_name(cublasStatus_t s) noexcept {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "an unknown cuBLAS status";
}

// Throws device_error naming the cuBLASLt call, the status and what was being built, unless `s` is
// CUBLAS_STATUS_SUCCESS.
inline void check_lt(cublasStatus_t s, std::string_view call, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) [[likely]] return;
  std::string message = "cuBLASLt: ";
  message.append(call).append(" failed with ").append(cublas_status_name(s));
  message.append(" (status ").append(std::to_string(static_cast<int>(s))).append(")");
  if (!what.empty()) message.append(" while building ").append(what);
  typex::detail::raise_message<device_error>(std::move(message));
}

// The cuBLASLt data, compute and scale types of a typex dtype (f32 or f64; others refused).
struct lt_types {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

inline lt_types lt_types_of(dtype t, matmul_precision precision = matmul_precision::f32) {
  if (t == dtype::f32) {
    switch (precision) {
      case matmul_precision::f32: break;
      case matmul_precision::tf32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F};
      case matmul_precision::bf16: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, CUDA_R_32F};
      case matmul_precision::f16: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F, CUDA_R_32F};
    }
    return {CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
  }
  if (t == dtype::f64) return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
  std::string message = "cuBLASLt matrix product: dtype ";
  message.append(name(t)).append(" is not supported by typex's CUDA backend (f32 and f64 are)");
  typex::detail::raise_message<unsupported_error>(std::move(message));
}

// An extent or stride given to a factory: not negative, and (for extents) within int32, which is what
// cuBLASLt documents it supports ("usually only values that can be expressed as int32_t").
inline void check_extent(std::int64_t v, std::string_view what, std::string_view product) {
  if (v < 0) {
    std::string message = "cuBLASLt matrix product ";
    message.append(product).append(": ").append(what).append(" is ").append(std::to_string(v));
    message.append("; it must not be negative");
    typex::detail::raise_message<argument_error>(std::move(message));
  }
  if (v > std::numeric_limits<std::int32_t>::max()) {
    std::string message = "cuBLASLt matrix product ";
    message.append(product).append(": ").append(what).append(" is ").append(std::to_string(v));
    message.append(", more than cuBLASLt supports (2^31 - 1)");
    typex::detail::raise_message<unsupported_error>(std::move(message));
  }
}

}  // namespace detail

// The geometry of a (batched) row-major product C[m, n] = op(A)[m, k] · op(B)[k, n] over typex's
// storage, where an operand may be read transposed in place (a permute the planner absorbed):
//   A is stored row-major as [m, k] (row stride lda ≥ k) or, with transpose_a, as [k, m] (lda ≥ m);
//   B is stored row-major as [k, n] (ldb ≥ n) or, with transpose_b, as [n, k] (ldb ≥ k);
//   C (and D, the same layout) is row-major [m, n] with row stride ldc ≥ n.
// A leading dimension of 0 means the dense one (the row length). The batch's matrices follow each other
// at stride_a / stride_b / stride_c elements: 0 for A or B is the same matrix for every batch (a
// broadcast); 0 for C means the dense stride ldc·m (outputs may not overlap).
struct matmul_geometry {
  std::int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// The descriptors of one cuBLASLt matrix product (see the header comment). Move-only; destroying it
// destroys the descriptors. The handles are for cublasLtMatmul (native device) and for the reference
// model (emulated device); the model must read everything from them, never from the C++ fields below
// (which describe, for messages and for the native device's algorithm search).
struct lt_matmul {
  lt_matmul() = default;
  lt_matmul(const lt_matmul&) = delete;
  lt_matmul& operator=(const lt_matmul&) = delete;
  lt_matmul(lt_matmul&& o) noexcept { swap(o); }
  lt_matmul& operator=(lt_matmul&& o) noexcept {
    if (this != &o) {
      lt_matmul gone(std::move(o));
      swap(gone);
    }
    return *this;
  }
  ~lt_matmul() { release(); }

  cublasLtMatmulDesc_t desc() const noexcept { return desc_; }
  cublasLtMatrixLayout_t layout_a() const noexcept { return a_; }
  cublasLtMatrixLayout_t layout_b() const noexcept { return b_; }
  cublasLtMatrixLayout_t layout_c() const noexcept { return c_; }
  cublasLtMatrixLayout_t layout_d() const noexcept { return d_; }
  explicit operator bool() const noexcept { return desc_ != nullptr; }

  // Sets CUBLASLT_MATMUL_DESC_BIAS_POINTER (a device address of D-rows elements of the product's
  // dtype: the bias read, or with bgrad_a / bgrad_b the bias gradient written, n or m of them). The
  // lowering calls it once at plan time; see the header comment.
  void set_bias_pointer(const void* bias) {
    detail::check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
                     "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_BIAS_POINTER)", label);
  }

  // The descriptor's CUBLASLT_MATMUL_DESC_BIAS_POINTER, read back from cuBLASLt.
  const void* bias_pointer() const {
    const void* p = nullptr;
    std::size_t written = 0;
    detail::check_lt(cublasLtMatmulDescGetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof p, &written),
                     "cublasLtMatmulDescGetAttribute(CUBLASLT_MATMUL_DESC_BIAS_POINTER)", label);
    return p;
  }

  // Sets CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER and _AUX_LD (uses_aux epilogues: the matrix the
  // epilogue reads or writes, `ld` elements between typex's rows, a multiple of 8 and at least n, as
  // cuBLASLt documents). Like the bias pointer, set once at plan time (the lowering sets an address of the
  // element size's alignment first, for the heuristic's query, then the buffer's).
  void set_aux(const void* aux, std::int64_t ld) {
    if (geometry.batch > 1) {  // (EPILOGUE_AUX_BATCH_STRIDE is not set: every batch would read the first matrix)
      typex::detail::raise_message<argument_error>(std::string("cuBLASLt matrix product ") + label + ": an aux matrix for a batched product (" +
                                                   std::to_string(geometry.batch) + " batches) is not supported; typex sets no aux batch stride");
    }
    if (ld < geometry.n || ld % 8 != 0) {
      typex::detail::raise_message<argument_error>(std::string("cuBLASLt matrix product ") + label + ": the epilogue's aux leading dimension " +
                                                   std::to_string(ld) + " must be a multiple of 8 and at least n = " + std::to_string(geometry.n));
    }
    detail::check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux),
                     "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER)", label);
    detail::check_lt(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld),
                     "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD)", label);
  }

  // set_aux with a placeholder address of the element size's alignment, the least a call gives: what
  // a lowering sets before asking the device for an algorithm (can_matmul), then the buffer's.
  void set_aux_for_query(std::int64_t ld) { set_aux(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(itemsize(type))), ld); }

  // For the native device's cublasLtMatmul and its heuristic query (what the descriptors also say).
  cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale_type = CUDA_R_32F;
  typex::dtype type = typex::dtype::f32;
  epilogue epi = epilogue::none;
  matmul_geometry geometry{};
  // The algorithm, chosen once on the GPU by the native device with cublasLtMatmulAlgoGetHeuristic at
  // this product's first run and reused after (descriptors are per plan step, so this slot is the
  // per-shape cache). Written only by the native device, on its stream's thread; empty on the emulator.
  mutable std::optional<cublasLtMatmulAlgo_t> algo;
  // What the product is, for messages: "linear m=7 n=33 k=5 f32 epilogue=relu_bias".
  std::string label;

  // Builds the descriptors for a geometry (the factories below call this). Public so that the
  // lowering can describe products the factories do not name; everything is checked.
  static lt_matmul build(const matmul_geometry& g, epilogue e, typex::dtype t, std::string label,
                         matmul_precision precision = matmul_precision::f32);

 private:
  void swap(lt_matmul& o) noexcept {
    std::swap(desc_, o.desc_);
    std::swap(a_, o.a_);
    std::swap(b_, o.b_);
    std::swap(c_, o.c_);
    std::swap(d_, o.d_);
    std::swap(compute_type, o.compute_type);
    std::swap(scale_type, o.scale_type);
    std::swap(type, o.type);
    std::swap(epi, o.epi);
    std::swap(geometry, o.geometry);
    std::swap(algo, o.algo);
    std::swap(label, o.label);
  }
  // (Destroy cannot fail for a descriptor that Create gave; its status is ignored in a destructor.)
  void release() noexcept {
    if (d_ != nullptr) cublasLtMatrixLayoutDestroy(d_);
    if (c_ != nullptr) cublasLtMatrixLayoutDestroy(c_);
    if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
    if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
    if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
    desc_ = nullptr;
    a_ = b_ = c_ = d_ = nullptr;
  }

  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
};

inline lt_matmul lt_matmul::build(const matmul_geometry& g0, epilogue e, typex::dtype t, std::string label, matmul_precision precision) {
  using detail::check_extent;
  using detail::check_lt;
  check_extent(g0.m, "m", label);
  check_extent(g0.n, "n", label);
  check_extent(g0.k, "k", label);
  check_extent(g0.batch, "the batch count", label);
  if (g0.batch < 1) {
    typex::detail::raise_message<argument_error>(std::string("cuBLASLt matrix product ") + label + ": the batch count is 0; it must be at least 1");
  }
  // Dense leading dimensions where none is given, then each checked against its row length.
  matmul_geometry g = g0;
  const std::int64_t a_row = g.transpose_a ? g.m : g.k;
  const std::int64_t b_row = g.transpose_b ? g.k : g.n;
  if (g.lda == 0) g.lda = a_row;
  if (g.ldb == 0) g.ldb = b_row;
  if (g.ldc == 0) g.ldc = g.n;
  const auto check_ld = [&](std::int64_t ld, std::int64_t row, const char* which) {
    // (cuBLAS wants ld ≥ max(1, rows) of the column-major matrix, i.e. of typex's row length.)
    if (ld < std::max<std::int64_t>(1, row)) {
      std::string message = std::string("cuBLASLt matrix product ") + label + ": " + which + " is " + std::to_string(ld) +
                            ", less than its row length " + std::to_string(row) + " (or 1)";
      typex::detail::raise_message<argument_error>(std::move(message));
    }
  };
  check_ld(g.lda, a_row, "lda");
  check_ld(g.ldb, b_row, "ldb");
  check_ld(g.ldc, g.n, "ldc");
  const auto check_stride = [&](std::int64_t v, const char* which) {
    if (v < 0) {
      typex::detail::raise_message<argument_error>(std::string("cuBLASLt matrix product ") + label + ": " + which + " is " +
                                                   std::to_string(v) + "; it must not be negative");
    }
  };
  check_stride(g.stride_a, "stride_a");
  check_stride(g.stride_b, "stride_b");
  check_stride(g.stride_c, "stride_c");
  if (g.stride_c == 0) g.stride_c = g.ldc * g.m;
  if (g.batch > 1 && g.stride_c < g.ldc * g.m) {
    typex::detail::raise_message<argument_error>(std::string("cuBLASLt matrix product ") + label + ": stride_c " +
                                                 std::to_string(g.stride_c) + " makes the batch's outputs overlap (it must be at least ldc·m = " +
                                                 std::to_string(g.ldc * g.m) + ")");
  }

  const detail::lt_types types = detail::lt_types_of(t, precision);
  lt_matmul r;
  r.label = std::move(label);
  r.compute_type = types.compute;
  r.scale_type = types.scale;
  r.type = t;
  r.epi = e;
  r.geometry = g;
  const std::string& what = r.label;

  check_lt(cublasLtMatmulDescCreate(&r.desc_, types.compute, types.scale), "cublasLtMatmulDescCreate", what);
  // Column-major terms (header comment): cuBLAS A is typex's B, cuBLAS B is typex's A.
  const std::int32_t trans_a = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::int32_t trans_b = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(r.desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a),
           "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_TRANSA)", what);
  check_lt(cublasLtMatmulDescSetAttribute(r.desc_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b),
           "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_TRANSB)", what);
  const std::uint32_t epi = to_cublaslt(e);
  check_lt(cublasLtMatmulDescSetAttribute(r.desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
           "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_EPILOGUE)", what);

  // cuBLAS A (typex B): stored column-major as [n, k] (op N) or [k, n] (op T), ld = ldb.
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  check_lt(cublasLtMatrixLayoutCreate(&r.a_, types.data, u(g.transpose_b ? g.k : g.n), u(g.transpose_b ? g.n : g.k), g.ldb),
           "cublasLtMatrixLayoutCreate(A)", what);
  // cuBLAS B (typex A): stored column-major as [k, m] (op N) or [m, k] (op T), ld = lda.
  check_lt(cublasLtMatrixLayoutCreate(&r.b_, types.data, u(g.transpose_a ? g.m : g.k), u(g.transpose_a ? g.k : g.m), g.lda),
           "cublasLtMatrixLayoutCreate(B)", what);
  // C and D: column-major [n, m], ld = ldc.
  check_lt(cublasLtMatrixLayoutCreate(&r.c_, types.data, u(g.n), u(g.m), g.ldc), "cublasLtMatrixLayoutCreate(C)", what);
  check_lt(cublasLtMatrixLayoutCreate(&r.d_, types.data, u(g.n), u(g.m), g.ldc), "cublasLtMatrixLayoutCreate(D)", what);

  if (g.batch > 1) {
    const std::int32_t count = static_cast<std::int32_t>(g.batch);
    const std::pair<cublasLtMatrixLayout_t, std::int64_t> strided[] = {
        {r.a_, g.stride_b}, {r.b_, g.stride_a}, {r.c_, g.stride_c}, {r.d_, g.stride_c}};
    for (const auto& [layout, stride] : strided) {
      check_lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
               "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)", what);
      check_lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
               "cublasLtMatrixLayoutSetAttribute(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)", what);
    }
  }
  return r;
}

namespace detail {
inline std::string product_label(std::string_view kind, const matmul_geometry& g, dtype t, epilogue e,
                                 matmul_precision precision = matmul_precision::f32) {
  std::string s(kind);
  s.append(" m=").append(std::to_string(g.m)).append(" n=").append(std::to_string(g.n));
  s.append(" k=").append(std::to_string(g.k));
  if (g.batch != 1) s.append(" batch=").append(std::to_string(g.batch));
  if (g.transpose_a) s.append(" A^T");
  if (g.transpose_b) s.append(" B^T");
  s.append(" ").append(name(t));
  if (t == dtype::f32 && precision != matmul_precision::f32) s.append(" (").append(name(precision)).append(" compute)");
  s.append(" epilogue=").append(name(e));
  return s;
}
}  // namespace detail

// torch's linear, Y[m, n] = act(X[m, k] · W[n, k]ᵀ (+ b[n])), all dense row-major. `e` is the
// activation; has_bias adds the bias to it (relu with a bias is RELU_BIAS). An `e` that already names a
// bias (epilogue::relu_bias) needs has_bias. The bias pointer is set afterwards with
// set_bias_pointer(). cuBLAS's A is W, its B is X (header comment).
inline lt_matmul make_linear(std::int64_t m, std::int64_t n, std::int64_t k, epilogue e, bool has_bias,
                             typex::dtype t = typex::dtype::f32, matmul_precision precision = matmul_precision::f32) {
  const matmul_geometry g{.m = m, .n = n, .k = k, .transpose_a = false, .transpose_b = true};
  if (has_bias) e = with_bias(e);
  std::string label = detail::product_label("linear", g, t, e, precision);
  if (!has_bias && cuda::has_bias(e)) {
    typex::detail::raise_message<argument_error>(std::string("cuBLASLt matrix product ") + label + ": epilogue " + std::string(name(e)) +
                                                 " adds a bias, but has_bias is false");
  }
  return lt_matmul::build(g, e, t, std::move(label), precision);
}

// matmul / bmm over row-major operands, possibly read transposed in place and batched (matmul_geometry).
inline lt_matmul make_matmul(const matmul_geometry& g, epilogue e = epilogue::none, typex::dtype t = typex::dtype::f32,
                             matmul_precision precision = matmul_precision::f32) {
  return lt_matmul::build(g, e, t, detail::product_label("matmul", g, t, e, precision), precision);
}

// The same, positionally: lda / ldb of 0 are the dense ones; C is dense (ldc = n, stride_c 0 = m·n).
inline lt_matmul make_matmul(std::int64_t m, std::int64_t n, std::int64_t k, bool transpose_a, bool transpose_b,
                             std::int64_t lda, std::int64_t ldb, std::int64_t batch = 1, std::int64_t stride_a = 0,
                             std::int64_t stride_b = 0, std::int64_t stride_c = 0, typex::dtype t = typex::dtype::f32) {
  return make_matmul(matmul_geometry{.m = m, .n = n, .k = k, .transpose_a = transpose_a, .transpose_b = transpose_b,
                                     .lda = lda, .ldb = ldb, .ldc = 0, .batch = batch, .stride_a = stride_a,
                                     .stride_b = stride_b, .stride_c = stride_c},
                     epilogue::none, t);
}

// The call's operands for a row-major product C = op(A)·op(B) (matmul_geometry's A, B, C): cuBLAS's A
// is typex's B and cuBLAS's B is typex's A (header comment), so they are swapped here, once, rather
// than at every call site. D is `out`, and C is `out` too (read only when beta is not 0). For linear,
// a is X and b is W.
inline matmul_args row_major_operands(const void* a, const void* b, void* out, float alpha = 1.0f, float beta = 0.0f) {
  matmul_args r;
  r.a = b;
  r.b = a;
  r.c = out;
  r.d = out;
  r.alpha = alpha;
  r.beta = beta;
  return r;
}

}  // namespace typex::cuda
