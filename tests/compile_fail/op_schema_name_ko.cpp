// Compile-fail pair "op_schema_name": an op's schema must name the overload its target records
// (the schema of "aten::add.Tensor(...)" goes with the target "aten.add.Tensor"); a schema copied
// from another op is a compile error with that sentence.
// expect: (In instantiation of .*op_info_of\(\) \[with Op = scale_op\]|static assertion failed: typex: the op's schema names another overload than its target)
// expect-clang: error: static assertion failed.*typex: the op's schema names another overload than its target
#include <typex/typex.hpp>

struct scale_op {  // its schema is the one of mylib.shift
  static constexpr std::string_view target = "mylib.scale.default";
  static constexpr std::string_view schema = "mylib::shift(Tensor self, float offset) -> Tensor";
};

int main() { return typex::op_id_of<scale_op>.schema().args.size() == 2 ? 0 : 1; }
