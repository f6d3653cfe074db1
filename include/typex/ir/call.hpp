// typex/ir/call.hpp — the arguments of one op call, read by the names of the op's schema.
//
// call_args is the one reader of a call's arguments for everything that runs or plans ops: a
// backend's kernels (a.tensor("input"), a.real_or_default("alpha"), a.ints("dim")), the planner
// (plan/), later serialization. It reads a graph node's arguments (with the tensors the node's
// value references stand for, and the bound symbols for symbolic sizes) or an eager call's; an op
// that declares no schema is read by position. Every mistake (a missing argument, the wrong kind,
// a name the schema does not have) throws a typex error naming the op, the argument and the schema.
#pragma once

#include <typex/core/symbol_table.hpp>
#include <typex/ir/graph.hpp>
#include <typex/ops/op.hpp>
#include <typex/ops/schema.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace typex::ir {

// Dim d of a call of `op` (negative: from the end, as PyTorch's wrap_dim) for a value of rank
// `rank`; a rank-0 value takes dim 0 or -1. Out of range: an argument_error naming the op.
inline std::size_t wrap_dim(std::string_view op, std::int64_t d, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t w = d < 0 ? d + r : d;
  if (w < 0 || w >= (r > 1 ? r : 1)) {
    typex::detail::raise<argument_error>([&](auto& out) {
      out.put(op); out.put(": dim "); out.put_int(d); out.put(" is out of range for rank "); out.put_int(r);
    });
  }
  return static_cast<std::size_t>(w);
}

// An argument's name, as a kernel asks for it: a.real("alpha"). (A literal only: a typo is caught
// by the schema look-up, which every parity case exercises.)
struct arg_name {
  std::string_view text;
  template <std::size_t N>
  consteval arg_name(const char (&s)[N]) noexcept : text(s, N - 1) {}  // NOLINT: implicit on purpose
};

// The arguments of one op call, as a kernel reads them.
class call_args {
 public:
  // args: the call's arguments; tensors[i]: the tensor argument i names (nullptr for the others);
  // symbols: the bound symbols, to evaluate symbolic sizes (may be null); list: the tensors of the
  // call's tensor-list argument (cat's), in order (an ATen schema has at most one).
  call_args(op_id target, std::span<const ir::argument> args, std::span<const any_tensor* const> tensors,
              const symbol_table* symbols = nullptr, std::span<const any_tensor* const> list = {})
      : target_(target), args_(args), tensors_(tensors), list_(list), symbols_(symbols) {}

  // the op's name ("aten.linear.default"), for messages
  std::string_view target() const noexcept { return target_.name(); }
  op_id op() const noexcept { return target_; }
  std::size_t size() const noexcept { return args_.size(); }
  // The arguments as recorded (a backend that runs the call as a program of one node copies them).
  std::span<const ir::argument> arguments() const noexcept { return args_; }
  // The tensor of each argument (nullptr for the others), and the tensor-list argument's.
  std::span<const any_tensor* const> tensors() const noexcept { return tensors_; }
  std::span<const any_tensor* const> list() const noexcept { return list_; }

  // Where the caller wants the call's result: a planned program hands an eager kernel a view of the
  // node's arena buffer (one that overlaps none of the call's tensors), so that the result is
  // written there instead of into a new tensor copied over afterwards. A kernel takes it by asking
  // for its result through result(); the caller checks whether it did (the same storage).
  call_args& into(const any_tensor* destination) noexcept {
    destination_ = destination;
    return *this;
  }
  // A tensor for the call's result: the caller's destination where it has this dtype and these
  // extents, else a new tensor. Zeroed, as a new tensor is, unless `zeroed` is false (a kernel that
  // writes every element).
  any_tensor result(dtype dt, std::vector<index_t> extents, bool zeroed = true) const {
    if (destination_ == nullptr || destination_->scalar_type() != dt || destination_->extents() != extents)
      return any_tensor(dt, std::move(extents));
    any_tensor out = *destination_;
    if (zeroed) std::memset(out.raw_data(), 0, out.nbytes());
    return out;
  }
  bool has(std::size_t i) const noexcept { return i < args_.size() && !std::holds_alternative<ir::none_t>(args_[i]); }
  bool is_tensor(std::size_t i) const noexcept { return i < tensors_.size() && tensors_[i] != nullptr; }

  const any_tensor& tensor(std::size_t i) const {
    if (!is_tensor(i)) fail(i, "a tensor");
    return *tensors_[i];
  }
  // The tensor, or nullptr where the argument is None or absent.
  const any_tensor* optional_tensor(std::size_t i) const { return has(i) ? &tensor(i) : nullptr; }

  // The tensors of the tensor-list argument i.
  std::span<const any_tensor* const> tensor_list(std::size_t i) const {
    const auto* refs = get_if<std::vector<ir::value_ref>>(i);
    if (refs == nullptr) fail(i, "a list of tensors");
    if (refs->size() != list_.size()) fail_text(i, "names tensors that the call does not provide");
    for (const any_tensor* t : list_)
      if (t == nullptr) fail_text(i, "names tensors that the call does not provide");
    return list_;
  }
  dtype scalar_type(std::size_t i) const {
    if (const auto* v = get_if<dtype>(i)) return *v;
    fail(i, "a dtype");
  }

  std::int64_t integer(std::size_t i) const {
    if (const auto* v = get_if<std::int64_t>(i)) return *v;
    if (const auto* e = get_if<ir::sym_expr>(i)) return evaluate(*e, i);
    fail(i, "an integer");
  }
  double real(std::size_t i) const {
    if (const auto* v = get_if<double>(i)) return *v;
    if (const auto* n = get_if<std::int64_t>(i)) return static_cast<double>(*n);
    if (const auto* b = get_if<bool>(i)) return *b ? 1.0 : 0.0;
    fail(i, "a number");
  }
  // Whether argument i is a floating-point number (a Python float), not an integer or a bool.
  bool is_real(std::size_t i) const noexcept { return get_if<double>(i) != nullptr; }
  // Whether argument i is an integer (a number or a symbolic size), not a float or a bool.
  bool is_integer(std::size_t i) const noexcept { return get_if<std::int64_t>(i) != nullptr || get_if<ir::sym_expr>(i) != nullptr; }
  bool flag(std::size_t i) const {
    if (const auto* v = get_if<bool>(i)) return *v;
    fail(i, "a bool");
  }
  std::string_view text(std::size_t i, std::string_view fallback = {}) const {
    if (!has(i)) return fallback;
    if (const auto* v = get_if<std::string>(i)) return *v;
    fail(i, "a string");
  }
  std::vector<std::int64_t> ints(std::size_t i) const {
    if (const auto* v = get_if<std::vector<std::int64_t>>(i)) return *v;
    if (const auto* s = get_if<std::vector<ir::sym_expr>>(i)) {
      std::vector<std::int64_t> out;
      for (const auto& e : *s) out.push_back(evaluate(e, i));
      return out;
    }
    fail(i, "an int list");
  }
  // A list of sizes of which at most one is -1 or a symbol this call cannot evaluate: that one is
  // inferred so that the sizes hold `numel` elements (reshape's -1).
  std::vector<index_t> sizes(std::size_t i, index_t numel) const {
    std::vector<index_t> out;
    std::ptrdiff_t unknown = -1;
    auto note_unknown = [&] {
      if (unknown >= 0) fail_text(i, "has two sizes to infer");
      unknown = static_cast<std::ptrdiff_t>(out.size());
      out.push_back(1);
    };
    if (const auto* s = get_if<std::vector<ir::sym_expr>>(i)) {
      for (const auto& e : *s) {
        const auto v = e.evaluate(symbols_ ? *symbols_ : empty_table());  // nullopt: a symbol not bound here
        if (!v || *v == -1) note_unknown();
        else out.push_back(*v);
      }
    } else if (const auto* v = get_if<std::vector<std::int64_t>>(i)) {
      for (auto e : *v) {
        if (e == -1) note_unknown();
        else out.push_back(e);
      }
    } else {
      fail(i, "a list of sizes");
    }
    if (unknown >= 0) {
      index_t known = 1;
      for (std::size_t k = 0; k < out.size(); ++k)
        if (static_cast<std::ptrdiff_t>(k) != unknown) known *= out[k];
      if (known == 0 || numel % known != 0) fail_text(i, "cannot infer a size: the element count does not divide");
      out[static_cast<std::size_t>(unknown)] = numel / known;
    }
    return out;
  }

  // The same, by the schema's argument names.
  std::size_t index(arg_name n) const {
    const std::size_t i = target_.schema().index(n.text);
    if (i == op_schema::npos) {
      typex::detail::raise<argument_error>([&](auto& w) {
        w.put(target_.name());
        w.put(target_.schema().empty() ? ": declares no schema, so its arguments are read by position, not as '"
                                       : ": has no argument '");
        w.put(n.text);
        w.put("'");
        if (!target_.schema().empty()) { w.put(" (schema: "); w.put(target_.schema().text); w.put(")"); }
      });
    }
    return i;
  }
  bool has(arg_name n) const { return has(index(n)); }
  bool is_tensor(arg_name n) const { return is_tensor(index(n)); }
  const any_tensor& tensor(arg_name n) const { return tensor(index(n)); }
  const any_tensor* optional_tensor(arg_name n) const { return optional_tensor(index(n)); }
  std::span<const any_tensor* const> tensor_list(arg_name n) const { return tensor_list(index(n)); }
  dtype scalar_type(arg_name n) const { return scalar_type(index(n)); }
  std::int64_t integer(arg_name n) const { return integer(index(n)); }
  double real(arg_name n) const { return real(index(n)); }
  bool is_real(arg_name n) const { return is_real(index(n)); }
  bool is_integer(arg_name n) const { return is_integer(index(n)); }
  bool flag(arg_name n) const { return flag(index(n)); }
  std::string_view text(arg_name n, std::string_view fallback = {}) const { return text(index(n), fallback); }
  std::vector<std::int64_t> ints(arg_name n) const { return ints(index(n)); }
  std::vector<index_t> sizes(arg_name n, index_t numel) const { return sizes(index(n), numel); }
  // Argument `n`, or its schema's default where the call leaves it out or passes None (a number
  // default only: "alpha=1", "end_dim=-1", "ceil_mode=False").
  double real_or_default(arg_name n) const {
    const std::size_t i = index(n);
    return has(i) ? real(i) : default_number(i);
  }
  std::int64_t integer_or_default(arg_name n) const {
    const std::size_t i = index(n);
    return has(i) ? integer(i) : static_cast<std::int64_t>(default_number(i));
  }
  bool flag_or_default(arg_name n) const {
    const std::size_t i = index(n);
    return has(i) ? flag(i) : default_number(i) != 0;
  }

  [[noreturn]] void fail_text(arg_name n, std::string_view what) const { fail_text(index(n), what); }
  [[noreturn]] void fail_text(std::size_t i, std::string_view what) const {
    typex::detail::raise<shape_error>([&](auto& w) {
      w.put(target_.name()); w.put(": argument "); w.put_int(static_cast<long long>(i)); put_name(w, i); w.put(' '); w.put(what);
    });
  }

 private:
  template <class T>
  const T* get_if(std::size_t i) const noexcept {
    return i < args_.size() ? std::get_if<T>(&args_[i]) : nullptr;
  }
  std::int64_t evaluate(const ir::sym_expr& e, std::size_t i) const {
    const auto v = e.evaluate(symbols_ ? *symbols_ : empty_table());
    if (!v) fail_text(i, "has a symbolic size whose symbols are not bound");
    return *v;
  }
  static const symbol_table& empty_table() {
    static const symbol_table t;
    return t;
  }
  [[noreturn]] void fail(std::size_t i, std::string_view expected) const {
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put(target_.name()); w.put(": argument "); w.put_int(static_cast<long long>(i)); put_name(w, i); w.put(" should be "); w.put(expected);
    });
  }
  // " (alpha)" after an argument's position, where the schema names it
  template <class W>
  void put_name(W& w, std::size_t i) const {
    const op_schema s = target_.schema();
    if (i < s.args.size()) { w.put(" ("); w.put(s.args[i].name); w.put(")"); }
  }
  double default_number(std::size_t i) const {
    const op_schema s = target_.schema();  // (defaults read when the schema was parsed: no parsing here)
    if (i < s.args.size() && s.args[i].number_default) return s.args[i].default_value;
    fail(i, "a number (the call leaves it out and its default is not one)");
  }

  op_id target_;
  std::span<const ir::argument> args_;
  std::span<const any_tensor* const> tensors_;
  std::span<const any_tensor* const> list_;
  const symbol_table* symbols_;
  const any_tensor* destination_ = nullptr;
};

}  // namespace typex::ir
