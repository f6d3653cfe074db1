// The handwritten-digits training examples' shared part: the data (examples/data/digits.txt, 1,797
// 8x8 images; see data/DIGITS_LICENSE), and a training loop over a joint forward/backward program
// (typex::make_joint) with Adam, printing one line per epoch.
//
// Every fifth image is held out for testing (359 images); the other 1,438 train, shuffled each
// epoch, in batches of 32 (the last one smaller: the programs' batch dim is symbolic).
#pragma once

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/typex.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
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

// Trains Net on the digits (XShape: the input's shape, shape<batch, fix<64>> or shape<batch, fix<1>,
// fix<8>, fix<8>>; image: the extents of one image, {64} or {1, 8, 8}); returns the final test
// accuracy.
template <class Net, class XShape>
double train(const std::string& path, const std::vector<typex::index_t>& image, int epochs, double lr) {
  using namespace typex;
  using clock = std::chrono::steady_clock;
  const auto [train_set, test_set] = load(path);
  with_loss<Net> model;
  init_module(model, /*seed=*/0);  // PyTorch's default init schemes, deterministic

  // the joint program: the forward (loss and logits) and the gradients of every parameter
  using x_spec = tensor_spec<f32, XShape>;
  const auto forward = export_program(model, input<"x">(x_spec()), input<"y">(tensor_spec<i64, shape<batch>>()));
  const exported_program joint = make_joint(forward);
  auto step = program_module<eigen_backend>(joint);                  // computes with its own parameters,
  optim::adam opt(step.parameters(), {.lr = lr});                     // which the optimizer steps
  classifier<Net> net;
  auto evaluate = program_module<eigen_backend>(export_program(net, input<"x">(x_spec())));

  std::vector<std::size_t> order(train_set.size()), test_order(test_set.size());
  std::iota(order.begin(), order.end(), 0);
  std::iota(test_order.begin(), test_order.end(), 0);
  std::mt19937 rng(0);
  any_tensor x, y, tx, ty;
  copy_batch(test_set, test_order, 0, test_set.size(), image, tx, ty);
  std::vector<any_tensor> in(2), out;
  double accuracy = 0;
  const std::size_t bs = 32;
  std::printf("%zu training images, %zu test images; %zu parameters in %zu tensors; batches of %zu, Adam lr %g (halved every 8 epochs)\n", train_set.size(),
              test_set.size(), [&] { std::size_t n = 0; for (const auto& [k, p] : step.parameters()) n += static_cast<std::size_t>(p.numel()); return n; }(),
              step.parameters().size(), bs, lr);
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = clock::now();
    std::shuffle(order.begin(), order.end(), rng);
    double loss = 0;
    std::size_t hits = 0;
    for (std::size_t first = 0; first < order.size(); first += bs) {
      const std::size_t n = std::min(bs, order.size() - first);
      copy_batch(train_set, order, first, n, image, x, y);
      in[0] = x;
      in[1] = y;
      step.run(in, out);
      const joint_outputs r = read_joint_outputs(joint, out);
      opt.step(r.gradients);
      loss += r.loss.data<float>()[0] * static_cast<double>(n);
      hits += correct(r.user_outputs[0], y);
    }
    if (epoch % 8 == 0) opt.options.lr *= 0.5;  // (a step schedule: halved every 8 epochs)
    evaluate.load_state_dict(step.state_dict());
    const std::vector<any_tensor> logits = evaluate({tx});
    accuracy = static_cast<double>(correct(logits[0], ty)) / static_cast<double>(test_set.size());
    const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
    std::printf("epoch %2d/%d  loss %.4f  train acc %5.1f%%  test acc %5.1f%%  %.2f s\n", epoch, epochs, loss / static_cast<double>(order.size()),
                100.0 * static_cast<double>(hits) / static_cast<double>(order.size()), 100.0 * accuracy, seconds);
  }
  return accuracy;
}
}  // namespace digits
