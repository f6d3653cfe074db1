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

// Every op typex defines: each op header lists its own (unary_ops in unary.hpp, ...), so an op is
// defined, and joins the registry, in its header alone.
using builtin_ops = op_list_cat_t<unary_ops, binary_ops, reduce_ops, linear_ops, shape_ops, indexing_ops, normalization_ops,
                                  conv_ops, concat_ops, embedding_ops, attention_ops, loss_ops, mutation_ops, factory_ops>;

namespace detail {
template <class... Ops>
constexpr auto op_ids(op_list<Ops...>) {
  return std::array<op_id, sizeof...(Ops)>{op_id_of<Ops>...};
}
inline constexpr auto builtin_op_ids = op_ids(builtin_ops{});

// Two ops of the registry with one name would make ids ambiguous for look-ups by name.
consteval bool names_unique() {
  for (std::size_t i = 0; i < builtin_op_ids.size(); ++i)
    for (std::size_t j = i + 1; j < builtin_op_ids.size(); ++j)
      if (builtin_op_ids[i].name() == builtin_op_ids[j].name()) return false;
  return true;
}
static_assert(names_unique(), "typex: builtin_ops lists one ATen overload twice");

// The ops users registered (process-wide; registering is rare, looking up by name rarer still).
struct user_op_table {
  std::mutex mutex;
  std::vector<op_id> ops;
};
inline user_op_table& user_ops() {
  static user_op_table t;
  return t;
}
}  // namespace detail

// The op called `name` ("aten.relu.default"): a built-in one, or one registered with
// register_op; the null id when there is none.
inline op_id find_op(std::string_view name) {
  for (op_id id : detail::builtin_op_ids)
    if (id.name() == name) return id;
  auto& t = detail::user_ops();
  const std::lock_guard lock(t.mutex);
  for (op_id id : t.ops)
    if (id.name() == name) return id;
  return {};
}

// Every op that find_op knows: the built-in ones, then the registered ones.
inline std::vector<op_id> registered_ops() {
  std::vector<op_id> out(detail::builtin_op_ids.begin(), detail::builtin_op_ids.end());
  auto& t = detail::user_ops();
  const std::lock_guard lock(t.mutex);
  out.insert(out.end(), t.ops.begin(), t.ops.end());
  return out;
}

// Makes a user-defined op known by its name (find_op, and whatever reads programs from text).
// Idempotent; thread-safe. Its id needs no registration (op_id_of<Op>).
template <op_type Op>
op_id register_op() {
  constexpr op_id id = op_id_of<Op>;
  static_assert(!id.name().empty(), "typex::register_op: the op's target (its ATen-style name) is empty");
  auto& t = detail::user_ops();
  const std::lock_guard lock(t.mutex);
  if (std::find(t.ops.begin(), t.ops.end(), id) == t.ops.end() &&
      std::find(detail::builtin_op_ids.begin(), detail::builtin_op_ids.end(), id) == detail::builtin_op_ids.end())
    t.ops.push_back(id);
  return id;
}

}  // namespace typex
