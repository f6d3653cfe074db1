// libFuzzer target: the type-erased call path and the run-time input checker.
//
// Each input is decoded into a call of one of five exported programs (an MLP planned as fused
// GEMMs, a model with a view output, a data-dependent masked_select on the stepwise engine, and two
// of the model zoo's: the GPT-2-style LM, token ids in, batch and sequence symbolic; the Conv1d
// audio stem):
// tensors of random dtypes, ranks and extents (small, empty, or huge), values from the input
// bytes (NaN, Inf, denormals included), and the ways a user may alias inputs and outputs (run(v, v),
// outputs sharing an input's storage, reused outputs). A call must either throw a typex::error or
// return what the eager model computes for the same tensor, bit for bit; anything else (a crash, a
// sanitizer report, a mismatch) is a finding and aborts.
//
//   build/clang/tests/typex_fuzz_call -runs=100000 <dir> tests/robustness/corpus
#include "models.hpp"
#include "../unit/models/zoo_models.hpp"

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

using tokens = tensor<i64, zoo::batch, zoo::seq>;
using waveform = tensor<f32, zoo::batch, fix<1>, fix<64>>;

zoo::gpt2 make_gpt2() {
  zoo::gpt2 m;
  init_module(m, 3);
  for (auto& block : m.h)  // (the causal tril)
    for (index_t i = 0; i < 16; ++i)
      for (index_t j = 0; j < 16; ++j) block.attn.bias.data()[i * 16 + j] = j <= i ? 1.0f : 0.0f;
  return m;
}
zoo::audio_stem make_audio() {
  zoo::audio_stem m;
  init_module(m, 4);
  return m;
}

struct programs {
  rb::mlp mlp = rb::random_model<rb::mlp>(1);
  rb::with_view view = rb::random_model<rb::with_view>(2);
  rb::selects sel;
  zoo::gpt2 gpt = make_gpt2();
  zoo::audio_stem audio = make_audio();
  program_module<eigen_backend> mlp_run, view_run, sel_run, gpt_run, audio_run;
  programs()
      : mlp_run(export_program(mlp, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))))),
        view_run(export_program(view, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))))),
        sel_run(export_program(sel, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))))),
        gpt_run(export_program(gpt, input<"x">(tensor_spec<i64, shape<zoo::batch, zoo::seq>>(shape<zoo::batch, zoo::seq>(zoo::batch(2), zoo::seq(5)))))),
        audio_run(export_program(audio, input<"x">(tensor_spec<f32, shape<zoo::batch, fix<1>, fix<64>>>(
                                            shape<zoo::batch, fix<1>, fix<64>>(zoo::batch(2), {}, {}))))) {}
  const program_module<eigen_backend>& run(int which) const {
    switch (which) {
      case 0: return mlp_run;
      case 1: return view_run;
      case 2: return sel_run;
      case 3: return gpt_run;
      default: return audio_run;
    }
  }
};

// What the eager model returns for x (its outputs' leaves), or nothing when binding x to the
// model's input type throws (the program must then have thrown too).
std::optional<std::vector<any_tensor>> eager(const programs& p, int which, const any_tensor& x) {
  if (which >= 3) {  // (a zoo model: its own input type)
    try {
      if (which == 3) return std::vector<any_tensor>{p.gpt(tokens::bind(x, "input 'x'")).erase()};
      return std::vector<any_tensor>{p.audio(waveform::bind(x, "input 'x'")).erase()};
    } catch (const typex::error&) {
      return std::nullopt;
    }
  }
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

// A tensor shaped for the zoo program `which` (3: token ids [b, t]; 4: a waveform [b, 1, l]), its
// extents now and then out of range, its dtype now and then another, its values from the bytes
// (token ids mostly in the vocabulary, sometimes negative or past it).
any_tensor make_fitting(reader& r, int which) {
  const std::uint8_t shape_byte = r.byte();
  const bool other_dtype = r.byte() % 16 == 0;
  if (which == 3) {
    const std::vector<index_t> e = {1 + shape_byte % 4, 1 + (shape_byte >> 2) % 20};  // (seq past 16 now and then)
    any_tensor t(other_dtype ? dtype::i32 : dtype::i64, e);
    for (index_t i = 0; i < t.numel(); ++i) {
      const std::uint8_t v = r.byte();
      const std::int64_t id = v < 240 ? v % 32 : v < 248 ? -static_cast<std::int64_t>(v % 3 + 1) : 32 + v % 1000;
      if (other_dtype) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(id);
      else t.data<std::int64_t>()[i] = id;
    }
    return t;
  }
  const std::vector<index_t> e = {1 + shape_byte % 3, shape_byte % 29 == 0 ? 2 : 1, shape_byte % 31 == 0 ? 63 : 64};
  any_tensor t(other_dtype ? dtype::f64 : dtype::f32, e);
  std::uint8_t* bytes = reinterpret_cast<std::uint8_t*>(t.raw_data());
  for (std::size_t i = 0; i < t.nbytes(); ++i) bytes[i] = r.byte();
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
  const int which = r.byte() % 5;
  const program_module<eigen_backend>& run = p.run(which);
  const std::size_t count = r.byte() % 3;  // (the programs take one tensor: 0 and 2 are arity errors)
  const bool fitting = which >= 3 && r.byte() % 4 != 0;  // (the zoo's inputs mostly near their shapes)
  std::vector<any_tensor> inputs;
  try {
    for (std::size_t i = 0; i < count; ++i) inputs.push_back(fitting ? make_fitting(r, which) : make_tensor(r));
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
