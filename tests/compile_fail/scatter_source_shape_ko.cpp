// Compile-fail pair "scatter_source_shape": a decoder step writes the new key into row `pos` of
// its key cache (torch: self.cache[:, pos] = k), but projects the key to the model width (32)
// instead of the cache's head width (16): the message names the op, the source's shape, the
// region's and the dim; the program is exported and run afterwards.
// expect: typex::select_scatter: the source \[1, 32\] does not have the shape of the region it is written to, \[1, 16\], at dim 1 \(32 vs 16\)
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

struct decoder_step {
  typex::buffer<typex::f32, typex::fix<1>, typex::fix<8>, typex::fix<16>> keys;  // [batch, positions, head]
  typex::nn::Linear<32, 32> k_proj;  // the mistake: the model width, not the head width
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
