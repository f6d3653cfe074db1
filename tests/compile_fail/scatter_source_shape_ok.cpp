// Compile-fail pair "scatter_source_shape": this twin must build (the key projected to the head width). See scatter_source_shape_ko.cpp.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

struct decoder_step {
  typex::buffer<typex::f32, typex::fix<1>, typex::fix<8>, typex::fix<16>> keys;  // [batch, positions, head]
  typex::nn::Linear<32, 16> k_proj;
  template <class X>
  auto operator()(const X& x) const {
    const auto cache = typex::as_traced(keys, x);
    typex::copy_(cache, typex::select_scatter<1>(cache, k_proj(x), 3));  // keys[:, 3] = k
    return typex::sum(cache);
  }
};
BOOST_HANA_ADAPT_STRUCT(decoder_step, keys, k_proj);

int main() {
  decoder_step model;
  typex::init_module(model, 5);
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, typex::shape<typex::fix<1>, typex::fix<32>>>()));
  const auto total = program.module()(typex::tensor<typex::f32, typex::fix<1>, typex::fix<32>>());
  return total() == total() ? 0 : 1;
}
