// typex/ir/detail/describe_impl.hpp — the definitions of ir/describe.hpp (compiled once in
// typex::runtime, or inline in header-only builds). Included by describe.hpp only.
#pragma once

// (included by ir/describe.hpp, after its declarations)

#include <unordered_map>

namespace typex::ir::detail {

template <class... Ops>
std::unordered_map<op_id, const op_description*> make_description_table(op_list<Ops...>) {
  std::unordered_map<op_id, const op_description*> t;
  t.reserve(sizeof...(Ops) + 1);
  (t.emplace(op_id_of<Ops>, &description_of<Ops>()), ...);
  t.emplace(op_id_of<assert_shape_op>, &description_of<assert_shape_op>());
  return t;
}

inline const std::unordered_map<op_id, const op_description*>& description_table() {
  static const auto t = make_description_table(builtin_ops{});
  return t;
}

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
  return meta_of_(*v);
}

TYPEX_API auto typex::ir::meta_context::inputs(arg_name name) const -> std::vector<tensor_meta> {
  const argument* a = raw(name);
  const auto* refs = a == nullptr ? nullptr : std::get_if<std::vector<value_ref>>(a);
  if (refs == nullptr) reader_.fail_text(name, "is not a list of tensors");
  std::vector<tensor_meta> out;
  out.reserve(refs->size());
  for (const value_ref& r : *refs) out.push_back(meta_of_(r));
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
  if (const value_ref* v = value(name)) return promote_types(a, meta_of_(*v).scalar_type);
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
  const auto& t = detail::description_table();
  if (const auto it = t.find(id); it != t.end()) return it->second;
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
  meta_context r(op, args, [&g](value_ref v) -> const tensor_meta& { return g.meta(v); });
  d.infer(r);
  return r.take_results();
}
