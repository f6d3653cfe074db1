// Models shared by the robustness and concurrency tests: small, but through the code paths a real
// model takes (GEMMs with fused epilogues, a view output, buffers written, data-dependent sizes).
#pragma once

#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace rb {
using namespace typex;

using batch = sym<"batch", 1, 64>;
using x_shape = shape<batch, fix<8>>;
using x_tensor = host_tensor<f32, x_shape>;

// fc2(relu(fc1(x))): planned as GEMMs with fused bias + relu.
struct mlp {
  using fc1_t = nn::Linear<8, 16>;
  using fc2_t = nn::Linear<16, 4>;
  BOOST_HANA_DEFINE_STRUCT(mlp, (fc1_t, fc1), (fc2_t, fc2));
  template <class X>
  auto operator()(const X& x) const {
    return fc2(relu(fc1(x)));
  }
};

// Two outputs: one computed, one a view of the input (a planned view reads the input's memory).
struct with_view {
  using fc_t = nn::Linear<8, 8>;
  BOOST_HANA_DEFINE_STRUCT(with_view, (fc_t, fc));
  template <class X>
  auto operator()(const X& x) const {
    return std::tuple(fc(x), flatten<0>(x));
  }
};

// A data-dependent size (masked_select): runs on the stepwise engine. Returns the selection and x
// itself reshaped (a view of the input).
struct selects {
  template <class X>
  auto operator()(const X& x) const {
    return std::tuple(masked_select<"kept">(x, gt(x, 0.0)), flatten<0>(x));
  }
};

// pool(relu(conv(x))) with 8 -> 16 channels, 3x3: Winograd's tiles with the pool in their output
// transform; a batch's images are handed out to the pool's threads one at a time.
using image_shape = shape<batch, fix<8>, fix<10>, fix<9>>;
struct conv_pool {
  using conv_t = nn::Conv2d<8, 16, 3, conv2d_options{.padding = {1, 1}}>;
  BOOST_HANA_DEFINE_STRUCT(conv_pool, (conv_t, conv));
  template <class X>
  auto operator()(const X& x) const {
    return max_pool2d<pool2d_options{.kernel = {2, 2}}>(relu(conv(x)));
  }
};

}  // namespace rb
BOOST_HANA_ADAPT_STRUCT(rb::selects);

namespace rb {
inline x_tensor random_x(index_t rows, std::uint64_t seed) {
  x_tensor x({rows, 8});
  init::generator g(seed, "x");
  init::uniform_(x, -1.0, 1.0, g);
  return x;
}

template <class M>
M random_model(std::uint64_t seed) {
  M m;
  init_module(m, seed);
  return m;
}

inline x_shape spec_shape(index_t rows) { return x_shape(batch(rows), {}); }

// Bit equality of two tensors (dtype, extents and bytes).
inline bool same_bits(const any_tensor& a, const any_tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.extents() == b.extents() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

}  // namespace rb
