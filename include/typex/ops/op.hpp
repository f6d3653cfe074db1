// typex/ops/op.hpp — what identifies an op: its ATen overload name, as a value (op_id).
//
// An op is a type with `static constexpr std::string_view target = "aten.relu.default"` (the
// ATen overload it records; ops/apply.hpp lists what else an op type carries). op_id_of<Op> is its
// identity as a value: the address of one op_info object per overload name, made at compile time
// from the name itself (a template argument), so that
//   - every type that records the same overload has the same id (conv2d_op<Opt> for any Opt and
//     the registry's aten::conv2d tag);
//   - an id is a constant expression: `node.target == op_id_of<linear_op>` is a pointer
//     comparison, and a switch over ids needs no string;
//   - a user-defined op gets its id the same way, with nothing to register for identity
//     (registering it by name, for look-ups from text, is ops/all.hpp's register_op).
// The IR stores op ids (ir::node::target); printing uses op_id::name().
#pragma once

#include <typex/core/fixed_string.hpp>
#include <typex/ops/schema.hpp>

#include <cstddef>
#include <functional>
#include <string_view>
#include <type_traits>

namespace typex {

// One ATen overload. One object per name in a program (a variable template keyed by the name).
struct op_info {
  std::string_view name;  // "aten.linear.default"
  op_schema schema;       // its arguments (ops/schema.hpp); empty for an op that declares none
};

namespace detail {
// What the null id points at (so that no member compares a pointer with null: g++ 12 does not
// accept that comparison on these objects as a constant expression under -fsanitize=undefined).
inline constexpr op_info null_op_info{};
}  // namespace detail

class op_id {
 public:
  constexpr op_id() noexcept = default;
  constexpr explicit op_id(const op_info* info) noexcept : info_(info) {}

  // "aten.linear.default"; empty for the null id (placeholders and the output node carry it)
  constexpr std::string_view name() const noexcept { return info_->name; }
  // "aten.linear.default" -> "linear" (torch.fx's default node name); any namespace goes:
  // "typex.max_pool2d_backward.default" -> "max_pool2d_backward", "my.scale.default" -> "scale"
  constexpr std::string_view short_name() const noexcept {
    std::string_view t = name();
    const std::size_t dot = detail::find_char(t, '.');
    if (dot != std::string_view::npos && detail::find_char(t, '.', dot + 1) != std::string_view::npos) t.remove_prefix(dot + 1);
    return t.substr(0, detail::find_char(t, '.'));
  }
  // the op's argument schema (empty for the null id and for a user op that declares none)
  constexpr op_schema schema() const noexcept { return info_->schema; }
  constexpr explicit operator bool() const noexcept { return !info_->name.empty(); }
  constexpr const op_info* info() const noexcept { return info_; }

  // One object per overload: a pointer comparison. (In a constant expression the names and schemas
  // are compared instead, which is the same: g++ 12 under -fsanitize=undefined refuses to compare
  // the addresses of two of these objects there.)
  friend constexpr bool operator==(op_id a, op_id b) noexcept {
    if (std::is_constant_evaluated()) return a.info_->name == b.info_->name && a.info_->schema.text == b.info_->schema.text;
    return a.info_ == b.info_;
  }

 private:
  const op_info* info_ = &detail::null_op_info;
};

// Whether Op is an op type: it names the ATen overload it records.
template <class Op>
concept op_type = requires {
  { Op::target } -> std::convertible_to<std::string_view>;
};

namespace detail {
template <std::string_view const& T>
constexpr auto to_fixed_string() {
  fixed_string<T.size()> s;
  for (std::size_t i = 0; i < T.size(); ++i) s.data[i] = T[i];
  return s;
}
template <class Op>
constexpr auto op_target_string() {
  return to_fixed_string<Op::target>();
}
// Op's schema text ("" when it declares none).
template <class Op>
constexpr auto op_schema_string() {
  if constexpr (requires { Op::schema; }) return to_fixed_string<Op::schema>();
  else return fixed_string("");  // (not fixed_string<0>{}: nvcc 13's front end rewrites the 0 into a form g++ rejects)
}
// (the string_views point into the template argument objects, which have static storage)
template <fixed_string Name, fixed_string Schema>
inline constexpr op_info op_info_v{Name.view(), make_schema<Schema>()};

template <class Op>
consteval const op_info* op_info_of() {
  constexpr const op_info* info = &op_info_v<op_target_string<Op>(), op_schema_string<Op>()>;
  static_assert(info->schema.empty() || info->schema.names(info->name),
                "typex: the op's schema names another overload than its target (\"aten::add.Tensor(...)\" "
                "goes with target \"aten.add.Tensor\", \"aten::relu(...)\" with \"aten.relu.default\")");
  return info;
}
}  // namespace detail

// The id of Op's overload. An error "constraints not satisfied" here means: the type given is not
// an op (it has no `static constexpr std::string_view target = "aten.<op>.<overload>"`).
// Every type recording one overload must declare the same schema (or, a user op, none): the
// templated op types refer to their tag's (`static constexpr auto schema = aten::conv2d::schema;`).
template <op_type Op>
inline constexpr op_id op_id_of{detail::op_info_of<Op>()};

// A list of op types (the registry, ops/all.hpp, is one).
template <class... Ops>
struct op_list {
  static constexpr std::size_t size = sizeof...(Ops);
};

// The ops of several lists, in order: op_list_cat_t<unary_ops, binary_ops>.
template <class... A, class... B>
op_list<A..., B...> operator+(op_list<A...>, op_list<B...>);  // (declared only: for decltype)
template <class... Lists>
using op_list_cat_t = decltype((Lists{} + ... + op_list<>{}));

// Calls f(std::type_identity<Op>{}) for each op of the list, in order.
template <class... Ops, class F>
constexpr void for_each_op(op_list<Ops...>, F&& f) {
  (f(std::type_identity<Ops>{}), ...);
}

}  // namespace typex

template <>
struct std::hash<typex::op_id> {
  std::size_t operator()(typex::op_id id) const noexcept { return std::hash<const typex::op_info*>{}(id.info()); }
};
