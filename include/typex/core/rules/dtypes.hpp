// typex/core/rules/dtypes.hpp — what an op does with its operands' dtypes, as PyTorch does on the CPU.
//
// Most ops promote (torch.result_type: promote_types between tensors; a Python-style scalar joins
// a tensor only when it is of a higher category: an integer scalar makes a bool tensor i64, a
// floating one makes a bool or integer tensor f32, the default dtype). Some refuse:
//
//   a - b with a bool operand          "Subtraction, the `-` operator, with two bool tensors is not supported. ..."
//   -x on bool                         "Negation, the `-` operator, on a bool tensor is not supported. ..."
//   matmul / mm / linear, a != b       "expected m1 and m2 to have the same dtype, but got: double != float"
//   bmm, a != b                        "expected scalar type Double but found Float"
//   linear with a bias / addmm:        "self and mat2 must have the same dtype, but got Double and Float"
//     the bias first, then the input   "mat1 and mat2 must have the same dtype, but got Float and Double"
//   matmul / bmm / pow of two bools    "\"addmm_impl_cpu_\" not implemented for 'Bool'" (PyTorch has no kernel)
//
// Each rule here is a constexpr function of dtypes, so that the ops' compile-time rules and the
// kernels' run-time choice of dtype are one code, and a test runs every rule over the whole dtype
// grid against PyTorch's own answers (tools/dtype_grid.py, tests/unit/core/dtype_grid.cpp). A
// refusal's sentence holds PyTorch's words and then typex's fix.
#pragma once

#include <typex/core/detail/shape_algebra.hpp>
#include <typex/core/dtype.hpp>
#include <typex/core/sentence.hpp>

#include <string_view>
#include <type_traits>

namespace typex {

// An operand as dtype rules see it: a tensor's dtype, or the kind of a Python-style scalar.
enum class scalar_kind : unsigned char { none, boolean, integer, floating };

struct operand_dtype {
  dtype type = dtype::f32;            // a tensor's dtype (ignored for a scalar)
  scalar_kind scalar = scalar_kind::none;
  constexpr bool is_scalar() const noexcept { return scalar != scalar_kind::none; }
  constexpr bool is_bool() const noexcept { return is_scalar() ? scalar == scalar_kind::boolean : type == dtype::b8; }
};

template <class T>
constexpr operand_dtype scalar_operand() noexcept {
  if constexpr (std::is_same_v<T, bool>) return {dtype::b8, scalar_kind::boolean};
  else if constexpr (std::is_floating_point_v<T>) return {dtype::f32, scalar_kind::floating};
  else return {dtype::i64, scalar_kind::integer};
}

enum class dtype_refusal : unsigned char {
  none,
  sub_two_bools,  // a - b, both bool
  sub_bool,       // a - b, one bool
  neg_bool,       // -x, x bool
  bool_addmm,     // matmul / mm / linear of two bools: PyTorch has no bool kernel
  bool_bmm,       // bmm of two bools
  bool_pow,       // pow of two bool tensors
  m1_m2,          // matmul / mm / linear without bias, of two dtypes
  scalar_type,    // bmm of two dtypes
  self_mat2,      // linear's bias / addmm's self of another dtype than the weight / mat2
  mat1_mat2,      // linear with a bias / addmm: input and weight of two dtypes
};

// An op's result dtype, or why PyTorch refuses the operands (a and b: the dtypes its words name;
// result: after a refusal, the dtype the op is given anyway, so that nothing after it fails too:
// the promoted one for mixed matrices, which is the weight's in an f32 input to an f64 layer and the
// table's in integer one-hot rows times a float table).
// (A structural type: rules pass it as a template argument.)
struct dtype_verdict {
  dtype result = dtype::f32;
  dtype_refusal refusal = dtype_refusal::none;
  dtype a = dtype::f32, b = dtype::f32;
  constexpr bool ok() const noexcept { return refusal == dtype_refusal::none; }
};

namespace detail {
constexpr int dtype_category(dtype d) noexcept { return d == dtype::b8 ? 0 : (is_floating_point(d) ? 2 : 1); }
constexpr int scalar_category(scalar_kind k) noexcept {
  return k == scalar_kind::boolean ? 0 : (k == scalar_kind::integer ? 1 : 2);
}
}  // namespace detail

// torch.result_type of two operands (at least one a tensor).
constexpr dtype result_type(operand_dtype a, operand_dtype b) noexcept {
  if (a.is_scalar() && !b.is_scalar()) return result_type(b, a);
  if (!b.is_scalar()) return promote_types(a.type, b.type);
  if (detail::scalar_category(b.scalar) <= detail::dtype_category(a.type)) return a.type;
  return b.scalar == scalar_kind::integer ? dtype::i64 : dtype::f32;  // (PyTorch's default dtypes)
}

// add, mul, maximum, ...: the result type.
constexpr dtype_verdict promoting_dtypes(operand_dtype a, operand_dtype b) noexcept {
  return {.result = result_type(a, b)};
}
// sub (and rsub): as add, but never with a bool.
constexpr dtype_verdict sub_dtypes(operand_dtype a, operand_dtype b) noexcept {
  if (a.is_bool() && b.is_bool()) return {.result = result_type(a, b), .refusal = dtype_refusal::sub_two_bools};
  if (a.is_bool() || b.is_bool()) return {.result = result_type(a, b), .refusal = dtype_refusal::sub_bool};
  return promoting_dtypes(a, b);
}
// pow(tensor, tensor): promotes; two bools have no kernel.
constexpr dtype_verdict pow_dtypes(operand_dtype a, operand_dtype b) noexcept {
  if (a.is_bool() && b.is_bool() && !a.is_scalar() && !b.is_scalar())
    return {.result = dtype::b8, .refusal = dtype_refusal::bool_pow, .a = dtype::b8, .b = dtype::b8};
  return promoting_dtypes(a, b);
}
// neg: keeps the dtype; not on bool.
constexpr dtype_verdict neg_dtypes(dtype a) noexcept {
  if (a == dtype::b8) return {.result = a, .refusal = dtype_refusal::neg_bool};
  return {.result = a};
}
// matmul, mm, linear (and addmm's two matrices): one dtype, no promotion; not bool.
constexpr dtype_verdict matmul_dtypes(dtype a, dtype b) noexcept {
  if (a != b) return {.result = promote_types(a, b), .refusal = dtype_refusal::m1_m2, .a = a, .b = b};
  if (a == dtype::b8) return {.result = a, .refusal = dtype_refusal::bool_addmm, .a = a, .b = b};
  return {.result = a};
}
// bmm: as matmul, in bmm's words (a bool lhs is refused first, as PyTorch's kernel does).
constexpr dtype_verdict bmm_dtypes(dtype a, dtype b) noexcept {
  if (a == dtype::b8) return {.result = promote_types(a, b), .refusal = dtype_refusal::bool_bmm, .a = a, .b = b};
  if (a != b) return {.result = promote_types(a, b), .refusal = dtype_refusal::scalar_type, .a = a, .b = b};
  return {.result = a};
}
// addmm(self, mat1, mat2), and linear(x, w, bias) = addmm(bias, x, w^T): the bias against the weight
// first, then input against weight, then the bool kernel (PyTorch's order).
constexpr dtype_verdict addmm_dtypes(dtype self, dtype mat1, dtype mat2) noexcept {
  if (self != mat2) return {.result = mat2, .refusal = dtype_refusal::self_mat2, .a = self, .b = mat2};
  if (mat1 != mat2) return {.result = mat2, .refusal = dtype_refusal::mat1_mat2, .a = mat1, .b = mat2};
  if (mat1 == dtype::b8) return {.result = mat1, .refusal = dtype_refusal::bool_addmm, .a = mat1, .b = mat2};
  return {.result = mat1};
}

// PyTorch's words for a refusal (what its CPU kernels raise), then typex's fix.
template <class W>
constexpr void put_dtype_refusal(W& w, const dtype_verdict& v) {
  switch (v.refusal) {
    case dtype_refusal::none: break;
    case dtype_refusal::sub_two_bools:
      w.put("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
            "operator instead. (typex::logical_xor(a, b))");
      break;
    case dtype_refusal::sub_bool:
      w.put("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
            "use the `~` or `logical_not()` operator instead. (typex::logical_not(m), or typex::to<...>(m) first)");
      break;
    case dtype_refusal::neg_bool:
      w.put("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
            "the `~` or `logical_not()` operator instead. (typex::logical_not(m))");
      break;
    case dtype_refusal::bool_addmm:
    case dtype_refusal::bool_bmm:
    case dtype_refusal::bool_pow:
      w.put(v.refusal == dtype_refusal::bool_addmm ? "\"addmm_impl_cpu_\"" : (v.refusal == dtype_refusal::bool_bmm ? "\"bmm\"" : "\"pow\""));
      w.put(" not implemented for 'Bool' (convert the operands first: typex::to<...>(x))");
      break;
    case dtype_refusal::m1_m2:
      w.put("expected m1 and m2 to have the same dtype, but got: "); w.put(detail::spelling(v.a).cpp); w.put(" != ");
      w.put(detail::spelling(v.b).cpp);
      break;
    case dtype_refusal::scalar_type:
      w.put("expected scalar type "); w.put(detail::spelling(v.a).scalar_type); w.put(" but found ");
      w.put(detail::spelling(v.b).scalar_type);
      break;
    case dtype_refusal::self_mat2:
    case dtype_refusal::mat1_mat2:
      w.put(v.refusal == dtype_refusal::self_mat2 ? "self" : "mat1");
      w.put(" and mat2 must have the same dtype, but got "); w.put(detail::spelling(v.a).scalar_type); w.put(" and ");
      w.put(detail::spelling(v.b).scalar_type);
      break;
  }
  if (v.refusal == dtype_refusal::m1_m2 || v.refusal == dtype_refusal::scalar_type || v.refusal == dtype_refusal::self_mat2 ||
      v.refusal == dtype_refusal::mat1_mat2) {
    w.put(" (PyTorch does not promote here: convert one operand first, e.g. typex::to<typex::"); w.put(name(v.b));
    w.put(">(x))");
  }
}

namespace detail {
template <fixed_string Op, dtype_verdict V>
struct dtype_refusal_sentence {
  template <class W>
  constexpr void operator()(W& w) const {
    put_op(w, Op.view()); w.put(": "); put_dtype_refusal(w, V);
  }
};
}  // namespace detail

// The result dtype's tag when V allows the op; otherwise (an error here means: PyTorch refuses
// these operands' dtypes for this op; the sentence has its words) a compile error, and V.result
// all the same (no cascade). Used as `using DT = decltype(checked_dtype<"linear", verdict>());`
// with the verdict a local constant (g++ 12 crashes on an alias template over a verdict, and a
// class that fails would be unusable after the error under clang: hence a function).
template <fixed_string Op, dtype_verdict V>
constexpr auto checked_dtype() {
  if constexpr (V.refusal != dtype_refusal::none) {
    using failure [[maybe_unused]] =
        decltype(sizeof(detail::static_failure<detail::sentence_kind::type, detail::dtype_refusal_sentence<Op, V>>));
  }
  return dtype_tag<V.result>{};
}

}  // namespace typex
