// typex/nn/rnn.hpp — nn::LSTM and nn::GRU: torch.nn.LSTM and torch.nn.GRU, written with typex::scan.
//
//   nn::LSTM<5, 4, 2, true, true> lstm;          // input 5, hidden 4, 2 layers, batch_first, bidirectional
//   auto [out, state] = lstm(x);                 // x [B, T, 5] -> out [B, T, 8]; state = (h_n, c_n), each [4, B, 4]
//   nn::GRU<3, 6> gru;                           // 1 layer, sequence first, one direction
//   auto [y, h_n] = gru(x);                      // x [T, B, 3] -> y [T, B, 6], h_n [1, B, 6]
//
// Parameters under torch's names and shapes, in torch's order: weight_ih_l{k}[_reverse]
// [G*H, in], weight_hh_l{k}[_reverse] [G*H, H], bias_ih_l{k}[_reverse] and bias_hh_l{k}[_reverse]
// [G*H], G = 4 (LSTM: gates i, f, g, o) or 3 (GRU: r, z, n); in = the input size for layer 0, D*H
// after (D = 2 when bidirectional: the layer's input is [forward, backward]). reset_parameters
// draws every one from U(-1/sqrt(H), 1/sqrt(H)), as torch does. The states start at zero (torch's
// default when no h0 / c0 is given); h_n (and c_n) are ordered [layer0 forward, layer0 backward,
// layer1 forward, ...]. Dropout between layers is not offered (torch's default, 0).
//
// Each layer and direction computes its input projection for every step at once (one GEMM over
// [T*B, in]) and then runs a typex::scan over time whose body is the recurrence; the backward
// direction is the same scan with reverse = true. Traced, the sequence length may be symbolic, and
// the program runs for any length in its range; eagerly the scan is a loop.
#pragma once

#include <typex/ops/binary.hpp>
#include <typex/ops/concat.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/unary.hpp>
#include <typex/trace/context.hpp>
#include <typex/trace/control_flow.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module_tensor.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace typex::nn {

namespace detail {
// One layer and direction's parameters.
template <index_t In, index_t H, index_t G>
struct rnn_cell {
  parameter<f32, fix<G * H>, fix<In>> weight_ih;
  parameter<f32, fix<G * H>, fix<H>> weight_hh;
  parameter<f32, fix<G * H>> bias_ih;
  parameter<f32, fix<G * H>> bias_hh;
};

// The parameters of L layers in D directions, named as torch names them.
template <index_t In, index_t H, index_t G, std::size_t L, std::size_t D>
struct rnn_params {
  static_assert(L >= 1, "typex::nn::LSTM / GRU: num_layers must be at least 1");
  static_assert(In > 0 && H > 0, "typex::nn::LSTM / GRU: input_size and hidden_size must be positive");
  std::array<rnn_cell<In, H, G>, D> first;
  std::array<std::array<rnn_cell<static_cast<index_t>(D) * H, H, G>, D>, L - 1> rest;

  template <class Self, class F>
  static void for_each_named_tensor(Self& self, F&& f) {
    const auto cell = [&](auto& c, std::size_t layer, std::size_t dir) {
      std::string suffix = "_l" + std::to_string(layer);
      if (dir == 1) suffix += "_reverse";
      f("weight_ih" + suffix, c.weight_ih);
      f("weight_hh" + suffix, c.weight_hh);
      f("bias_ih" + suffix, c.bias_ih);
      f("bias_hh" + suffix, c.bias_hh);
    };
    for (std::size_t d = 0; d < D; ++d) cell(self.first[d], 0, d);
    for (std::size_t l = 0; l + 1 < L; ++l)
      for (std::size_t d = 0; d < D; ++d) cell(self.rest[l][d], l + 1, d);
  }
  void reset_parameters(init::generator& g) const {
    const double bound = 1.0 / std::sqrt(static_cast<double>(H));
    for_each_named_tensor(*this, [&](const std::string&, const auto& t) { init::uniform_(t, -bound, bound, g); });
  }
};

// x as [T, B, in] (batch_first: [B, T, in] transposed).
template <bool BatchFirst, class X>
auto sequence_first(const X& x) {
  if constexpr (BatchFirst) return transpose<0, 1>(x);
  else return x;
}

// h (or c) of each layer and direction, [L*D, B, H].
template <class... T>
auto stack_states(const T&... h) {
  return cat<0>(tensors(unsqueeze<0>(h)...));
}
template <class T, std::size_t N>
auto stack_states(const std::array<std::optional<T>, N>& hs) {
  return std::apply([](const auto&... h) { return stack_states(*h...); }, hs);
}

// The LSTM recurrence over one direction: (output [T, B, H], h_T, c_T).
template <index_t H, class C, class S>
auto lstm_direction(const C& p, const S& seq, bool reverse) {
  const auto xw = typex::linear(seq, p.weight_ih, p.bias_ih);  // [T, B, 4H]: every step's input projection at once
  const auto zero = mul(slice<1, 0, H>(select<0>(xw, 0)), 0.0);
  auto [state, ys] = scan(
      [&](const auto& st, const auto& xt) {
        const auto gates = add(xt, typex::linear(std::get<0>(st), p.weight_hh, p.bias_hh));
        const auto i = sigmoid(slice<1, 0, H>(gates));
        const auto f = sigmoid(slice<1, H, 2 * H>(gates));
        const auto g = tanh(slice<1, 2 * H, 3 * H>(gates));
        const auto o = sigmoid(slice<1, 3 * H, 4 * H>(gates));
        const auto c = add(mul(f, std::get<1>(st)), mul(i, g));
        const auto h = mul(o, tanh(c));
        return std::pair(std::tuple(h, c), h);
      },
      std::tuple(zero, zero), xw, scan_options{.reverse = reverse});
  return std::tuple(ys, std::get<0>(state), std::get<1>(state));
}

// The GRU recurrence over one direction: (output [T, B, H], h_T).
template <index_t H, class C, class S>
auto gru_direction(const C& p, const S& seq, bool reverse) {
  const auto xw = typex::linear(seq, p.weight_ih, p.bias_ih);  // [T, B, 3H]
  const auto zero = mul(slice<1, 0, H>(select<0>(xw, 0)), 0.0);
  auto [h, ys] = scan(
      [&](const auto& hp, const auto& xt) {
        const auto hw = typex::linear(hp, p.weight_hh, p.bias_hh);
        const auto r = sigmoid(add(slice<1, 0, H>(xt), slice<1, 0, H>(hw)));
        const auto z = sigmoid(add(slice<1, H, 2 * H>(xt), slice<1, H, 2 * H>(hw)));
        const auto n = tanh(add(slice<1, 2 * H, 3 * H>(xt), mul(r, slice<1, 2 * H, 3 * H>(hw))));
        const auto next = add(n, mul(z, sub(hp, n)));  // (1 - z) * n + z * h
        return std::pair(next, next);
      },
      zero, xw, scan_options{.reverse = reverse});
  return std::tuple(ys, h);
}

// Every layer of an RNN: layer(cells, seq) gives (y [T, B, D*H], std::array of D states, ...) for
// one layer; returns (the last layer's y, per kind of state the L*D states in torch's order:
// layer0 forward, layer0 backward, layer1 forward, ...).
template <std::size_t L, std::size_t D, class Params, class Layer, class S>
auto run_layers(const Params& p, Layer&& layer, const S& seq) {
  auto first = layer(p.first, seq);
  constexpr std::size_t kinds = std::tuple_size_v<decltype(first)> - 1;
  using H_t = std::remove_cvref_t<decltype(std::get<1>(first)[0])>;
  std::array<std::array<std::optional<H_t>, L * D>, kinds> states;
  const auto keep = [&](const auto& r, std::size_t l) {
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((void)[&] {
        for (std::size_t d = 0; d < D; ++d) states[K][l * D + d] = std::get<K + 1>(r)[d];
      }(), ...);
    }(std::make_index_sequence<kinds>{});
  };
  keep(first, 0);
  auto y = std::get<0>(first);
  for (std::size_t l = 0; l + 1 < L; ++l) {
    const auto next = layer(p.rest[l], y);
    y = std::get<0>(next);
    keep(next, l + 1);
  }
  return std::pair(y, states);
}
}  // namespace detail

// torch.nn.LSTM(input_size = In, hidden_size = H, num_layers = L, batch_first, bidirectional).
// Returns (output, (h_n, c_n)).
template <index_t In, index_t H, std::size_t L = 1, bool BatchFirst = false, bool Bidirectional = false>
struct LSTM : detail::rnn_params<In, H, 4, L, Bidirectional ? 2 : 1> {
  static constexpr bool flat_named_tensors = true;
  static constexpr std::size_t D = Bidirectional ? 2 : 1;
  static constexpr index_t input_size = In;
  static constexpr index_t hidden_size = H;

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    const auto seq = detail::sequence_first<BatchFirst>(x);
    const auto [y, states] = detail::run_layers<L, D>(*this, [](const auto& cells, const auto& s) { return layer(cells, s); }, seq);
    return scope.returns(std::pair(detail::sequence_first<BatchFirst>(y), std::pair(detail::stack_states(states[0]), detail::stack_states(states[1]))));
  }

 private:
  template <class Cells, class S>
  static auto layer(const Cells& cells, const S& seq) {
    auto [yf, hf, cf] = detail::lstm_direction<H>(cells[0], seq, false);
    using H_t = decltype(hf);
    if constexpr (D == 1) {
      return std::tuple(yf, std::array<H_t, 1>{hf}, std::array<H_t, 1>{cf});
    } else {
      auto [yb, hb, cb] = detail::lstm_direction<H>(cells[1], seq, true);
      return std::tuple(cat<2>(tensors(yf, yb)), std::array<H_t, 2>{hf, hb}, std::array<H_t, 2>{cf, cb});
    }
  }
};

// torch.nn.GRU(input_size = In, hidden_size = H, num_layers = L, batch_first, bidirectional).
// Returns (output, h_n).
template <index_t In, index_t H, std::size_t L = 1, bool BatchFirst = false, bool Bidirectional = false>
struct GRU : detail::rnn_params<In, H, 3, L, Bidirectional ? 2 : 1> {
  static constexpr bool flat_named_tensors = true;
  static constexpr std::size_t D = Bidirectional ? 2 : 1;
  static constexpr index_t input_size = In;
  static constexpr index_t hidden_size = H;

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    const auto seq = detail::sequence_first<BatchFirst>(x);
    const auto [y, states] = detail::run_layers<L, D>(*this, [](const auto& cells, const auto& s) { return layer(cells, s); }, seq);
    return scope.returns(std::pair(detail::sequence_first<BatchFirst>(y), detail::stack_states(states[0])));
  }

 private:
  template <class Cells, class S>
  static auto layer(const Cells& cells, const S& seq) {
    auto [yf, hf] = detail::gru_direction<H>(cells[0], seq, false);
    using H_t = decltype(hf);
    if constexpr (D == 1) {
      return std::tuple(yf, std::array<H_t, 1>{hf});
    } else {
      auto [yb, hb] = detail::gru_direction<H>(cells[1], seq, true);
      return std::tuple(cat<2>(tensors(yf, yb)), std::array<H_t, 2>{hf, hb});
    }
  }
};

}  // namespace typex::nn
