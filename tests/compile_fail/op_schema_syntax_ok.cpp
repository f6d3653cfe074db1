// Compile-fail pair "op_schema_syntax", the twin that builds: the same op with ATen's `float`.
#include <typex/typex.hpp>

struct scale_op {
  static constexpr std::string_view target = "mylib.scale.default";
  static constexpr std::string_view schema = "mylib::scale(Tensor self, float factor) -> Tensor";
};

int main() { return typex::op_id_of<scale_op>.schema().index("factor") == 1 ? 0 : 1; }
