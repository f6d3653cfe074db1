// Compile-fail pair "model_index_matmul": one-hot rows built from i64 class indices (eq gives bool,
// turned into i64 with to<i64>) multiplied with an f32 embedding table: i64 @ f32, which PyTorch
// refuses (matmul does not promote). One error, in PyTorch's words, and the model's use after it.
// expect: typex::matmul: expected m1 and m2 to have the same dtype, but got: long int != float
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 128>;
struct bag {
  typex::parameter<typex::f32, typex::fix<10>, typex::fix<8>> table;  // [classes, features]
  typex::nn::Linear<8, 2> head;
  template <class L, class C>
  auto operator()(const L& labels, const C& classes) const {
    const auto hit = typex::eq(typex::unsqueeze<1>(labels), classes);  // [batch, 10], bool
#ifdef TYPEX_CF_FIXED
    const auto one_hot = typex::to<typex::f32>(hit);
#else
    const auto one_hot = typex::to<typex::i64>(hit);  // the mistake: integer one-hot rows
#endif
    return head(typex::matmul(one_hot, table));
  }
};
BOOST_HANA_ADAPT_STRUCT(bag, table, head);

int main() {
  bag model;
  typex::init_module(model, 2);
  using ls = typex::shape<batch>;
  using cs = typex::shape<typex::fix<10>>;
  const auto program = typex::export_program(model, typex::input<"labels">(typex::tensor_spec<typex::i64, ls>(ls(batch(3)))),
                                             typex::input<"classes">(typex::tensor_spec<typex::i64, cs>(cs{})));
  typex::tensor<typex::i64, batch> labels({3}, "labels");
  typex::tensor<typex::i64, typex::fix<10>> classes({10}, "classes");
  const auto y = program.module()(labels, classes);
  return y(0, 1) == y(0, 1) ? 0 : 1;
}
