// typex/passes/decompose.hpp — decompositions, and the pass that applies them: a graph in which
// the ops of a table are replaced by their decompositions (torch.export's run_decompositions, as
// local rewrites: nothing is traced again).
//
// An op's decomposition lives in its own header, written with typex's ops as its derivative is:
//
//   template <class C> static void decompose(C& c) {           // silu(x) = x * sigmoid(x)
//     const auto x = c.input("self");
//     c.produce(c.mul(x, c.sigmoid(x)));
//   }
//
// c.input("self") is the value of the node's argument, c.args() its other arguments by name,
// c.result_meta() the metadata its result has (what the decomposition must give), c.produce(v)
// gives the result (one call per result, in order). Each op written is a node with the metadata
// the op's run-time rule gives it (ir/describe.hpp), the decomposed node's module stack and
// source line. An op the table also decomposes is decomposed in turn.
//
// The default table (core_decompositions) decomposes every op that is not core (ops/core_set.hpp)
// with its own decomposition; a table can keep an op (keep), decompose one with a function of the
// user's (set), or add a user op's own decomposition (add / register_decomposition). A
// decomposition whose result differs from the node's metadata (dtype or shape) is an error naming
// the op, the node and both metadata.
#pragma once

#include <typex/ir/describe.hpp>
#include <typex/ops/core_set.hpp>
#include <typex/passes/autodiff.hpp>

#include <functional>
#include <unordered_map>
#include <vector>

namespace typex::passes {

// What an op's decomposition is handed.
class decompose_context : public node_context {
 public:
  using node_context::node_context;

  // the metadata of the node's result k: what the decomposition's result k must have
  const ir::tensor_meta& result_meta(std::uint32_t k = 0) const { return node_->vals.at(k); }
  // gives the node's next result
  void produce(value_ref v) { produced_.push_back(v); }
  const std::vector<value_ref>& produced() const noexcept { return produced_; }

  // (the pass's side)
  void bind(const ir::node& node, const ir::call_args& a) {
    bind_node(0, node, a);
    who_ = "typex::passes::decompose";
    lacks_ = "has no decomposition";
    produced_.clear();
  }

 private:
  std::vector<value_ref> produced_;
};

using decompose_fn = std::function<void(decompose_context&)>;

// Whether op type Op gives a decomposition.
template <class Op>
concept decomposable = requires(decompose_context& c) { Op::decompose(c); };

namespace detail {
TYPEX_API void add_user_decomposition(op_id id, decompose_fn fn);
}  // namespace detail

// Makes a user-defined op's own decomposition known (the registry's ops need nothing): the
// default table then decomposes the op (a user op is never core). Idempotent; thread-safe.
template <op_type Op>
void register_decomposition() {
  static_assert(decomposable<Op>, "typex::passes::register_decomposition: the op defines no `template <class C> static void decompose(C& c)`");
  detail::add_user_decomposition(op_id_of<Op>, [](decompose_context& c) { Op::decompose(c); });
}

// The op's own decomposition (the registry's, or a registered one); empty when it has none.
TYPEX_API decompose_fn decomposition_of(op_id id);

// Which ops a decomposition pass replaces, and with what.
class decomposition_table {
 public:
  // decomposes nothing
  decomposition_table() = default;

  // every op that is not core, with its own decomposition (the registry's and the registered ones)
  TYPEX_API static decomposition_table core();

  // leaves op `id` as it is
  decomposition_table& keep(op_id id) {
    entries_.erase(id);
    return *this;
  }
  // decomposes op `id` with its own decomposition (an argument_error when it has none)
  TYPEX_API decomposition_table& add(op_id id);
  // decomposes op `id` with `fn` (the user's, in place of the op's own)
  decomposition_table& set(op_id id, decompose_fn fn) {
    entries_[id] = std::move(fn);
    return *this;
  }
  bool decomposes(op_id id) const { return entries_.contains(id); }
  const decompose_fn* find(op_id id) const {
    const auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::size_t size() const noexcept { return entries_.size(); }
  // the ops it decomposes, sorted by name
  TYPEX_API std::vector<op_id> ops() const;

 private:
  std::unordered_map<op_id, decompose_fn> entries_;
};

// `g` with every call of an op the table decomposes replaced by its decomposition, recursively.
// Placeholders, the output and every other node are kept as they are (names, metadata); a
// decomposed node's result keeps its name where the decomposition makes a new node for it (so
// the program's signature still names it), and the new nodes take its module stack and source
// line. Linear in the graph's size (each decomposition is a few nodes). `names`, when given,
// receives for each node of `g` the name of the node that holds its (first) value in the result:
// its own name, but a decomposition that gives back one of its inputs (dropout in eval mode)
// leaves that input's name.
TYPEX_API ir::graph decompose(const ir::graph& g, const decomposition_table& table, std::vector<std::string>* names = nullptr);

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/passes/detail/decompose_impl.hpp>
#endif  // TYPEX_HEADER_DEFINITIONS
