// The handwritten-digits training examples' shared part: the data (examples/data/digits.txt, 1,797
// 8x8 images; see data/DIGITS_LICENSE), and a training loop over a joint forward/backward program
// (typex::make_joint) with Adam, printing one line per epoch.
//
// Every fifth image is held out for testing (359 images); the other 1,438 train, shuffled each
// epoch, in batches of 32 (the last one smaller: the programs' batch dim is symbolic).
//
// Where typex's CUDA backend is built (TYPEX_EXAMPLES_CUDA), `--device cuda` trains on GPU 0 and
// `--device emulated` on the emulated CUDA device: the joint program on the device, its parameters
// kept there and stepped there by Adam; the test set is evaluated on the CPU with the parameters the
// device trained (step.state_dict(): host copies). `--epochs N` trains fewer epochs and
// `--batches N` the first N batches of each (the accuracy target then does not apply), and `--compare-cpu` trains the same epochs on the CPU afterwards and
// fails unless the device's test accuracy is the CPU's (within 1%, rounding moving a borderline
// image or two) and its last epoch's loss is the CPU's within 1e-3. CI runs the MLP's first 12
// steps on the emulated device that way: the emulator runs each CUDA thread as a host thread, about
// two seconds a step on 2 cores; a GPU trains both examples to their targets (scripts/gpu-check.sh).
#pragma once

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/typex.hpp>
#if defined(TYPEX_EXAMPLES_CUDA)
#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/emulated_device.hpp>
#endif

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace digits {
using batch = typex::sym<"batch", 1, 2048>;

struct split {
  std::vector<float> pixels;  // 64 a row, scaled to [0, 1]
  std::vector<std::int64_t> labels;
  std::size_t size() const { return labels.size(); }
};

inline std::pair<split, split> load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path + " (pass the data file's path as the first argument)");
  split train, test;
  std::string line;
  std::size_t i = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    split& to = i++ % 5 == 4 ? test : train;
    std::int64_t label = 0;
    s >> label;
    to.labels.push_back(label);
    for (int p = 0; p < 64; ++p) {
      int v = 0;
      s >> v;
      to.pixels.push_back(static_cast<float>(v) / 16.0f);
    }
    if (!s) throw std::runtime_error(path + ": a line is cut short: " + line);
  }
  if (i != 1797) throw std::runtime_error(path + ": expected 1797 images");
  return {std::move(train), std::move(test)};
}

// images [first, first + n) of `order` into x ([n, ...image extents]) and y ([n])
inline void copy_batch(const split& d, const std::vector<std::size_t>& order, std::size_t first, std::size_t n,
                   const std::vector<typex::index_t>& image, typex::any_tensor& x, typex::any_tensor& y) {
  std::vector<typex::index_t> ext{static_cast<typex::index_t>(n)};
  ext.insert(ext.end(), image.begin(), image.end());
  if (x.extents() != ext) x = typex::any_tensor(typex::dtype::f32, ext);
  if (y.extents() != std::vector<typex::index_t>{static_cast<typex::index_t>(n)}) y = typex::any_tensor(typex::dtype::i64, {ext[0]});
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[first + k];
    std::copy_n(d.pixels.data() + i * 64, 64, x.data<float>() + k * 64);
    y.data<std::int64_t>()[k] = d.labels[i];
  }
}

inline std::size_t correct(const typex::any_tensor& logits, const typex::any_tensor& y) {
  const auto n = static_cast<std::size_t>(logits.extents()[0]);
  std::size_t hits = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const float* row = logits.data<float>() + k * 10;
    hits += std::max_element(row, row + 10) - row == y.data<std::int64_t>()[k] ? 1 : 0;
  }
  return hits;
}

// The network with its loss: the joint program's forward returns both (the loss differentiated,
// the logits only computed: a training step reports its accuracy without another forward pass).
template <class Net>
struct with_loss {
  BOOST_HANA_DEFINE_STRUCT(with_loss, (Net, net));
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    const auto logits = net(x);
    return std::make_tuple(typex::cross_entropy(logits, y), logits);
  }
};
// The network alone, for the test set (same member name: the same FQNs).
template <class Net>
struct classifier {
  BOOST_HANA_DEFINE_STRUCT(classifier, (Net, net));
  template <class X>
  auto operator()(const X& x) const {
    return net(x);
  }
};

// A count given to option `what` (the whole argument a number of at least 1).
inline int parse_count(std::string_view what, std::string_view text) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < 1)
    throw std::runtime_error(std::string(what) + " " + std::string(text) + ": a count of at least 1");
  return v;
}

// The command line: [path to digits.txt] [--device cpu|cuda|emulated] [--epochs N] [--batches N]
// [--compare-cpu].
struct options {
  std::string path = TYPEX_EXAMPLES_DATA_DIR "/digits.txt";
  std::string device = "cpu";
  int epochs = 0;  // (0: the example's own count)
  int batches = 0;  // training batches per epoch (0: all)
  bool compare_cpu = false;
};
inline options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto value = [&](std::string_view option) -> std::string_view {  // (--option value, or --option=value)
      if (a.size() > option.size() && a.substr(0, option.size()) == option && a[option.size()] == '=') return a.substr(option.size() + 1);
      if (i + 1 >= argc) throw std::runtime_error(std::string(option) + " needs a value");
      return argv[++i];
    };
    const auto is = [&](std::string_view option) { return a == option || (a.size() > option.size() && a.substr(0, option.size() + 1) == std::string(option) + "="); };
    if (is("--device")) o.device = std::string(value("--device"));
    else if (is("--epochs")) o.epochs = parse_count("--epochs", value("--epochs"));
    else if (is("--batches")) o.batches = parse_count("--batches", value("--batches"));
    else if (a == "--compare-cpu") o.compare_cpu = true;
    else if (a.substr(0, 2) == "--") throw std::runtime_error("unknown option " + std::string(a) + " (--device, --epochs, --batches, --compare-cpu)");
    else o.path = std::string(a);
  }
  if (o.compare_cpu && o.device == "cpu") throw std::runtime_error("--compare-cpu compares a device's training with the CPU's: give --device cuda or emulated");
  if (o.device != "cpu" && o.device != "cuda" && o.device != "emulated")
    throw std::runtime_error("--device " + o.device + ": cpu, cuda or emulated");
#if !defined(TYPEX_EXAMPLES_CUDA)
  if (o.device != "cpu") throw std::runtime_error("--device " + o.device + ": this build has no CUDA backend (typex::cuda)");
#endif
  return o;
}

// The training loop on Backend (the joint program `joint`, its module made with `module_options`;
// `place` moves a host batch to where the module wants its inputs, `read` brings a result back).
struct result {
  double accuracy = 0;  // on the test set, after the last epoch
  double loss = 0;      // the last epoch's mean training loss
};
template <class Backend, class XSpec, class Place, class Read>
result train_on(const typex::exported_program& joint, const typename Backend::options& module_options, Place place, Read read,
                const split& train_set, const split& test_set, const std::vector<typex::index_t>& image, int epochs, int batches,
                double lr, typex::program_module<typex::eigen_backend>& evaluate);

// Trains Net on the digits (XShape: the input's shape, shape<batch, fix<64>> or shape<batch, fix<1>,
// fix<8>, fix<8>>; image: the extents of one image, {64} or {1, 8, 8}) on `o.device` for
// `o.epochs` (or `epochs`); returns the final test accuracy, and whether the accuracy target applies
// (the example's own epoch count), through `full`.
template <class Net, class XShape>
double train(const options& o, const std::vector<typex::index_t>& image, int epochs, double lr, bool& full) {
  using namespace typex;
  const auto [train_set, test_set] = load(o.path);
  with_loss<Net> model;
  init_module(model, /*seed=*/0);  // PyTorch's default init schemes, deterministic

  // the joint program: the forward (loss and logits) and the gradients of every parameter
  using x_spec = tensor_spec<f32, XShape>;
  const auto forward = export_program(model, input<"x">(x_spec()), input<"y">(tensor_spec<i64, shape<batch>>()));
  const exported_program joint = make_joint(forward);
  classifier<Net> net;
  auto evaluate = program_module<eigen_backend>(export_program(net, input<"x">(x_spec())));
  const auto same = [](const any_tensor& t) { return t; };
  full = (o.epochs == 0 || o.epochs == epochs) && o.batches == 0;
  if (o.epochs != 0) epochs = o.epochs;
  const auto on_cpu = [&] {
    return train_on<eigen_backend, x_spec>(joint, eigen::compile_options{}, same, same, train_set, test_set, image, epochs, o.batches, lr,
                                           evaluate);
  };
  if (o.device == "cpu") return on_cpu().accuracy;
#if defined(TYPEX_EXAMPLES_CUDA)
  const std::shared_ptr<cuda::device_runtime> gpu = o.device == "cuda" ? cuda::make_native_device(0) : cuda::make_emulated_device();
  std::printf("device: %s\n", gpu->info().name.c_str());
  const result dev = train_on<cuda_backend, x_spec>(
      joint, cuda::compile_options{.device = gpu}, [&](const any_tensor& t) { return cuda::to_device(t, gpu); },
      [](const any_tensor& t) { return cuda::to_host(t); }, train_set, test_set, image, epochs, o.batches, lr, evaluate);
  if (o.compare_cpu) {
    std::printf("the same on the CPU:\n");
    const result cpu = on_cpu();
    std::printf("test accuracy %.2f%% on %s, %.2f%% on the CPU; last epoch's loss %.6f and %.6f\n", 100.0 * dev.accuracy, o.device.c_str(),
                100.0 * cpu.accuracy, dev.loss, cpu.loss);
    if (std::abs(dev.accuracy - cpu.accuracy) > 0.01 || std::abs(dev.loss - cpu.loss) > 1e-3 * std::max(1.0, std::abs(cpu.loss)))
      throw std::runtime_error("the device's training differs from the CPU's");
  }
  return dev.accuracy;
#else
  throw std::runtime_error("--device " + o.device + ": this build has no CUDA backend");
#endif
}

template <class Backend, class XSpec, class Place, class Read>
result train_on(const typex::exported_program& joint, const typename Backend::options& module_options, Place place, Read read,
                const split& train_set, const split& test_set, const std::vector<typex::index_t>& image, int epochs, int batches,
                double lr, typex::program_module<typex::eigen_backend>& evaluate) {
  using namespace typex;
  using clock = std::chrono::steady_clock;
  auto step = program_module<Backend>(joint, module_options);        // computes with its own parameters,
  optim::adam opt(step.parameters(), {.lr = lr});                     // which the optimizer steps

  std::vector<std::size_t> order(train_set.size()), test_order(test_set.size());
  std::iota(order.begin(), order.end(), 0);
  std::iota(test_order.begin(), test_order.end(), 0);
  std::mt19937 rng(0);
  any_tensor x, y, tx, ty;
  copy_batch(test_set, test_order, 0, test_set.size(), image, tx, ty);
  std::vector<any_tensor> in(2), out;
  result last;
  const std::size_t bs = 32;
  std::printf("%zu training images, %zu test images; %zu parameters in %zu tensors; batches of %zu, Adam lr %g (halved every 8 epochs)\n", train_set.size(),
              test_set.size(), [&] { std::size_t n = 0; for (const auto& [k, p] : step.parameters()) n += static_cast<std::size_t>(p.numel()); return n; }(),
              step.parameters().size(), bs, lr);
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = clock::now();
    std::shuffle(order.begin(), order.end(), rng);
    double loss = 0;
    std::size_t hits = 0, seen = 0;
    const std::size_t stop = batches > 0 ? std::min(order.size(), bs * static_cast<std::size_t>(batches)) : order.size();
    for (std::size_t first = 0; first < stop; first += bs) {
      const std::size_t n = std::min(bs, order.size() - first);
      seen += n;
      copy_batch(train_set, order, first, n, image, x, y);
      in[0] = place(x);
      in[1] = place(y);
      step.run(in, out);
      const joint_outputs r = read_joint_outputs(joint, out);
      opt.step(r.gradients);
      loss += read(r.loss).template data<float>()[0] * static_cast<double>(n);
      hits += correct(read(r.user_outputs[0]), y);
    }
    if (epoch % 8 == 0) opt.options.lr *= 0.5;  // (a step schedule: halved every 8 epochs)
    evaluate.load_state_dict(step.state_dict());
    const std::vector<any_tensor> logits = evaluate({tx});
    const double accuracy = static_cast<double>(correct(logits[0], ty)) / static_cast<double>(test_set.size());
    last = {accuracy, loss / static_cast<double>(seen)};
    const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
    std::printf("epoch %2d/%d  loss %.4f  train acc %5.1f%%  test acc %5.1f%%  %.2f s\n", epoch, epochs, loss / static_cast<double>(seen),
                100.0 * static_cast<double>(hits) / static_cast<double>(seen), 100.0 * accuracy, seconds);
  }
  return last;
}
}  // namespace digits
