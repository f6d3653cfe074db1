// Compile-fail pair "op_schema_syntax": an op's schema is ATen's text, parsed at compile time; a
// type ATen does not have (`double`, where ATen writes `float`) is a compile error. The first line
// names the schema text being read; the error line quotes the rule ("typex schema: unknown
// argument type (known: Tensor, Scalar, int, SymInt, float, bool, ...)").
// expect: (is not a constant expression|unknown argument type)
// expect-clang: error: constexpr variable 'schema_args_v<.*' must be initialized by a constant expression
#include <typex/typex.hpp>

struct scale_op {  // a user-defined op whose schema misspells a type
  static constexpr std::string_view target = "mylib.scale.default";
  static constexpr std::string_view schema = "mylib::scale(Tensor self, double factor) -> Tensor";
};

int main() { return typex::op_id_of<scale_op>.schema().index("factor") == 1 ? 0 : 1; }
