// The PyTorch reference models of tests/data/parity/models.txt (tools/model_parity.py): a small MLP,
// CNN and transformer encoder block with torch's module names, and the reader of their state dicts,
// inputs and PyTorch's outputs. Used by the model parity tests of every backend.
#pragma once

#include "support.hpp"

#include <typex/typex.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace parity_models {
using namespace typex;
struct mlp {
  nn::Linear<32, 24> fc1;
  nn::Linear<24, 24> fc2;
  nn::Linear<24, 10> fc3;
  template <class X>
  auto operator()(const X& x) const {
    return fc3(relu(fc2(relu(fc1(x)))));
  }
};
struct cnn {
  nn::Conv2d<1, 4, 3> conv1;
  nn::Conv2d<4, 8, 3> conv2;
  nn::Linear<8 * 4 * 4, 16> fc1;
  nn::Linear<16, 4> fc2;
  template <class X>
  auto operator()(const X& x) const {
    const auto p = max_pool2d<pool2d_options{.kernel = {2, 2}}>(relu(conv2(relu(conv1(x)))));
    return fc2(relu(fc1(flatten<1>(p))));
  }
};
using transformer = nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, false, true>;
}  // namespace parity_models
BOOST_HANA_ADAPT_STRUCT(parity_models::mlp, fc1, fc2, fc3);
BOOST_HANA_ADAPT_STRUCT(parity_models::cnn, conv1, conv2, fc1, fc2);

namespace parity_models {

struct model_case {
  typex::named_tensors state;
  typex::any_tensor input, output;
};

inline typex::any_tensor read_f32(std::istringstream& in) {
  using namespace typex;
  std::string dt;
  std::size_t rank = 0;
  in >> dt >> rank;
  REQUIRE(dt == "f32");
  std::vector<index_t> e(rank);
  for (auto& v : e) in >> v;
  any_tensor t(dtype::f32, e);
  for (index_t i = 0; i < t.numel(); ++i) {
    std::string v;
    in >> v;
    t.data<float>()[i] = std::stof(v);
  }
  REQUIRE_MESSAGE(static_cast<bool>(in), "models.txt: a tensor is cut short");
  return t;
}

inline std::map<std::string, model_case> read_models() {
  const std::string path = std::string(TYPEX_TEST_SOURCE_DIR) + "/data/parity/models.txt";
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.good(), "cannot open " << path);
  std::map<std::string, model_case> out;
  std::string line, current;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "model") {
      in >> current;
    } else if (word == "tensor") {
      std::string fqn;
      in >> fqn;
      out[current].state.insert(fqn, read_f32(in));
    } else if (word == "input") {
      out[current].input = read_f32(in);
    } else if (word == "output") {
      out[current].output = read_f32(in);
    } else {
      REQUIRE_MESSAGE(word == "end", "models.txt: unexpected line " << line);
    }
  }
  return out;
}

}  // namespace parity_models
