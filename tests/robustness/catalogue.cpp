// The robustness catalogue: every public way to run or feed a program, given what an adversarial
// but fair user would try. Each case either throws the typed exception its row names, with the
// message part it names, or (where the input is valid: NaN, Inf, denormals, empty tensors, reused
// or aliased outputs) gives exactly what the eager model gives.
//
// Entry points: any_tensor and host tensor construction, host_tensor::bind, the type-erased module
// (operator() and run(inputs, outputs)), exported_program::bind_inputs, the typed module,
// export_program, load_state_dict (the model's and the module's).
#include "models.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <typeinfo>

using namespace typex;

namespace {
enum class expect : unsigned char { shape, constraint, dtype, argument, state, tree, none };

const char* name_of(expect e) {
  switch (e) {
    case expect::shape: return "shape_error";
    case expect::constraint: return "constraint_violation";
    case expect::dtype: return "dtype_error";
    case expect::argument: return "argument_error";
    case expect::state: return "state_error";
    case expect::tree: return "tree_error";
    case expect::none: return "no exception";
  }
  return "?";
}

bool is(const typex::error& e, expect k) {
  switch (k) {
    case expect::shape: return dynamic_cast<const shape_error*>(&e) && !dynamic_cast<const constraint_violation*>(&e);
    case expect::constraint: return dynamic_cast<const constraint_violation*>(&e) != nullptr;
    case expect::dtype: return dynamic_cast<const dtype_error*>(&e) != nullptr;
    case expect::argument: return dynamic_cast<const argument_error*>(&e) != nullptr;
    case expect::state: return dynamic_cast<const state_error*>(&e) != nullptr;
    case expect::tree: return dynamic_cast<const tree_error*>(&e) != nullptr;
    case expect::none: return false;
  }
  return false;
}

struct row {
  std::string entry;    // the entry point
  std::string what;     // the class of input
  expect kind;          // the exception expected (none: the call must succeed and check itself)
  std::string message;  // a part of the message
  std::function<void()> call;
};

int run_catalogue(const std::vector<row>& rows) {
  int checked = 0;
  for (const row& r : rows) {
    const std::string label = r.entry + ": " + r.what + " -> " + name_of(r.kind) + " '" + r.message + "'";
    INFO(label);
    try {
      r.call();
      CHECK(r.kind == expect::none);
    } catch (const typex::error& e) {
      const std::string thrown = std::string("threw ") + typeid(e).name() + ": " + e.what();
      INFO(thrown);
      CHECK(is(e, r.kind));
      CHECK(std::string(e.what()).find(r.message) != std::string::npos);
    }
    ++checked;
  }
  return checked;
}

std::vector<index_t> ext(std::initializer_list<index_t> e) { return e; }

// A batch whose range starts at 0: empty batches are valid inputs.
using rows = sym<"rows", 0, 64>;
using any_batch = shape<rows, fix<8>>;
}  // namespace

TEST_CASE("robustness catalogue: every entry point, every class of bad input") {
  const auto m = rb::random_model<rb::mlp>(31);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))));
  const auto ep_dyn = export_program(m, input<"x">(tensor_spec<f32, any_batch>(any_batch(rows(2), {}))));
  const auto run = program_module<eigen_backend>(ep);
  const auto run_dyn = program_module<eigen_backend>(ep_dyn);
  const auto typed = ep.module();
  const any_tensor good = rb::random_x(3, 32).erase();
  auto moved_from = [] {
    any_tensor a = rb::random_x(2, 1).erase();
    any_tensor b = std::move(a);
    (void)b;
    return a;
  };
  // eager == program (values: NaN == NaN), for inputs that are valid
  auto eager_equal = [&](const any_tensor& x, const program_module<eigen_backend>& r) {
    const any_tensor want = m(host_tensor<f32, any_batch>::bind(x)).erase();
    const auto got = r({x});
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].extents() == want.extents());
    for (index_t i = 0; i < want.numel(); ++i) {
      const float a = got[0].data<float>()[i], b = want.data<float>()[i];
      REQUIRE((a == b || (std::isnan(a) && std::isnan(b))));
    }
  };
  auto filled = [](index_t rows, float v) {
    any_tensor t(dtype::f32, {rows, 8});
    for (index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
    return t;
  };

  const std::vector<row> rows = {
      // ---- any_tensor construction
      {"any_tensor", "negative extent", expect::argument, "has a negative extent -1 at dim 1", [] { any_tensor(dtype::f32, {2, -1}); }},
      {"any_tensor", "element count over 2^62", expect::argument, "has too many elements", [] { any_tensor(dtype::f32, {index_t{1} << 40, index_t{1} << 40}); }},
      {"any_tensor", "byte count over 2^63", expect::argument, "needs more bytes than a pointer can address", [] { any_tensor(dtype::f64, {(index_t{1} << 61) + 1}); }},
      {"any_tensor", "storage too small", expect::argument, "storage of 16 bytes is too small for 32", [] { any_tensor(dtype::f32, {8}, storage(16)); }},
      {"any_tensor", "misaligned storage view", expect::argument, "is not aligned", [] { const storage s(64); any_tensor(dtype::i64, {2}, storage::view(s, 4, 16)); }},
      {"any_tensor", "moved-from storage", expect::state, "has no storage (it was moved from)", [] { storage s(16); storage t = std::move(s); any_tensor(dtype::f32, {2}, s); }},
      {"any_tensor", "data<T> of another dtype", expect::dtype, "the tensor holds f32, not f64", [&] { (void)good.data<double>(); }},
      // ---- host tensor construction
      {"host_tensor", "wrong rank", expect::shape, "has rank 3, but its type [batch, 8] has rank 2", [] { rb::x_tensor({1, 2, 8}); }},
      {"host_tensor", "wrong static extent", expect::shape, "does not fit its type [batch, 8] at dim 1", [] { rb::x_tensor({2, 7}); }},
      {"host_tensor", "symbol above its range", expect::constraint, "does not fit its type [batch, 8] at dim 0", [] { rb::x_tensor({65, 8}); }},
      {"host_tensor", "symbol below its range (empty)", expect::constraint, "does not fit its type [batch, 8] at dim 0", [] { rb::x_tensor({0, 8}); }},
      {"host_tensor", "negative extent", expect::shape, "extent -3 is outside the range of ? [0, int_oo]", [] { tensor<f32, dyn>({-3}); }},
      {"host_tensor", "huge extents", expect::argument, "has too many elements", [] { tensor<f32, dyn, dyn, dyn>({1 << 30, 1 << 30, 1 << 30}); }},
      {"host_tensor", "from_values count", expect::shape, "3 values given for shape [2], which holds 2", [] { (void)tensor<f32, fix<2>>::from_values({}, {1.f, 2.f, 3.f}); }},
      {"host_tensor", "at() out of range", expect::argument, "index 2 is out of range for dim 0 of shape [2]", [] { (void)tensor<f32, fix<2>>({2}).at(2); }},
      {"host_tensor", "moved-from fill", expect::state, "moved from", [] { auto x = rb::random_x(2, 1); auto y = std::move(x); x.fill(0); }},
      // ---- host_tensor::bind
      {"host_tensor::bind", "wrong dtype", expect::dtype, "input 'x' has dtype f64, but its type tensor<f32[batch, 8]> wants f32", [] { (void)rb::x_tensor::bind(any_tensor(dtype::f64, {2, 8}), "input 'x'"); }},
      {"host_tensor::bind", "wrong rank", expect::shape, "input 'x' has rank 1", [] { (void)rb::x_tensor::bind(any_tensor(dtype::f32, {8}), "input 'x'"); }},
      {"host_tensor::bind", "wrong extent", expect::shape, "at dim 1", [] { (void)rb::x_tensor::bind(any_tensor(dtype::f32, {2, 9}), "input 'x'"); }},
      {"host_tensor::bind", "symbol out of range", expect::constraint, "at dim 0", [] { (void)rb::x_tensor::bind(any_tensor(dtype::f32, {100, 8}), "input 'x'"); }},
      {"host_tensor::bind", "moved-from tensor", expect::state, "input 'x': the tensor has no storage", [&] { (void)rb::x_tensor::bind(moved_from(), "input 'x'"); }},
      // ---- the type-erased module: operator()
      {"program_module()", "no inputs", expect::argument, "the exported program takes 1 tensor input (x), but 0 were given", [&] { (void)run({}); }},
      {"program_module()", "two inputs", expect::argument, "but 2 were given", [&] { (void)run({good, good}); }},
      {"program_module()", "wrong dtype", expect::dtype, "input 'x' has dtype f64, expected f32[batch, 8]", [&] { (void)run({any_tensor(dtype::f64, {3, 8})}); }},
      {"program_module()", "wrong dtype after a planned call (fast path)", expect::dtype, "input 'x' has dtype i32", [&] { (void)run({good}); (void)run({any_tensor(dtype::i32, {3, 8})}); }},
      {"program_module()", "wrong rank", expect::shape, "input 'x' is f32[8], expected f32[batch, 8] (rank 2)", [&] { (void)run({any_tensor(dtype::f32, {8})}); }},
      {"program_module()", "wrong static extent", expect::shape, "dim 1 is 7, expected 8", [&] { (void)run({any_tensor(dtype::f32, {3, 7})}); }},
      {"program_module()", "symbol above its range", expect::constraint, "binds symbol 'batch' to 65, outside its range VR[1, 64]", [&] { (void)run({any_tensor(dtype::f32, {65, 8})}); }},
      {"program_module()", "empty batch below the range", expect::constraint, "binds symbol 'batch' to 0, outside its range VR[1, 64]", [&] { (void)run({any_tensor(dtype::f32, {0, 8})}); }},
      {"program_module()", "moved-from input", expect::state, "input 'x': the tensor has no storage (it was moved from)", [&] { (void)run({moved_from()}); }},
      {"program_module()", "moved-from module", expect::state, "this module was moved from", [&] { auto r = run; auto s = std::move(r); (void)r({good}); }},
      {"program_module()", "NaN, Inf, -Inf and denormals propagate as eager", expect::none, "", [&] {
         any_tensor x = filled(4, 1.0f);
         x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
         x.data<float>()[9] = std::numeric_limits<float>::infinity();
         x.data<float>()[17] = -std::numeric_limits<float>::infinity();
         x.data<float>()[25] = std::numeric_limits<float>::denorm_min();
         eager_equal(x, run_dyn);
       }},
      {"program_module()", "all denormal input", expect::none, "", [&] { eager_equal(filled(3, std::numeric_limits<float>::denorm_min()), run_dyn); }},
      {"program_module()", "empty tensor (dyn batch 0)", expect::none, "", [&] {
         const auto out = run_dyn({any_tensor(dtype::f32, {0, 8})});
         REQUIRE(out[0].extents() == ext({0, 4}));
       }},
      {"program_module()", "largest batch of the range", expect::none, "", [&] { eager_equal(rb::random_x(64, 3).erase(), run); }},
      // ---- run(inputs, outputs)
      {"run(inputs, outputs)", "outputs of the wrong dtype and extents are replaced", expect::none, "", [&] {
         std::vector<any_tensor> out{any_tensor(dtype::i64, {7}), any_tensor(dtype::f32, {1})};
         run.run(std::vector<any_tensor>{good}, out);
         REQUIRE(out.size() == 1);
         REQUIRE(rb::same_bits(out[0], run({good})[0]));
       }},
      {"run(inputs, outputs)", "run(v, v)", expect::none, "", [&] {
         std::vector<any_tensor> v{good.clone()};
         run.run(v, v);
         REQUIRE(rb::same_bits(v[0], run({good})[0]));
       }},
      {"run(inputs, outputs)", "an output sharing the input's storage", expect::none, "", [&] {
         const any_tensor in = good.clone();
         std::vector<any_tensor> out{any_tensor(dtype::f32, {3, 4}, in.get_storage())};
         run.run(std::vector<any_tensor>{in}, out);
         REQUIRE(rb::same_bits(in, good));
         REQUIRE(rb::same_bits(out[0], run({good})[0]));
       }},
      {"run(inputs, outputs)", "wrong dtype", expect::dtype, "input 'x' has dtype u8", [&] {
         std::vector<any_tensor> out;
         run.run(std::vector<any_tensor>{any_tensor(dtype::u8, {3, 8})}, out);
       }},
      // ---- bind_inputs
      {"bind_inputs", "arity", expect::argument, "but 3 were given", [&] { (void)ep.bind_inputs(std::vector<any_tensor>{good, good, good}); }},
      {"bind_inputs", "out of range", expect::constraint, "outside its range VR[1, 64]", [&] { (void)ep.bind_inputs(std::vector<any_tensor>{any_tensor(dtype::f32, {1000, 8})}); }},
      {"bind_inputs", "moved-from", expect::state, "no storage", [&] { (void)ep.bind_inputs(std::vector<any_tensor>{moved_from()}); }},
      {"bind_inputs", "binds the batch", expect::none, "", [&] { REQUIRE(ep.bind_inputs(std::vector<any_tensor>{good}).value("batch") == 3); }},
      // ---- the typed module
      {"typed module", "a valid call equals eager", expect::none, "", [&] { const auto x = rb::random_x(5, 4); REQUIRE(rb::same_bits(typed(x).erase(), m(x).erase())); }},
      {"typed module", "moved-from input tensor", expect::state, "moved from", [&] { auto x = rb::random_x(2, 1); auto y = std::move(x); (void)typed(x); }},
      // ---- export
      {"export_program", "example outside its declared range", expect::constraint, "", [&] {
         using S = shape<sym<"n", 2, 8>, fix<8>>;
         (void)export_program(m, input<"x">(tensor_spec<f32, S>(S(sym<"n", 2, 8>(9), {}))));
       }},
      {"export_program", "moved-from model", expect::state, "the module's tensor 'fc1.weight' has no storage", [&] {
         auto a = rb::random_model<rb::mlp>(1);
         auto b = std::move(a);
         (void)b;
         (void)export_program(a, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))));
       }},
      // ---- load_state_dict
      {"load_state_dict(model)", "missing keys (strict)", expect::argument, "missing keys: 'fc2.weight', 'fc2.bias'", [&] {
         auto n = rb::random_model<rb::mlp>(2);
         named_tensors sd;
         sd.insert("fc1.weight", state_dict(m).at("fc1.weight"));
         sd.insert("fc1.bias", state_dict(m).at("fc1.bias"));
         load_state_dict(n, sd);
       }},
      {"load_state_dict(model)", "unexpected keys (strict)", expect::argument, "unexpected keys: 'nope'", [&] {
         auto n = rb::random_model<rb::mlp>(2);
         named_tensors sd;
         for (const auto& [k, t] : state_dict(m)) sd.insert(k, t);
         sd.insert("nope", any_tensor(dtype::f32, {1}));
         load_state_dict(n, sd);
       }},
      {"load_state_dict(model)", "wrong shape", expect::shape, "'fc1.bias' is f32[16] in the module but f32[15] in the state dict", [&] {
         auto n = rb::random_model<rb::mlp>(2);
         named_tensors sd;
         for (const auto& [k, t] : state_dict(m)) sd.insert(k, k == "fc1.bias" ? any_tensor(dtype::f32, {15}) : t);
         load_state_dict(n, sd);
       }},
      {"load_state_dict(model)", "wrong dtype", expect::dtype, "'fc1.bias' is f32[16] in the module but f16[16] in the state dict", [&] {
         auto n = rb::random_model<rb::mlp>(2);
         named_tensors sd;
         for (const auto& [k, t] : state_dict(m)) sd.insert(k, k == "fc1.bias" ? any_tensor(dtype::f16, {16}) : t);
         load_state_dict(n, sd);
       }},
      {"load_state_dict(model)", "moved-from source tensor", expect::state, "the state dict's 'fc2.bias': the tensor has no storage", [&] {
         auto n = rb::random_model<rb::mlp>(2);
         named_tensors sd;
         for (const auto& [k, t] : state_dict(m)) sd.insert(k, k == "fc2.bias" ? moved_from() : t);
         load_state_dict(n, sd);
       }},
      {"load_state_dict(module)", "wrong shape leaves the module as it was", expect::shape, "typex::program_module::load_state_dict: 1 problem, nothing was loaded: size mismatch: 'fc2.weight' is f32[4, 16]", [&] {
         auto r = run;
         named_tensors sd;
         for (const auto& [k, t] : state_dict(m)) sd.insert(k, k == "fc2.weight" ? any_tensor(dtype::f32, {4, 15}) : t);
         try {
           (void)r.load_state_dict(sd);
         } catch (...) {
           REQUIRE(rb::same_bits(r({good})[0], run({good})[0]));
           throw;
         }
       }},
      {"load_state_dict(module)", "non-strict reports what it did not load", expect::none, "", [&] {
         auto r = run;
         named_tensors sd;
         sd.insert("fc2.bias", any_tensor(dtype::f32, {4}));
         const load_result lr = r.load_state_dict(sd, false);
         REQUIRE(lr.missing_keys.size() == 3);
         REQUIRE(r.state_dict().at("fc2.bias").data<float>()[0] == 0.0f);
       }},
  };
  const int checked = run_catalogue(rows);
  MESSAGE("robustness catalogue: " << checked << " cases");
  CHECK(checked == static_cast<int>(rows.size()));
}
