// typex/ir/describe.hpp — every op described at run time: its traits and its shape/dtype rule over
// symbolic dims, read from the op's own header.
//
// An op type says what it means as a type (ops/apply.hpp: target, schema, typed result rule, math,
// vjp). Code that works on programs has op ids, not types; ir::describe(id) is what it asks:
//
//   const ir::op_description& d = ir::describe(node.target);
//   d.traits.pointwise; d.traits.view; d.traits.random; ...
//   std::vector<ir::tensor_meta> m = ir::infer_meta(g, node.target, node.args);  // the op's rule
//
// The rule is written once, in the op's header, as a template over a meta_context:
//
//   template <class R> static void infer(R& r) {               // relu: its input's dtype and shape
//     r.result(r.input("self"));
//   }
//
// r.input("self") is the metadata (dtype, symbolic shape) of tensor argument `self`; r.args()
// reads the other arguments by the schema's names; r.fail(why) refuses the call (a shape_error
// naming the op). The rule is the same one the typed front end applies at compile time, evaluated
// over run-time extents and symbols (sym_expr): the verifier runs it on every node of every
// program it checks, so a rule that says otherwise than the typed one fails the tests of every
// program that records the op.
//
// Traits, each read from the op type:
//   pointwise        `static constexpr bool pointwise = true`, or a `math` member (ops/unary.hpp)
//   view             the schema's alias annotation: `Tensor(a) self ... -> Tensor(a)`
//   writes_state     the schema writes an argument: `Tensor(a!)`
//   random           `static constexpr bool random = true` (draws from the thread's stream; a
//                    `static bool draws(const ir::call_args&)` says when, for an op that only
//                    sometimes does: dropout in eval mode draws nothing)
//   side_effects     `static constexpr bool side_effects = true` (assertions), or writes_state or random
//   differentiable   false where the op declares `differentiable = false`
//   data_dependent   `static constexpr bool data_dependent = true`: the result's dim 0 is a size
//                    only the data gives (nonzero, masked_select); the rule cannot name it
// A user's op is described by the same members, and made known by typex::register_op<Op>().
#pragma once

#include <typex/core/error.hpp>
#include <typex/ir/call.hpp>
#include <typex/ir/graph.hpp>
#include <typex/ops/all.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <algorithm>
#include <array>
#include <vector>

namespace typex::ir {

// What a program transformation may assume of an op.
struct op_traits {
  bool pointwise = false;
  bool view = false;
  bool writes_state = false;
  bool random = false;
  bool side_effects = false;
  bool differentiable = true;
  bool data_dependent = false;  // the extent of the result's dim 0 is known only from the data
  friend bool operator==(const op_traits&, const op_traits&) = default;
};

// What an op's run-time rule reads and writes: the call's arguments (by the schema's names), the
// metadata of its tensor arguments (the values of graph `g` they read), and the metadata of its
// results.
class meta_context {
 public:
  meta_context(op_id op, std::span<const argument> args, const graph& g) : op_(op), args_(args), reader_(op, args, {}), graph_(&g) {}

  op_id op() const noexcept { return op_; }
  // the call's non-tensor arguments, by name: r.args().integer("dim"), r.args().flag_or_default("keepdim")
  const call_args& args() const noexcept { return reader_; }
  // whether argument `name` is a tensor (not None, not a number)
  bool is_tensor(arg_name name) const { return value(name) != nullptr; }
  // the metadata of tensor argument `name`
  TYPEX_API const tensor_meta& input(arg_name name) const;
  // the metadata of each tensor of list argument `name` (cat's)
  TYPEX_API std::vector<tensor_meta> inputs(arg_name name) const;
  // argument `name` as a symbolic integer (slice's start; a number is a constant)
  TYPEX_API sym_expr sym(arg_name name) const;
  // argument `name` as symbolic sizes (view's size)
  TYPEX_API std::vector<sym_expr> sizes(arg_name name) const;
  // the dims a reduction's `name` names, wrapped, for a value of rank `rank` (None or []: every dim)
  TYPEX_API std::vector<std::int64_t> reduced_dims(arg_name name, std::size_t rank) const;
  // the number argument `name` is (a Python float, not an int or a bool): a wrapped scalar's dtype
  bool is_real(arg_name name) const { return reader_.is_real(name); }
  // dim d wrapped into [0, rank) (an argument_error naming the op when out of range)
  std::size_t wrap(std::int64_t d, std::size_t rank) const { return wrap_dim(op_.name(), d, rank); }
  // the shape two shapes broadcast to; extents that cannot broadcast fail (two constants, neither 1)
  TYPEX_API std::vector<sym_expr> broadcast(const std::vector<sym_expr>& a, const std::vector<sym_expr>& b) const;
  // the dtype of a pointwise op on `a` and argument `name` (a tensor, or a wrapped number)
  TYPEX_API dtype promote_with(dtype a, arg_name name) const;
  // refuses the call: a shape_error "aten.x.y: <why>"
  [[noreturn]] TYPEX_API void fail(std::string_view why) const;

  // adds a result
  void result(tensor_meta m) { results_.push_back(std::move(m)); }
  void result(dtype d, std::vector<sym_expr> shape) { results_.push_back(tensor_meta{d, std::move(shape)}); }
  const std::vector<tensor_meta>& results() const noexcept { return results_; }
  std::vector<tensor_meta> take_results() noexcept { return std::move(results_); }

 private:
  TYPEX_API const argument* raw(arg_name name) const;
  TYPEX_API const value_ref* value(arg_name name) const;

  op_id op_;
  std::span<const argument> args_;
  call_args reader_;
  const graph* graph_;
  std::vector<tensor_meta> results_;
};

using infer_fn = void (*)(meta_context&);
using draws_fn = bool (*)(const call_args&);

// One op, described at run time.
struct op_description {
  std::string_view name;  // the op's target ("aten.linear.default")
  op_traits traits;
  infer_fn infer = nullptr;  // null: the op has no run-time rule (a user op that declares none)
  draws_fn draws = nullptr;  // null: a random op always draws
};

namespace detail {
template <class Op>
constexpr bool schema_has(std::string_view needle) noexcept {
  if constexpr (requires { Op::schema; }) return std::string_view(Op::schema).find(needle) != std::string_view::npos;
  else return false;
}
}  // namespace detail

// The traits of op type Op (see above).
template <class Op>
constexpr op_traits traits_of() noexcept {
  op_traits t;
  if constexpr (requires { Op::pointwise; }) t.pointwise = Op::pointwise;
  else t.pointwise = requires { &Op::template math<scalar_math<float>, float, float>; };
  if constexpr (requires { Op::schema; }) t.view = typex::detail::is_view_schema(Op::schema);
  t.writes_state = detail::schema_has<Op>("!)");
  if constexpr (requires { Op::random; }) t.random = Op::random;
  if constexpr (requires { Op::side_effects; }) t.side_effects = Op::side_effects;
  t.side_effects = t.side_effects || t.writes_state || t.random;
  if constexpr (requires { Op::differentiable; }) t.differentiable = Op::differentiable;
  if constexpr (requires { Op::data_dependent; }) t.data_dependent = Op::data_dependent;
  return t;
}

// An op that draws only for some arguments: `static bool draws(const call_args&)` (a concept at
// namespace scope: clang 16 crashes on the requires-expression inside description_of's lambda).
template <class Op>
concept draws_by_arguments = requires(const call_args& a) {
  { Op::draws(a) } -> std::convertible_to<bool>;
};

namespace detail {
template <class Op>
void infer_of(meta_context& r) {
  Op::infer(r);
}
template <class Op>
bool draws_of(const call_args& a) {
  return Op::draws(a);
}
template <class Op>
constexpr infer_fn infer_pointer() noexcept {
  if constexpr (requires(meta_context& r) { Op::infer(r); }) return &infer_of<Op>;
  else return nullptr;
}
template <class Op>
constexpr draws_fn draws_pointer() noexcept {
  if constexpr (draws_by_arguments<Op>) return &draws_of<Op>;
  else return nullptr;
}
// (constant-initialized: no guard, no lambda per op. By the target's name, not op_id_of<Op>: an id
// parses the op's schema at compile time, which a unit that builds the table of every op should
// not pay for the ops it does not record.)
template <class Op>
inline constexpr op_description description_v{Op::target, traits_of<Op>(), infer_pointer<Op>(), draws_pointer<Op>()};
}  // namespace detail

template <class Op>
const op_description& description_of() {
  return detail::description_v<Op>;
}

// What the registry, or register_op, says of op `id`; nullptr for an op neither knows.
TYPEX_API const op_description* find_description(op_id id);
// The same, or an unsupported_error naming the op.
TYPEX_API const op_description& describe(op_id id);

// Whether a call of `id` with `args` takes a draw of the random stream (never folded, never
// merged with another call).
TYPEX_API bool draws_randomness(op_id id, std::span<const argument> args);

// The metadata the op's rule gives a call of `op` on `args`, the tensor arguments' metadata read
// from `g`. An unsupported_error when the op has no rule; the rule's own errors otherwise.
TYPEX_API std::vector<tensor_meta> infer_meta(const graph& g, op_id op, std::span<const argument> args);

// Whether two extents agree: equal expressions, or equal in every run (the same after the
// simplifications sym_expr makes).
inline bool same_extent(const sym_expr& a, const sym_expr& b) { return a == b; }

}  // namespace typex::ir

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS

namespace typex::ir::detail {

// The registry's descriptions sorted by name: a constant (no code runs to build it), searched by
// halves.
template <class... Ops>
constexpr auto sorted_descriptions(op_list<Ops...>) {
  std::array<const op_description*, sizeof...(Ops) + 1> t{&description_v<Ops>..., &description_v<assert_shape_op>};
  std::sort(t.begin(), t.end(), [](const op_description* a, const op_description* b) { return a->name < b->name; });
  return t;
}
template <class List = builtin_ops>
inline constexpr auto description_table = sorted_descriptions(List{});

}  // namespace typex::ir::detail

TYPEX_API auto typex::ir::meta_context::raw(arg_name name) const -> const argument* {
  const std::size_t i = reader_.index(name);
  return i < args_.size() ? &args_[i] : nullptr;
}

TYPEX_API auto typex::ir::meta_context::value(arg_name name) const -> const value_ref* {
  const argument* a = raw(name);
  return a == nullptr ? nullptr : std::get_if<value_ref>(a);
}

TYPEX_API auto typex::ir::meta_context::input(arg_name name) const -> const tensor_meta& {
  const value_ref* v = value(name);
  if (v == nullptr) reader_.fail_text(name, "is not a tensor (the op's rule reads it as one)");
  return graph_->meta(*v);
}

TYPEX_API auto typex::ir::meta_context::inputs(arg_name name) const -> std::vector<tensor_meta> {
  const argument* a = raw(name);
  const auto* refs = a == nullptr ? nullptr : std::get_if<std::vector<value_ref>>(a);
  if (refs == nullptr) reader_.fail_text(name, "is not a list of tensors");
  std::vector<tensor_meta> out;
  out.reserve(refs->size());
  for (const value_ref& r : *refs) out.push_back(graph_->meta(r));
  return out;
}

TYPEX_API auto typex::ir::meta_context::sym(arg_name name) const -> sym_expr {
  const argument* a = raw(name);
  if (a != nullptr) {
    if (const auto* e = std::get_if<sym_expr>(a)) return *e;
    if (const auto* v = std::get_if<std::int64_t>(a)) return sym_expr(index_t{*v});
  }
  reader_.fail_text(name, "is not an integer");
}

TYPEX_API auto typex::ir::meta_context::sizes(arg_name name) const -> std::vector<sym_expr> {
  const argument* a = raw(name);
  if (a != nullptr) {
    if (const auto* e = std::get_if<std::vector<sym_expr>>(a)) return *e;
    if (const auto* v = std::get_if<std::vector<std::int64_t>>(a)) {
      std::vector<sym_expr> out;
      out.reserve(v->size());
      for (std::int64_t x : *v) out.emplace_back(index_t{x});
      return out;
    }
    if (const auto* e = std::get_if<sym_expr>(a)) return {*e};
    if (const auto* n = std::get_if<std::int64_t>(a)) return {sym_expr(index_t{*n})};
  }
  reader_.fail_text(name, "is not a list of sizes");
}

TYPEX_API auto typex::ir::meta_context::reduced_dims(arg_name name, std::size_t rank) const -> std::vector<std::int64_t> {
  std::vector<std::int64_t> dims;
  const std::size_t i = reader_.index(name);
  if (reader_.has(i)) {
    if (reader_.is_integer(i)) dims.push_back(reader_.integer(i));
    else dims = reader_.ints(i);
  }
  if (dims.empty()) {
    for (std::size_t d = 0; d < rank; ++d) dims.push_back(static_cast<std::int64_t>(d));
    return dims;
  }
  for (auto& d : dims) d = static_cast<std::int64_t>(wrap(d, rank));
  return dims;
}

TYPEX_API auto typex::ir::meta_context::broadcast(const std::vector<sym_expr>& a, const std::vector<sym_expr>& b) const
    -> std::vector<sym_expr> {
  const std::size_t n = std::max(a.size(), b.size());
  std::vector<sym_expr> out(n);
  const auto one = [](const sym_expr& e) { return e.is_constant() && *e.value() == 1; };
  for (std::size_t i = 0; i < n; ++i) {
    const sym_expr* x = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const sym_expr* y = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    sym_expr& o = out[n - 1 - i];
    if (x == nullptr) o = *y;
    else if (y == nullptr) o = *x;
    else if (one(*x)) o = *y;
    else if (one(*y) || *x == *y) o = *x;
    else if (x->is_constant() && y->is_constant()) {
      typex::detail::raise<shape_error>([&](auto& w) {
        w.put(op_.name()); w.put(": extents "); w.put_int(*x->value()); w.put(" and "); w.put_int(*y->value());
        w.put(" do not broadcast (dim "); w.put_int(static_cast<long long>(n - 1 - i)); w.put(" of the result)");
      });
    } else {
      o = y->is_constant() ? *y : *x;  // (equal in every run the program allows: the constant says more)
    }
  }
  return out;
}

TYPEX_API auto typex::ir::meta_context::promote_with(dtype a, arg_name name) const -> dtype {
  if (const value_ref* v = value(name)) return promote_types(a, graph_->meta(*v).scalar_type);
  const argument* s = raw(name);
  if (s == nullptr) return a;
  // a wrapped number takes the tensor's dtype unless it is of a higher kind (a float on integers)
  if (std::holds_alternative<double>(*s)) return is_floating_point(a) ? a : dtype::f32;
  if (std::holds_alternative<std::int64_t>(*s) || std::holds_alternative<sym_expr>(*s)) return a == dtype::b8 ? dtype::i64 : a;
  return a;
}

TYPEX_API auto typex::ir::meta_context::fail(std::string_view why) const -> void {
  typex::detail::raise<shape_error>([&](auto& w) { w.put(op_.name()); w.put(": "); w.put(why); });
}

TYPEX_API auto typex::ir::find_description(op_id id) -> const op_description* {
  const auto& t = detail::description_table<>;
  const auto it = std::lower_bound(t.begin(), t.end(), id.name(), [](const op_description* d, std::string_view n) { return d->name < n; });
  if (it != t.end() && (*it)->name == id.name()) return *it;
  auto& u = typex::detail::user_ops();
  const std::lock_guard lock(u.mutex);
  for (std::size_t i = 0; i < u.ops.size(); ++i)
    if (u.ops[i] == id) return &u.descriptions[i]();
  return nullptr;
}

TYPEX_API auto typex::ir::describe(op_id id) -> const op_description& {
  const op_description* d = find_description(id);
  if (d == nullptr) {
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex: op '"); w.put(id.name());
      w.put("' is not one typex knows (a user-defined op: register it with typex::register_op<Op>())");
    });
  }
  return *d;
}

TYPEX_API auto typex::ir::draws_randomness(op_id id, std::span<const argument> args) -> bool {
  const op_description* d = find_description(id);
  if (d == nullptr || !d->traits.random) return false;
  if (d->draws == nullptr) return true;
  const call_args a(id, args, {});
  return d->draws(a);
}

TYPEX_API auto typex::ir::infer_meta(const graph& g, op_id op, std::span<const argument> args) -> std::vector<tensor_meta> {
  const op_description& d = describe(op);
  if (d.infer == nullptr) {
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put(op.name()); w.put(": the op has no run-time shape rule (`template <class R> static void infer(R& r)`)");
    });
  }
  meta_context r(op, args, g);
  d.infer(r);
  return r.take_results();
}
#endif  // TYPEX_HEADER_DEFINITIONS
