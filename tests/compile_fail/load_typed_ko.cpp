// Compile-fail pair "load_typed": a service loads a saved model and asks for the type-erased
// program by name as the template argument (typex::load<typex::exported_program>), then runs it.
// typex::load<P> takes a typed program type; the message names the type given and both fixes.
// expect: typex::load<P>: P = typex::exported_program is not a typed program type
#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>
#include <typex/typex.hpp>

#include <filesystem>

struct classifier {
  typex::nn::Linear<16, 4> fc;
  template <class X>
  auto operator()(const X& x) const { return typex::relu(fc(x)); }
};
BOOST_HANA_ADAPT_STRUCT(classifier, fc);

int main() {
  using batch = typex::sym<"batch", 1, 32>;
  classifier model;
  typex::init_module(model, 3);
  const auto exported = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<16>>>()));
  const auto path = std::filesystem::temp_directory_path() / "typex_cf_load_typed.typex";
  typex::save(exported, path);
#ifdef TYPEX_CF_FIXED
  const typex::exported_program program = typex::load(path);
#else
  const auto program = typex::load<typex::exported_program>(path);  // the mistake: not a typed program type
#endif
  const auto out = program.module()({typex::any_tensor(typex::dtype::f32, {2, 16})});
  return out.at(0).numel() == 8 ? 0 : 1;
}
