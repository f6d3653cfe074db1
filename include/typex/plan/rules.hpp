// typex/plan/rules.hpp — the fusion rules, keyed by op type.
//
// What the planner may do with a node depends on what its op is, never on its name:
//   view            the result is its input's memory under other extents (reshape, view, flatten,
//                   unsqueeze): no step, no buffer;
//   permute         a permutation of its input (transpose, permute): a strided view when every reader
//                   reads through strides, a copy otherwise;
//   strided_reader  reads its tensor operands through strides (matmul, mm, bmm): absorbs permutes;
//   epilogue_host   may apply the activation that is its only reader to each tile while it is in
//                   cache (linear, conv2d);
//   pool_host       may do the max_pool2d that is its only reader per image (conv2d);
//   pointwise_head  an elementwise binary op (add, sub, mul, div): heads a pointwise chain, and is a
//                   link of one;
//   pool            a max_pool2d (what a pool_host takes in).
// An activation (an op with `static constexpr bool epilogue = true`: relu, gelu, silu, sigmoid,
// tanh, hardswish, a user's) is the epilogue and chain link; whether a backend applies it is the
// backend's (plan::target::is_activation). A user's op gets rules with add_rules<Op>(...): the same
// table the built-in ops are in.
#pragma once

#include <typex/ops/all.hpp>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace typex::plan {

enum class rule : std::uint8_t {
  none = 0,
  view = 1,
  permute = 2,
  strided_reader = 4,
  epilogue_host = 8,
  pool_host = 16,
  pointwise_head = 32,
  pool = 64,
};
constexpr rule operator|(rule a, rule b) noexcept {
  return static_cast<rule>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
constexpr bool has(rule set, rule r) noexcept { return (static_cast<std::uint8_t>(set) & static_cast<std::uint8_t>(r)) != 0; }

namespace detail {
template <class... Ops>
void add_all(std::unordered_map<op_id, rule>& t, op_list<Ops...>, rule r) {
  ((t[op_id_of<Ops>] = t[op_id_of<Ops>] | r), ...);
}

struct rule_table {
  std::mutex mutex;
  std::unordered_map<op_id, rule> rules;
  rule_table() {
    add_all(rules, op_list<aten::reshape, aten::view, aten::flatten_using_ints, aten::unsqueeze>{}, rule::view);
    add_all(rules, op_list<aten::transpose_int, aten::permute>{}, rule::permute);
    add_all(rules, op_list<matmul_op, aten::mm, aten::bmm>{}, rule::strided_reader);
    add_all(rules, op_list<linear_op, aten::conv2d>{}, rule::epilogue_host);
    add_all(rules, op_list<aten::conv2d>{}, rule::pool_host);
    add_all(rules, op_list<add_op, sub_op, mul_op, div_op>{}, rule::pointwise_head);
    add_all(rules, op_list<aten::max_pool2d>{}, rule::pool);
  }
};
inline rule_table& rules() {
  static rule_table t;
  return t;
}
}  // namespace detail

// The rules of an op (rule::none for an op the table does not list).
inline rule rules_of(op_id op) {
  detail::rule_table& t = detail::rules();
  const std::lock_guard lock(t.mutex);
  const auto it = t.rules.find(op);
  return it == t.rules.end() ? rule::none : it->second;
}

// Gives a user's op rules (added to those it has). Safe from any thread; plans made afterwards
// use them.
inline void add_rules(op_id op, rule r) {
  detail::rule_table& t = detail::rules();
  const std::lock_guard lock(t.mutex);
  t.rules[op] = t.rules[op] | r;
}
template <class Op>
void add_rules(rule r) {
  add_rules(op_id_of<Op>, r);
}

}  // namespace typex::plan
