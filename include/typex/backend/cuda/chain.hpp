// typex/backend/cuda/chain.hpp — the host side of the pointwise chain interpreter: how the CUDA
// backend's lowering turns a recorded unary op call into a chain link (launch.hpp: chain_link).
//
// A link names its op by a code (unary_code<Op>: the op's index in chain_unary_ops) and carries
// the op object itself (its attributes, decoded from the call as every backend decodes them), so
// that the kernel runs exactly the op's own math with exactly the call's attributes.
#pragma once

#include <typex/backend/cuda/launch.hpp>
#include <typex/ir/call.hpp>
#include <typex/ops/all.hpp>

#include <cstring>
#include <optional>
#include <type_traits>

namespace typex::cuda {

namespace detail {
// Every op of the registry with unary math is one a chain can run (chain_unary_ops is drawn from
// unary.hpp's list, which device code can include; the registry as a whole it cannot).
// (An error here: an op with `math(m, x, y)` was added to another header's list; add it to
// chain_unary_ops' source or teach chain.hpp that list.)
template <class... Ops>
constexpr bool chain_covers(op_list<Ops...>) {
  return ((!has_unary_math<Ops> || index_in<Ops>(chain_unary_ops{}) >= 0) && ...);
}
static_assert(chain_covers(builtin_ops{}), "typex::cuda: an op of the registry with unary math is missing from chain_unary_ops");

// The op of a recorded call: its attributes decoded (Op::from_arguments), or Op{} for an op
// without any (as the Eigen backend's decode_op).
template <class Op>
Op decode_unary(const ir::call_args& args) {
  if constexpr (requires { Op::from_arguments(args); }) return Op::from_arguments(args);
  else return Op{};
}

template <class Op>
chain_link unary_link(const ir::call_args& args) {
  const Op op = decode_unary<Op>(args);
  chain_link link;
  link.kind = link_kind::unary;
  link.code = static_cast<std::uint8_t>(unary_code<Op>);
  std::memcpy(link.op, static_cast<const void*>(&op), sizeof(Op));
  return link;
}

using unary_link_fn = chain_link (*)(const ir::call_args&);
template <class... Ops>
constexpr auto unary_link_table(op_list<Ops...>) {
  struct entry {
    op_id op;
    unary_link_fn make;
  };
  return std::array<entry, sizeof...(Ops)>{entry{op_id_of<Ops>, &unary_link<Ops>}...};
}
}  // namespace detail

// The chain link that applies the unary op `op` of a recorded call (`args`: its arguments, whose
// attributes the link carries), or nullopt where the op has no scalar math a chain can run (the
// lowering then gives it a kernel of its own). Errors: an attribute out of its domain, as the op's
// from_arguments reports it (gelu's approximate = "fast": argument_error).
inline std::optional<chain_link> encode_unary(op_id op, const ir::call_args& args) {
  static constexpr auto table = detail::unary_link_table(chain_unary_ops{});
  for (const auto& e : table)
    if (e.op == op) return e.make(args);
  return std::nullopt;
}

// Whether a chain can run op (encode_unary gives a link for it).
inline bool chain_supports(op_id op) noexcept {
  static constexpr auto table = detail::unary_link_table(chain_unary_ops{});
  for (const auto& e : table)
    if (e.op == op) return true;
  return false;
}

}  // namespace typex::cuda
