// Compile-fail pair "op_schema_name", the twin that builds: the schema names the op's own overload.
#include <typex/typex.hpp>

struct scale_op {
  static constexpr std::string_view target = "mylib.scale.default";
  static constexpr std::string_view schema = "mylib::scale(Tensor self, float factor) -> Tensor";
};

int main() { return typex::op_id_of<scale_op>.schema().args.size() == 2 ? 0 : 1; }
