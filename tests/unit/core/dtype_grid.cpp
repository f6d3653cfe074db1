// The dtype grid: for every binary op typex has (and neg), every pair of dtypes and every kind of
// Python scalar, typex's op gives PyTorch's result dtype, or refuses where PyTorch refuses, with
// PyTorch's words in its sentence. The reference is tests/data/dtype_grid.inc, written by
// tools/dtype_grid.py with torch 2.15 on the CPU.
//
// Where PyTorch gives a result, the dtype checked is the one the op's own compile-time rule gives
// (Op::result over tensor specs of those dtypes), so the test sees the ops, not a copy of their
// rules. Where PyTorch refuses, the op's rule says so (dtype_verdict) and its sentence holds
// PyTorch's message; that the refusal is a compile error is the compile-fail cases' part
// (dtype_matmul_mixed, dtype_bool_sub, ...).
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>

using namespace typex;

namespace {

struct grid_entry {
  std::string_view op;
  dtype a;
  std::string_view b;  // a dtype's name, or a Python scalar's kind: "int", "float", "bool" ("none" for neg)
  std::optional<dtype> result;
  std::string_view error;
};

constexpr grid_entry grid[] = {
#include "../../data/dtype_grid.inc"
};

std::optional<dtype> dtype_named(std::string_view n) {
  for (const dtype d : all_dtypes)
    if (name(d) == n) return d;
  return std::nullopt;
}

// What typex does with (op, a, b): its result dtype, or the refusal's sentence (without "typex::op: ").
struct outcome {
  std::optional<dtype> result;
  std::string sentence;
};

template <dtype D>
using spec2 = tensor_spec<dtype_tag<D>, shape<fix<2>>>;
template <dtype D>
using spec23 = tensor_spec<dtype_tag<D>, shape<fix<2>, fix<3>>>;

// The op's own rule over specs of every dtype pair its verdict allows (a compile-time table), and
// its verdict for the rest.
template <class Verdict, class ResultOf>
std::array<std::array<outcome, 10>, 10> run_grid(Verdict, ResultOf result_of) {
  std::array<std::array<outcome, 10>, 10> t{};
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto row = [&]<std::size_t A>(std::integral_constant<std::size_t, A>) {
      [&]<std::size_t... J>(std::index_sequence<J...>) {
        auto cell = [&]<std::size_t B>(std::integral_constant<std::size_t, B>) {
          constexpr dtype da = all_dtypes[A], db = all_dtypes[B];
          constexpr dtype_verdict v = Verdict{}(da, db);
          if constexpr (v.ok()) {
            t[A][B].result = result_of.template operator()<da, db>();
          } else {
            detail::string_writer w{t[A][B].sentence};
            put_dtype_refusal(w, v);
          }
        };
        (cell(std::integral_constant<std::size_t, J>{}), ...);
      }(std::make_index_sequence<10>{});
    };
    (row(std::integral_constant<std::size_t, I>{}), ...);
  }(std::make_index_sequence<10>{});
  return t;
}

template <class Op>
struct binary_result {
  template <dtype A, dtype B>
  dtype operator()() const {
    return decltype(Op::result(spec2<A>{}, spec2<B>{}))::dtype_type::value;
  }
};

// The outcome for dtype a of a rule over one dtype (Verdict: a captureless callable, dtype ->
// dtype_verdict): Result<d>() is instantiated only for the dtypes the verdict allows.
template <class Verdict, class Result>
outcome one_dtype_outcome(dtype a, Verdict, Result result) {
  outcome o;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto cell = [&]<std::size_t A>(std::integral_constant<std::size_t, A>) {
      constexpr dtype_verdict v = Verdict{}(all_dtypes[A]);
      if (a != all_dtypes[A]) return;
      if constexpr (v.ok()) {
        o.result = result.template operator()<all_dtypes[A]>();
      } else {
        detail::string_writer w{o.sentence};
        put_dtype_refusal(w, v);
      }
    };
    (cell(std::integral_constant<std::size_t, I>{}), ...);
  }(std::make_index_sequence<10>{});
  return o;
}

// tensor (dtype a) op Python scalar, by the op's rule over a spec and a C++ scalar.
template <class Op, class Scalar, dtype_verdict (*Rule)(operand_dtype, operand_dtype)>
outcome scalar_outcome(dtype a) {
  return one_dtype_outcome(
      a, [](dtype d) { return Rule({d}, scalar_operand<Scalar>()); },
      []<dtype D>() { return decltype(Op::result(spec2<D>{}, Scalar{}))::dtype_type::value; });
}

outcome neg_outcome(dtype a) {
  return one_dtype_outcome(a, [](dtype d) { return neg_dtypes(d); },
                           []<dtype D>() { return decltype(neg_op::result(spec2<D>{}))::dtype_type::value; });
}

struct promoting_rule {
  constexpr dtype_verdict operator()(dtype a, dtype b) const { return promoting_dtypes({a}, {b}); }
};
struct sub_rule {
  constexpr dtype_verdict operator()(dtype a, dtype b) const { return sub_dtypes({a}, {b}); }
};
struct pow_rule {
  constexpr dtype_verdict operator()(dtype a, dtype b) const { return pow_dtypes({a}, {b}); }
};
struct matmul_rule {
  constexpr dtype_verdict operator()(dtype a, dtype b) const { return matmul_dtypes(a, b); }
};
struct bmm_rule {
  constexpr dtype_verdict operator()(dtype a, dtype b) const { return bmm_dtypes(a, b); }
};
// linear(x, w, bias) and addmm(bias, x, w): x and w of dtype a, the bias of dtype b
struct linear_bias_rule {
  constexpr dtype_verdict operator()(dtype a, dtype b) const { return addmm_dtypes(b, a, a); }
};
// linear(x, w, bias): x of dtype a, w and the bias of dtype b
struct linear_layer_rule {
  constexpr dtype_verdict operator()(dtype a, dtype b) const { return addmm_dtypes(b, a, b); }
};

std::size_t index_of(dtype d) {
  for (std::size_t i = 0; i < 10; ++i)
    if (all_dtypes[i] == d) return i;
  return 10;
}

void check_entry(const grid_entry& e, const outcome& got) {
  INFO(e.op << "(" << name(e.a) << ", " << e.b << ")");
  if (e.result) {
    REQUIRE(got.result.has_value());
    CHECK(name(*got.result) == name(*e.result));
    CHECK(got.sentence.empty());
  } else {
    CHECK_FALSE(got.result.has_value());
    INFO("typex: " << got.sentence);
    INFO("torch: " << e.error);
    CHECK(got.sentence.find(e.error) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("dtype grid: every binary op, every dtype pair and scalar kind, as PyTorch (torch 2.15, CPU)") {
  const auto add = run_grid(promoting_rule{}, binary_result<add_op>{});
  const auto sub = run_grid(sub_rule{}, binary_result<sub_op>{});
  const auto mul = run_grid(promoting_rule{}, binary_result<mul_op>{});
  const auto div = run_grid(promoting_rule{}, binary_result<div_op>{});
  const auto maximum = run_grid(promoting_rule{}, binary_result<maximum_op>{});
  const auto minimum = run_grid(promoting_rule{}, binary_result<minimum_op>{});
  const auto pow = run_grid(pow_rule{}, binary_result<pow_op>{});
  const auto eq = run_grid(promoting_rule{}, binary_result<eq_op>{});
  const auto lt = run_grid(promoting_rule{}, binary_result<lt_op>{});
  const auto land = run_grid(promoting_rule{}, binary_result<logical_and_op>{});
  const auto lxor = run_grid(promoting_rule{}, binary_result<logical_xor_op>{});
  const auto matmul = run_grid(matmul_rule{}, []<dtype A, dtype B>() {
    return decltype(matmul_op::result(spec23<A>{}, tensor_spec<dtype_tag<B>, shape<fix<3>, fix<2>>>{}))::dtype_type::value;
  });
  const auto mm = run_grid(matmul_rule{}, []<dtype A, dtype B>() {
    return decltype(mm_op<2>::result(spec23<A>{}, tensor_spec<dtype_tag<B>, shape<fix<3>, fix<2>>>{}))::dtype_type::value;
  });
  const auto bmm = run_grid(bmm_rule{}, []<dtype A, dtype B>() {
    using X = tensor_spec<dtype_tag<A>, shape<fix<1>, fix<2>, fix<3>>>;
    using Y = tensor_spec<dtype_tag<B>, shape<fix<1>, fix<3>, fix<2>>>;
    return decltype(mm_op<3>::result(X{}, Y{}))::dtype_type::value;
  });
  const auto linear = run_grid(matmul_rule{}, []<dtype A, dtype B>() {
    return decltype(linear_op::result(spec23<A>{}, tensor_spec<dtype_tag<B>, shape<fix<4>, fix<3>>>{}))::dtype_type::value;
  });
  const auto linear_bias = run_grid(linear_bias_rule{}, []<dtype A, dtype B>() {
    using W = tensor_spec<dtype_tag<A>, shape<fix<4>, fix<3>>>;
    return decltype(linear_op::result(spec23<A>{}, W{}, tensor_spec<dtype_tag<B>, shape<fix<4>>>{}))::dtype_type::value;
  });
  const auto linear_layer = run_grid(linear_layer_rule{}, []<dtype A, dtype B>() {
    using W = tensor_spec<dtype_tag<B>, shape<fix<4>, fix<3>>>;
    return decltype(linear_op::result(spec23<A>{}, W{}, tensor_spec<dtype_tag<B>, shape<fix<4>>>{}))::dtype_type::value;
  });
  const auto addmm = run_grid(linear_bias_rule{}, []<dtype A, dtype B>() {
    using M = tensor_spec<dtype_tag<A>, shape<fix<3>, fix<4>>>;
    return decltype(addmm_op::result(tensor_spec<dtype_tag<B>, shape<fix<2>, fix<4>>>{}, spec23<A>{}, M{}))::dtype_type::value;
  });
  const std::pair<std::string_view, const std::array<std::array<outcome, 10>, 10>*> tables[] = {
      {"add", &add},   {"sub", &sub},       {"mul", &mul},          {"div", &div},       {"maximum", &maximum},
      {"minimum", &minimum}, {"pow", &pow}, {"eq", &eq},            {"lt", &lt},         {"logical_and", &land},
      {"logical_xor", &lxor}, {"matmul", &matmul}, {"mm", &mm},     {"bmm", &bmm},       {"linear", &linear},
      {"linear_bias", &linear_bias}, {"linear_layer", &linear_layer}, {"addmm", &addmm}};

  std::size_t checked = 0, refusals = 0;
  for (const grid_entry& e : grid) {
    if (e.op == "neg") {
      check_entry(e, neg_outcome(e.a));
    } else if (const auto b = dtype_named(e.b)) {
      const std::array<std::array<outcome, 10>, 10>* table = nullptr;
      for (const auto& [op, t] : tables)
        if (op == e.op) table = t;
      REQUIRE_MESSAGE(table != nullptr, "no typex op for the grid's " << e.op);
      check_entry(e, (*table)[index_of(e.a)][index_of(*b)]);
    } else {  // tensor op Python scalar
      auto with = [&]<class Op, dtype_verdict (*Rule)(operand_dtype, operand_dtype)>() {
        if (e.b == "int") return scalar_outcome<Op, int, Rule>(e.a);
        if (e.b == "float") return scalar_outcome<Op, double, Rule>(e.a);
        return scalar_outcome<Op, bool, Rule>(e.a);
      };
      if (e.op == "add") check_entry(e, with.operator()<add_op, promoting_dtypes>());
      else if (e.op == "sub") check_entry(e, with.operator()<sub_op, sub_dtypes>());
      else if (e.op == "mul") check_entry(e, with.operator()<mul_op, promoting_dtypes>());
      else if (e.op == "div") check_entry(e, with.operator()<div_op, promoting_dtypes>());
      else FAIL("no scalar form in the test for the grid's " << e.op);
    }
    ++checked;
    refusals += e.result ? 0 : 1;
  }
  // the whole grid: 11 binary ops x 100 pairs, 4 of them x 30 scalar cases, 7 matrix ops x 100, neg x 10
  CHECK(checked == 11 * 100 + 4 * 30 + 7 * 100 + 10);
  CHECK(refusals > 300);  // (what PyTorch refuses: sub with bools, mixed matrix dtypes, bool kernels, -bool)
}

TEST_CASE("dtype rules: a bool tensor with an integer scalar gives i64, eagerly and in the program") {
  tensor<b8, fix<3>> m({3}, "m");
  m.data()[1] = true;
  const auto r = m + 2;  // torch: (torch.tensor([False, True, False]) + 2).dtype == torch.int64
  static_assert(std::is_same_v<decltype(r)::dtype_type, i64>);
  CHECK(r(0) == 2);
  CHECK(r(1) == 3);
  const auto f = m * 1.5;
  static_assert(std::is_same_v<decltype(f)::dtype_type, f32>);
  CHECK(f(1) == doctest::Approx(1.5));
  const auto k = m + true;  // a bool scalar does not raise a bool tensor
  static_assert(std::is_same_v<decltype(k)::dtype_type, b8>);
}
