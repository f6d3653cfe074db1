// typex/ops/embedding.hpp — embedding(weight, indices): rows of a table.
//
// weight [num_embeddings, dim], integer indices of any shape: the result is [indices..., dim]
// (aten.embedding.default(weight, indices)). An index outside [0, num_embeddings) is an error at
// run time naming it.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/broadcast.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <source_location>
#include <string_view>

namespace typex {

struct embedding_op {
  static constexpr std::string_view target = "aten.embedding.default";
  static constexpr std::string_view schema =
      "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor";
  template <class W, class I>
  static constexpr auto result(const W& w, const I& indices) {
    static_assert(W::shape_type::rank == 2, "typex::embedding: the weight must be 2-d: [num_embeddings, embedding_dim]");
    static_assert(I::dtype_type::value == dtype::i64 || I::dtype_type::value == dtype::i32,
                  "typex::embedding: the indices must be an i64 or i32 tensor");
    const auto s = detail::join(indices.shape, detail::take<1, 1>(w.shape));
    return tensor_spec<typename W::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
};

template <tensor_like W, tensor_like I>
auto embedding(const W& weight, const I& indices, const std::source_location& loc = std::source_location::current()) {
  return apply_op(embedding_op{}, &loc, weight, indices);
}

// This header's ops, for the registry (ops/all.hpp).
using embedding_ops = op_list<embedding_op>;

}  // namespace typex
