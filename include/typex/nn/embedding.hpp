// typex/nn/embedding.hpp — nn::Embedding<Num, Dim>: torch.nn.Embedding (weight [Num, Dim], N(0, 1)).
#pragma once

#include <typex/ops/embedding.hpp>
#include <typex/trace/context.hpp>
#include <typex/trace/init.hpp>
#include <typex/trace/module_tensor.hpp>

#include <boost/hana/define_struct.hpp>

namespace typex::nn {

template <index_t Num, index_t Dim, dtype_tag_type DT = f32>
struct Embedding {
  using weight_t = parameter<DT, fix<Num>, fix<Dim>>;
  BOOST_HANA_DEFINE_STRUCT(Embedding, (weight_t, weight));

  template <class I>
  auto operator()(const I& indices, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, indices);
    return scope.returns(typex::embedding(weight, indices));
  }
  void reset_parameters(init::generator& g) const { init::normal_(weight, 0.0, 1.0, g); }
};

}  // namespace typex::nn
