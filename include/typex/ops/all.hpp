// typex/ops/all.hpp — the registry: every op typex defines, in one list.
//
// builtin_ops lists one type per ATen overload that typex records: the op type itself where it is
// a plain struct (relu_op, linear_op), else the overload's tag in typex::aten (aten::conv2d: the
// conv2d_op<Opt> instantiations all record it). Each op header lists its ops (unary_ops, ...). Everything that needs "every op" iterates this
// list, so that a new op joins them by being listed here:
//   - a backend builds its kernel table from it, and a listed op without a kernel is a build error
//     (backend/eigen/kernel.hpp: typex::eigen::kernel<Op>);
//   - the tests check that every op has a PyTorch parity case and a printed name.
// The name look-up (find_op: "aten.relu.default" -> its op_id) knows the listed ops and those a
// user registered with register_op<Op>() — the same mechanism: a user-defined op is a type with
// a target, registered once, given a kernel by specializing the backend's kernel template.
#pragma once

#include <typex/core/error.hpp>
#include <typex/ops/attention.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/concat.hpp>
#include <typex/ops/conv.hpp>
#include <typex/ops/embedding.hpp>
#include <typex/ops/factory.hpp>
#include <typex/ops/indexing.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/loss.hpp>
#include <typex/ops/mutation.hpp>
#include <typex/ops/normalization.hpp>
#include <typex/ops/op.hpp>
#include <typex/ops/reduce.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/unary.hpp>

#include <algorithm>
#include <array>
#include <mutex>
#include <string_view>
#include <vector>

namespace typex {

namespace ir {  // (ir/describe.hpp defines them: an op's run-time description, made where it is registered)
struct op_description;
template <class Op>
const op_description& description_of();
}  // namespace ir

// Every op typex defines: each op header lists its own (unary_ops in unary.hpp, ...), so an op is
// defined, and joins the registry, in its header alone.
using builtin_ops = op_list_cat_t<unary_ops, binary_ops, reduce_ops, linear_ops, shape_ops, indexing_ops, normalization_ops,
                                  conv_ops, concat_ops, embedding_ops, attention_ops, loss_ops, mutation_ops, factory_ops>;

namespace detail {
// Two ops of a list with one name would make ids ambiguous for look-ups by name.
template <std::size_t N>
consteval bool names_unique(const std::array<op_id, N>& ids) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j)
      if (ids[i].name() == ids[j].name()) return false;
  return true;
}
template <class... Ops>
consteval auto op_ids(op_list<Ops...>) {
  return std::array<op_id, sizeof...(Ops)>{op_id_of<Ops>...};
}
// The registry's ids. A variable template, so that it is made (and every op's schema read) only in
// the units that look ops up by name (find_op and its kin are templates for the same reason): a
// unit that traces a model reads the schemas of the ops it uses, not all of them.
template <class List = builtin_ops>
inline constexpr auto builtin_op_ids = op_ids(List{});
template <class List = builtin_ops>
inline constexpr bool builtin_names_unique = names_unique(builtin_op_ids<List>);

// The ops users registered (process-wide; registering is rare, looking up by name rarer still).
struct user_op_table {
  std::mutex mutex;
  std::vector<op_id> ops;
  std::vector<const ir::op_description& (*)()> descriptions;  // (one per op, in the same order)
};
inline user_op_table& user_ops() {
  static user_op_table t;
  return t;
}
}  // namespace detail

// The op called `name` ("aten.relu.default"): a built-in one, or one registered with
// register_op; the null id when there is none.
template <class List = builtin_ops>
op_id find_op(std::string_view name) {
  static_assert(detail::builtin_names_unique<List>, "typex: builtin_ops lists one ATen overload twice");
  for (op_id id : detail::builtin_op_ids<List>)
    if (id.name() == name) return id;
  auto& t = detail::user_ops();
  const std::lock_guard lock(t.mutex);
  for (op_id id : t.ops)
    if (id.name() == name) return id;
  return {};
}

// Every op that find_op knows: the built-in ones, then the registered ones.
template <class List = builtin_ops>
std::vector<op_id> registered_ops() {
  std::vector<op_id> out(detail::builtin_op_ids<List>.begin(), detail::builtin_op_ids<List>.end());
  auto& t = detail::user_ops();
  const std::lock_guard lock(t.mutex);
  out.insert(out.end(), t.ops.begin(), t.ops.end());
  return out;
}

// Makes a user-defined op known by its name (find_op, and whatever reads programs from text) and
// by its run-time description (ir/describe.hpp: its traits and its shape rule, for the verifier,
// the passes and the archive loader). Idempotent; thread-safe. Its id needs no registration
// (op_id_of<Op>). (The description is defined in <typex/ir/describe.hpp>, which <typex/typex.hpp>
// includes: a unit that registers an op includes it.)
template <op_type Op>
op_id register_op() {
  constexpr op_id id = op_id_of<Op>;
  static_assert(!id.name().empty(), "typex::register_op: the op's target (its ATen-style name) is empty");
  auto& t = detail::user_ops();
  const std::lock_guard lock(t.mutex);
  if (std::find(t.ops.begin(), t.ops.end(), id) == t.ops.end() &&
      std::find(detail::builtin_op_ids<>.begin(), detail::builtin_op_ids<>.end(), id) == detail::builtin_op_ids<>.end()) {
    t.ops.push_back(id);
    t.descriptions.push_back(&ir::description_of<Op>);
  }
  return id;
}

}  // namespace typex
