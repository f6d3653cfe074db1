// libFuzzer target: the type-erased call path and the run-time input checker.
//
// Each input is decoded into a call of one of three exported programs (an MLP planned as fused
// GEMMs, a model with a view output, a data-dependent masked_select on the stepwise engine):
// tensors of random dtypes, ranks and extents (small, empty, or huge), values from the input
// bytes (NaN, Inf, denormals included), and the ways a user may alias inputs and outputs (run(v, v),
// outputs sharing an input's storage, reused outputs). A call must either throw a typex::error or
// return what the eager model computes for the same tensor, bit for bit; anything else (a crash, a
// sanitizer report, a mismatch) is a finding and aborts.
//
//   build/clang/tests/typex_fuzz_call -runs=100000 <dir> tests/robustness/corpus
#include "models.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {
using namespace typex;

// Reads the fuzz input as a stream of numbers (zeros once it runs out).
struct reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | byte();
    return v;
  }
};

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "typex fuzz finding: %s\n", what);
  std::abort();
}

struct programs {
  rb::mlp mlp = rb::random_model<rb::mlp>(1);
  rb::with_view view = rb::random_model<rb::with_view>(2);
  rb::selects sel;
  program_module<eigen_backend> mlp_run, view_run, sel_run;
  programs()
      : mlp_run(export_program(mlp, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))))),
        view_run(export_program(view, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))))),
        sel_run(export_program(sel, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))))) {}
};

// What the eager model returns for x (its outputs' leaves), or nothing when binding x to the
// model's input type throws (the program must then have thrown too).
std::optional<std::vector<any_tensor>> eager(const programs& p, int which, const any_tensor& x) {
  rb::x_tensor t;
  try {
    t = rb::x_tensor::bind(x, "input 'x'");
  } catch (const typex::error&) {
    return std::nullopt;
  }
  if (which == 0) return std::vector<any_tensor>{p.mlp(t).erase()};
  if (which == 1) {
    const auto [a, b] = p.view(t);
    return std::vector<any_tensor>{a.erase(), b.erase()};
  }
  const auto [a, b] = p.sel(t);
  return std::vector<any_tensor>{a.erase(), b.erase()};
}

any_tensor make_tensor(reader& r) {
  static constexpr dtype dtypes[] = {dtype::f32, dtype::f32, dtype::f32, dtype::f64, dtype::f16, dtype::bf16,
                                     dtype::i64, dtype::i32, dtype::u8,  dtype::b8};
  const dtype dt = dtypes[r.byte() % std::size(dtypes)];
  const std::size_t rank = r.byte() % 4;
  std::vector<index_t> e(rank);
  for (auto& v : e) {
    const std::uint8_t k = r.byte();
    v = k < 200 ? k % 70 : k < 250 ? 8 : (index_t{1} << (30 + k % 33));  // (mostly small; 8 = the model's width; some huge)
  }
  // typex refuses counts that do not fit (argument_error, a fine outcome); a count it accepts but no
  // machine holds (2^59 bytes) would end in std::bad_alloc, which ASan reports as a crash instead:
  // such sizes are left out here (the size checks themselves have their regression tests)
  if (detail::checked_bytes(e, dt, "fuzz input") > (std::size_t{1} << 30)) throw argument_error("too large to allocate here");
  any_tensor t(dt, e);
  std::uint8_t* bytes = reinterpret_cast<std::uint8_t*>(t.raw_data());
  for (std::size_t i = 0; i < t.nbytes(); ++i) bytes[i] = r.byte();
  if (dt == dtype::b8)
    for (std::size_t i = 0; i < t.nbytes(); ++i) bytes[i] &= 1;  // (a bool holds 0 or 1)
  return t;
}

bool same(const std::vector<any_tensor>& a, const std::vector<any_tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].scalar_type() != b[i].scalar_type() || a[i].extents() != b[i].extents()) return false;
    // (bit equality, but NaN payloads may differ between a fused and an eager path: compare as values)
    const float* x = a[i].data<float>();
    const float* y = b[i].data<float>();
    for (index_t k = 0; k < a[i].numel(); ++k)
      if (!(x[k] == y[k] || (x[k] != x[k] && y[k] != y[k]))) return false;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const programs p;
  reader r{data, size};
  const int which = r.byte() % 3;
  const program_module<eigen_backend>& run = which == 0 ? p.mlp_run : which == 1 ? p.view_run : p.sel_run;
  const std::size_t count = r.byte() % 3;  // (the programs take one tensor: 0 and 2 are arity errors)
  std::vector<any_tensor> inputs;
  try {
    for (std::size_t i = 0; i < count; ++i) inputs.push_back(make_tensor(r));
  } catch (const typex::error&) {
    return 0;
  } catch (const std::bad_alloc&) {  // (a size typex accepts that the machine cannot hold: the standard signal)
    return 0;
  }
  const std::uint8_t mode = r.byte() % 4;
  const std::vector<any_tensor> original = [&] {
    std::vector<any_tensor> c;
    for (const auto& t : inputs) c.push_back(t.clone());
    return c;
  }();
  std::vector<any_tensor> outputs;
  if (mode == 2 && !inputs.empty() && inputs[0].nbytes() >= itemsize(inputs[0].scalar_type()))  // outputs sharing an input's storage
    outputs = {inputs[0], any_tensor(inputs[0].scalar_type(), {}, inputs[0].get_storage())};
  try {
    switch (mode) {
      case 0: outputs = run(inputs); break;
      case 1: {  // run(v, v)
        std::vector<any_tensor> v = inputs;
        run.run(v, v);
        outputs = v;
        break;
      }
      case 2: run.run(inputs, outputs); break;
      default: {  // outputs reused across two calls
        run.run(inputs, outputs);
        run.run(inputs, outputs);
      }
    }
  } catch (const typex::error&) {
    // the program refused the call: the eager model must refuse the tensor too (or the arity is wrong)
    if (count == 1 && eager(p, which, original[0]).has_value()) {
      // (one refusal the eager path cannot see: an f32 input whose values are fine everywhere)
      finding("the program refused an input the eager model accepts");
    }
    return 0;
  }
  if (count != 1) finding("a call with the wrong number of inputs succeeded");
  // the inputs are unchanged (no output was written into them)
  for (std::size_t i = 0; i < inputs.size() && mode != 1; ++i)
    if (inputs[i].nbytes() != 0 && std::memcmp(inputs[i].raw_data(), original[i].raw_data(), inputs[i].nbytes()) != 0)
      finding("a call wrote into its input");
  const auto want = eager(p, which, original[0]);
  if (!want) finding("the program accepted an input the eager model refuses");
  if (!same(outputs, *want)) finding("the program's outputs differ from the eager model's");
  return 0;
}
