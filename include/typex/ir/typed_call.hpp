// typex/ir/typed_call.hpp — an op call's arguments read with their names and types checked when
// the reader is compiled.
//
//   const double alpha = ir::arg<add_op, "alpha">(a);              // Scalar alpha=1: 1 where left out
//   const any_tensor& w = ir::arg<linear_op, "weight">(a);         // Tensor
//   const any_tensor* b = ir::arg<linear_op, "bias">(a);           // Tensor?: nullptr for None
//   constexpr std::size_t k = ir::arg_index<linear_op, "bias">;    // its position in the call
//   ir::arg<linear_op, "wieght">(a);   // compile error: the op's schema has no argument 'wieght'
//
// The op's schema (ops/schema.hpp, parsed at compile time) is the one description of its
// arguments: the names, positions and kinds here are the ones the verifier checks every recorded
// call against and the printer writes. The C++ type follows the schema type: Tensor -> const
// any_tensor&, Tensor? -> const any_tensor*, Tensor[] -> a span of them, Scalar and float ->
// double, int and SymInt -> std::int64_t, bool -> bool, int[] -> std::vector<std::int64_t>, str ->
// std::string_view, ScalarType -> dtype. An argument with a number default reads as its type, the
// default where the call leaves it out or passes None (read when the schema was parsed); another
// optional argument reads as std::optional of its type. The run-time reader underneath is
// ir::call_args (the same checks, the same messages).
#pragma once

#include <typex/core/fixed_string.hpp>
#include <typex/core/sentence.hpp>
#include <typex/ir/call.hpp>
#include <typex/ops/op.hpp>
#include <typex/ops/schema.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace typex::ir {

namespace detail {
template <class Op, fixed_string Name>
consteval std::size_t arg_index_of() {
  constexpr op_schema s = op_id_of<Op>.schema();
  static_assert(!s.empty(), "typex: ir::arg<Op, Name> reads by the op's schema, and this op declares none");
  return s.index(Name.view());
}
}  // namespace detail

namespace detail {
// An error here means: Op's schema has no argument of that name (the sentence names the op, the
// name and the schema).
template <class Op, fixed_string Name>
constexpr auto fail_no_argument() {
  TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
    w.put("typex::ir::arg: "); w.put(op_id_of<Op>.name()); w.put(" has no argument named "); w.put(Name.view());
    w.put("; its schema: "); w.put(op_id_of<Op>.schema().text);
  });
  return 0;
}
}  // namespace detail

// The position of argument `Name` in a call of Op (op_schema::npos, after the compile error, when
// the schema has none of that name).
template <class Op, fixed_string Name>
inline constexpr std::size_t arg_index = [] {
  constexpr std::size_t i = detail::arg_index_of<Op, Name>();
  if constexpr (i == op_schema::npos) detail::fail_no_argument<Op, Name>();
  return i;
}();

namespace detail {
// What ir::arg gives for an argument the schema does not have, after the one error: any use of it
// compiles, so that no second error follows.
struct no_such_argument {
  template <class T>
  operator T() const {  // NOLINT: implicit on purpose
    return T{};
  }
};

template <class Op, std::size_t I>
decltype(auto) read_arg(const call_args& a) {
  constexpr std::size_t i = I;
  constexpr arg_spec s = op_id_of<Op>.schema().args[I];
  constexpr bool defaulted = s.number_default;
  constexpr bool maybe = s.optional && !defaulted;
  const auto read = [&](auto get) {
    using T = decltype(get());
    if constexpr (defaulted) return a.has(i) ? get() : static_cast<T>(s.default_value);
    else if constexpr (maybe) return a.has(i) ? std::optional<T>(get()) : std::optional<T>();
    else return get();
  };
  if constexpr (s.type == arg_type::tensor) {
    if constexpr (s.optional) return a.optional_tensor(i);
    else return a.tensor(i);  // (const any_tensor&)
  } else if constexpr (s.type == arg_type::tensor_list) {
    return a.tensor_list(i);
  } else if constexpr (s.type == arg_type::scalar || s.type == arg_type::real) {
    return read([&] { return a.real(i); });
  } else if constexpr (s.type == arg_type::integer) {
    return read([&] { return a.integer(i); });
  } else if constexpr (s.type == arg_type::boolean) {
    return read([&] { return a.flag(i); });
  } else if constexpr (s.type == arg_type::int_list) {
    return read([&] { return a.ints(i); });
  } else if constexpr (s.type == arg_type::string) {
    return read([&] { return a.text(i); });
  } else if constexpr (s.type == arg_type::scalar_type) {
    return read([&] { return a.scalar_type(i); });
  } else {
    static_assert(s.type != arg_type::other, "typex: ir::arg reads no Layout, Device, Generator or MemoryFormat (typex records None)");
  }
}
}  // namespace detail

// Argument `Name` of call `a` of Op, as its schema type says.
template <class Op, fixed_string Name>
decltype(auto) arg(const call_args& a) {
  constexpr std::size_t i = arg_index<Op, Name>;
  if constexpr (i == op_schema::npos) return detail::no_such_argument{};  // (the one error is arg_index's)
  else return detail::read_arg<Op, i>(a);
}

}  // namespace typex::ir
