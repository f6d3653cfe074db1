// typex/ops/schema.hpp — an op's argument schema: ATen's text, read at compile time.
//
// An op declares its arguments once, as ATen's native_functions.yaml writes them:
//
//   static constexpr std::string_view schema =
//       "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
//
// The text is parsed at compile time (a malformed schema does not compile) into one arg_spec per
// argument: its name, its type (Tensor, Tensor?, Tensor[], Scalar, int, SymInt[], float, bool,
// ScalarType?, str, ...), whether it may be None, whether it is keyword-only, its default. The op's
// id carries it (op_id::schema()), so everything that reads a call reads it by the same names:
//   - the graph records a call's arguments in this order (trace and eager build them with one
//     function, ir/op_arguments.hpp), trailing defaults may be left out;
//   - the verifier checks each call's arguments against it (count, kinds, None only where allowed);
//   - kernels and the planner read arguments by name (kernel_args::real("alpha"));
//   - serialization writes and reads it.
// A Tensor argument may be given a number (ATen's wrapped scalar: add.Tensor(x, 2.0), as
// torch.export records `x + 2.0`).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace typex {

// The kind of value an argument takes (ATen's types, grouped by what the IR stores for them).
enum class arg_type : unsigned char {
  tensor,        // Tensor (a graph value, or a wrapped number)
  tensor_list,   // Tensor[]
  scalar,        // Scalar: a number of any kind
  integer,       // int, SymInt: an integer or a symbolic size
  real,          // float: a number
  boolean,       // bool
  int_list,      // int[], int[2], SymInt[]: integers or symbolic sizes
  scalar_type,   // ScalarType: a dtype
  string,        // str
  other,         // Layout, Device, Generator, MemoryFormat: typex records None for these
};

constexpr std::string_view name(arg_type t) noexcept {
  switch (t) {
    case arg_type::tensor: return "Tensor";
    case arg_type::tensor_list: return "Tensor[]";
    case arg_type::scalar: return "Scalar";
    case arg_type::integer: return "int";
    case arg_type::real: return "float";
    case arg_type::boolean: return "bool";
    case arg_type::int_list: return "int[]";
    case arg_type::scalar_type: return "ScalarType";
    case arg_type::string: return "str";
    case arg_type::other: return "other";
  }
  return "?";
}

// One argument of a schema: "int[1]? dim=None" -> {name "dim", type_text "int[1]?", int_list,
// optional, default "None"}.
struct arg_spec {
  std::string_view name = {};
  std::string_view type_text = {};  // as written, with alias annotations: "Tensor(a!)"
  arg_type type = arg_type::other;
  bool optional = false;       // `?`: may be None
  bool keyword_only = false;   // after `*`
  bool mutated = false;        // `(a!)`: written by the op
  std::size_t list_size = 0;   // int[2] -> 2 (a single int is then repeated); 0 when unsized or not a list
  std::string_view default_text = {};  // "1", "None", "[]"; empty when the argument has no default
  bool number_default = false;         // the default is a number or a bool ("1", "-1", "1e-05", "True")
  double default_value = 0;            // (number_default) its value, read when the schema is parsed
  constexpr bool has_default() const noexcept { return !default_text.empty(); }
};

namespace detail {
// Index-based searches for the constant evaluations here. (std::string_view::find compares a
// pointer into the schema's template argument object with null, which g++ 12 does not accept as a
// constant expression under -fsanitize=undefined: a user's sanitizer build would not compile.)
constexpr std::size_t find_char(std::string_view s, char c, std::size_t from = 0) noexcept {
  for (std::size_t i = from; i < s.size(); ++i)
    if (s[i] == c) return i;
  return std::string_view::npos;
}
constexpr std::size_t find_pair(std::string_view s, char a, char b, bool last = false) noexcept {
  std::size_t found = std::string_view::npos;
  for (std::size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] == a && s[i + 1] == b) {
      found = i;
      if (!last) break;
    }
  return found;
}
}  // namespace detail

// An op's schema: its ATen name, its arguments, its return type.
struct op_schema {
  std::string_view text = {};     // the whole schema as written
  std::string_view name = {};     // "aten::add.Tensor"
  std::span<const arg_spec> args = {};
  std::string_view returns = {};  // "Tensor", "(Tensor, Tensor)"

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  constexpr bool empty() const noexcept { return text.empty(); }
  // The position of the argument called `arg_name`, npos when there is none.
  constexpr std::size_t index(std::string_view arg_name) const noexcept {
    for (std::size_t i = 0; i < args.size(); ++i)
      if (args[i].name == arg_name) return i;
    return npos;
  }
  // How many leading arguments a call must give (the rest have defaults).
  constexpr std::size_t required() const noexcept {
    std::size_t n = args.size();
    while (n > 0 && args[n - 1].has_default()) --n;
    return n;
  }
  // The graph name of the schema's overload: "aten::add.Tensor" -> "aten.add.Tensor",
  // "aten::relu" -> "aten.relu.default" — what the op's target must be.
  constexpr bool names(std::string_view target) const noexcept {
    const std::size_t colons = detail::find_pair(name, ':', ':');
    if (colons == std::string_view::npos) return false;
    const std::string_view ns = name.substr(0, colons), rest = name.substr(colons + 2);
    if (target.size() < ns.size() + 1 || target.substr(0, ns.size()) != ns || target[ns.size()] != '.') return false;
    target.remove_prefix(ns.size() + 1);
    const std::size_t dot = detail::find_char(rest, '.');
    if (dot != std::string_view::npos) return target == rest;
    return target.size() == rest.size() + 8 && target.substr(0, rest.size()) == rest && target.substr(rest.size()) == ".default";
  }
};

namespace detail::schema_parse {

// (a consteval function that throws is a compile error whose note quotes the throw: these name
// what is wrong with the schema text)
struct schema_syntax_error {
  const char* what;
};

constexpr std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The argument list between the outer parentheses.
constexpr std::string_view argument_text(std::string_view s) {
  const std::size_t open = detail::find_char(s, '(');
  if (open == std::string_view::npos) throw schema_syntax_error{"typex schema: no '(' after the op's name"};
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')' && --depth == 0) return s.substr(open + 1, i - open - 1);
  }
  throw schema_syntax_error{"typex schema: unbalanced parentheses"};
}

// Calls f(piece) for each top-level comma-separated piece of an argument list.
template <class F>
constexpr void for_each_piece(std::string_view list, F&& f) {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      const std::string_view piece = trim(list.substr(start, i - start));
      if (!piece.empty()) f(piece);
      start = i + 1;
    } else if (list[i] == '(' || list[i] == '[') {
      ++depth;
    } else if (list[i] == ')' || list[i] == ']') {
      --depth;
    }
  }
}

constexpr std::size_t count_args(std::string_view s) {
  std::size_t n = 0;
  for_each_piece(argument_text(s), [&](std::string_view p) { n += p != "*"; });
  return n;
}

// A default's value where it is a number or a bool: "True", "False", "-1", "0.5", "1e-05". The digits
// are read as one integer (exact up to 2^53) scaled by a power of ten once, so the value is the
// correctly rounded one, as from_chars gives, for every default a schema writes.
constexpr bool parse_number(std::string_view d, double& out) {
  if (d == "True" || d == "False") return out = d == "True" ? 1.0 : 0.0, true;
  std::size_t i = 0;
  const bool negative = i < d.size() && (d[i] == '-' || d[i] == '+') && d[i++] == '-';
  double mantissa = 0;
  int scale = 0, digits = 0;
  for (; i < d.size() && d[i] >= '0' && d[i] <= '9'; ++i, ++digits) mantissa = mantissa * 10 + (d[i] - '0');
  if (i < d.size() && d[i] == '.')
    for (++i; i < d.size() && d[i] >= '0' && d[i] <= '9'; ++i, ++digits, --scale) mantissa = mantissa * 10 + (d[i] - '0');
  if (digits == 0 || digits > 15) return false;
  if (i < d.size() && (d[i] == 'e' || d[i] == 'E')) {
    ++i;
    const bool down = i < d.size() && (d[i] == '-' || d[i] == '+') && d[i++] == '-';
    int e = 0, edigits = 0;
    for (; i < d.size() && d[i] >= '0' && d[i] <= '9' && edigits < 4; ++i, ++edigits) e = e * 10 + (d[i] - '0');
    if (edigits == 0) return false;
    scale += down ? -e : e;
  }
  if (i != d.size() || scale < -22 || scale > 22) return false;  // (10^22: the largest exact power of ten)
  double p = 1;
  for (int k = 0; k < (scale < 0 ? -scale : scale); ++k) p *= 10;
  out = scale < 0 ? mantissa / p : mantissa * p;
  if (negative) out = -out;
  return true;
}

constexpr arg_spec parse_arg(std::string_view piece, bool keyword_only) {
  arg_spec a;
  a.keyword_only = keyword_only;
  const std::size_t space = detail::find_char(piece, ' ');
  if (space == std::string_view::npos) throw schema_syntax_error{"typex schema: an argument is not `<type> <name>`"};
  a.type_text = piece.substr(0, space);
  std::string_view rest = trim(piece.substr(space + 1));
  if (const std::size_t eq = detail::find_char(rest, '='); eq != std::string_view::npos) {
    a.default_text = trim(rest.substr(eq + 1));
    rest = trim(rest.substr(0, eq));
    if (a.default_text.empty()) throw schema_syntax_error{"typex schema: `=` without a default value"};
    a.number_default = parse_number(a.default_text, a.default_value);
  }
  if (rest.empty()) throw schema_syntax_error{"typex schema: an argument without a name"};
  a.name = rest;

  std::string_view t = a.type_text;
  if (const std::size_t alias = detail::find_char(t, '('); alias != std::string_view::npos) {  // Tensor(a!) / Tensor(a)
    const std::size_t close = detail::find_char(t, ')', alias);
    if (close == std::string_view::npos) throw schema_syntax_error{"typex schema: unclosed alias annotation"};
    a.mutated = detail::find_char(t.substr(alias, close - alias), '!') != std::string_view::npos;
    t = std::string_view(t.data(), alias);  // (what follows the annotation, `?` or `[]`, is kept below)
    const std::string_view after = a.type_text.substr(close + 1);
    if (!after.empty()) {
      if (after == "?") a.optional = true;
      else if (after == "[]") return a.type = arg_type::tensor_list, a;
      else throw schema_syntax_error{"typex schema: unexpected text after an alias annotation"};
    }
  }
  if (t.ends_with('?')) {
    a.optional = true;
    t.remove_suffix(1);
  }
  bool list = false;
  if (t.ends_with(']')) {
    const std::size_t open = detail::find_char(t, '[');
    if (open == std::string_view::npos) throw schema_syntax_error{"typex schema: `]` without `[`"};
    for (std::size_t i = open + 1; i + 1 < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') throw schema_syntax_error{"typex schema: a list size that is not a number"};
      a.list_size = a.list_size * 10 + static_cast<std::size_t>(t[i] - '0');
    }
    list = true;
    t = t.substr(0, open);
    if (t == "Tensor?") t.remove_suffix(1);  // Tensor?[] (index.Tensor's indices): a list of tensors
  }
  if (t == "Tensor") a.type = list ? arg_type::tensor_list : arg_type::tensor;
  else if (t == "int" || t == "SymInt") a.type = list ? arg_type::int_list : arg_type::integer;
  else if (list) throw schema_syntax_error{"typex schema: lists of this type are not supported (Tensor[], int[] and SymInt[] are)"};
  else if (t == "Scalar") a.type = arg_type::scalar;
  else if (t == "float") a.type = arg_type::real;
  else if (t == "bool") a.type = arg_type::boolean;
  else if (t == "ScalarType") a.type = arg_type::scalar_type;
  else if (t == "str") a.type = arg_type::string;
  else if (t == "Layout" || t == "Device" || t == "Generator" || t == "MemoryFormat") a.type = arg_type::other;
  else throw schema_syntax_error{"typex schema: unknown argument type (known: Tensor, Scalar, int, SymInt, float, bool, "
                                 "ScalarType, str, Layout, Device, Generator, MemoryFormat)"};
  return a;
}

template <std::size_t N>
struct parsed_args {
  arg_spec args[N == 0 ? 1 : N]{};
};

template <std::size_t N>
constexpr parsed_args<N> parse_args(std::string_view s) {
  parsed_args<N> out;
  std::size_t k = 0;
  bool keyword_only = false;
  for_each_piece(argument_text(s), [&](std::string_view p) {
    if (p == "*") {
      keyword_only = true;
      return;
    }
    out.args[k] = parse_arg(p, keyword_only);
    for (std::size_t j = 0; j < k; ++j)
      if (out.args[j].name == out.args[k].name) throw schema_syntax_error{"typex schema: two arguments with one name"};
    ++k;
  });
  for (std::size_t i = 0; i + 1 < N; ++i)  // (a positional argument after one with a default is ATen's rule too)
    if (out.args[i].has_default() && !out.args[i + 1].has_default() && !out.args[i + 1].keyword_only)
      throw schema_syntax_error{"typex schema: an argument without a default after one with a default"};
  return out;
}

constexpr std::string_view name_of(std::string_view s) { return trim(s.substr(0, detail::find_char(s, '('))); }

constexpr std::string_view returns_of(std::string_view s) {
  const std::size_t arrow = detail::find_pair(s, '-', '>', true);
  if (arrow == std::string_view::npos) throw schema_syntax_error{"typex schema: no `-> <return type>`"};
  return trim(s.substr(arrow + 2));
}

}  // namespace detail::schema_parse

namespace detail {
// The parsed arguments of the schema text S (a fixed_string template argument: the arg_specs'
// string_views point into it, which has static storage).
template <auto S>
inline constexpr auto schema_args_v = schema_parse::parse_args<schema_parse::count_args(S.view())>(S.view());

template <auto S>
constexpr op_schema make_schema() {
  if constexpr (S.size() == 0) {
    return {};
  } else {
    constexpr std::size_t n = schema_parse::count_args(S.view());
    return {S.view(), schema_parse::name_of(S.view()), std::span<const arg_spec>(schema_args_v<S>.args, n),
            schema_parse::returns_of(S.view())};
  }
}
}  // namespace detail

}  // namespace typex
