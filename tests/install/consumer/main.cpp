// A consumer of typex: shapes checked at compile time, a tensor bound at run time, a pytree.
#include <typex/typex.hpp>

#include <cstdio>

using batch = typex::sym<"batch", 1, 1024>;
using image = typex::tensor<typex::f32, batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;

int main() {
  constexpr auto hidden = typex::matmul_shape(typex::shape_c<32, 784>{}, typex::shape_c<784, 512>{});
  static_assert(std::is_same_v<std::remove_const_t<decltype(hidden)>, typex::shape_c<32, 512>>);

  const image x({8, 1, 28, 28}, "input 'x'");
  const auto flat = typex::flatten_shape<1>(x.shape());
  const auto tree = std::make_tuple(x, 3.0f);
  const bool ok = flat.to_string() == "[8, 784]" && decltype(flat)::type_string() == "[batch, 784]" &&
                  typex::leaf_count(tree) == 2;
  std::printf("typex %d.%d.%d consumer: %s %s\n", typex::version_major, typex::version_minor, typex::version_patch,
              x.to_string().c_str(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
