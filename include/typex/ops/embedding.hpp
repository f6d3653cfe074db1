// typex/ops/embedding.hpp — embedding(weight, indices): rows of a table.
//
// weight [num_embeddings, dim], integer indices of any shape: the result is [indices..., dim]
// (aten.embedding.default(weight, indices)). An index outside [0, num_embeddings) is an error at
// run time naming it.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/broadcast.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>

#include <source_location>
#include <string>
#include <string_view>

namespace typex {

struct embedding_op;

namespace aten {
// embedding's gradient: grad_output's rows summed into the rows their indices name.
struct embedding_dense_backward {
  static constexpr std::string_view target = "aten.embedding_dense_backward.default";
  static constexpr std::string_view schema =
      "aten::embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor";
  // the table's gradient: [num_weights, grad_output's last dim], grad_output's dtype
  template <class R> static void infer(R& r) {
    const auto& g = r.input("grad_output");
    const auto& idx = r.input("indices");
    if (idx.scalar_type != dtype::i64 && idx.scalar_type != dtype::i32) r.fail("the indices must be an i64 or i32 tensor");
    if (g.rank() == 0) r.fail("grad_output must have the embedding dim last");
    r.result(g.scalar_type, {r.sym("num_weights"), g.shape.back()});
  }
  // linear in grad_output: its derivative looks the rows up again (0 for padding_idx's)
  template <class C, class Embedding = embedding_op>
  static void vjp(C& c) {
    const auto go = c.input("grad_output");
    const auto idx = c.input("indices");
    auto rows = c.emit(op_id_of<Embedding>, {c.grad(), idx});
    const std::int64_t padding = c.args().integer("padding_idx");
    if (padding >= 0) rows = c.masked_fill(rows, c.unsqueeze(c.eq(idx, static_cast<double>(padding)), -1), 0.0);
    if (c.args().flag("scale_grad_by_freq")) {  // each row over its index's count
      auto ones = c.shape(idx);
      using extent = typename decltype(ones)::value_type;
      ones.push_back(extent(index_t{1}));
      auto count_meta = c.meta(go);
      count_meta.shape = {c.sym("num_weights"), extent(index_t{1})};
      const auto counts = c.emit(op_id_of<aten::embedding_dense_backward>,
                                 {c.full(ones, 1.0, c.scalar_type(go)), idx, c.sym("num_weights"), std::int64_t{-1}, false}, count_meta);
      auto per_row = c.meta(go);
      per_row.shape = ones;
      rows = c.div(rows, c.emit(op_id_of<Embedding>, {counts, idx}, per_row));
    }
    c.accumulate("grad_output", rows);
  }
};
}  // namespace aten

struct embedding_op {
  static constexpr std::string_view target = "aten.embedding.default";
  static constexpr std::string_view schema =
      "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor";
  // the rows of weight that indices name: index_select over the flattened indices, reshaped
  template <class C> static void decompose(C& c) {
    const auto idx = c.input("indices");
    std::remove_cvref_t<decltype(c.size(idx, 0))> n(index_t{1});
    for (const auto& e : c.shape(idx)) n = n * e;
    const auto rows = c.index_select(c.input("weight"), 0, c.reshape(idx, {n}));
    c.produce(c.reshape(rows, c.result_meta().shape));
  }
  // weight [num_embeddings, dim] at integer indices of any shape: [indices..., dim], weight's dtype
  template <class R> static void infer(R& r) {
    const auto& w = r.input("weight");
    const auto& idx = r.input("indices");
    if (w.rank() != 2)
      r.fail("the weight " + detail::shape_meta::text(w.shape) + " must be 2-d: [num_embeddings, embedding_dim]");
    if (idx.scalar_type != dtype::i64 && idx.scalar_type != dtype::i32) r.fail("the indices must be an i64 or i32 tensor");
    auto s = idx.shape;
    s.push_back(w.shape[1]);
    r.result(w.scalar_type, std::move(s));
  }
  template <class C> static void vjp(C& c) {
    const auto w = c.input("weight");
    c.accumulate("weight", c.emit(op_id_of<aten::embedding_dense_backward>,
                                  {c.grad(), c.input("indices"), c.size(w, 0), c.args().integer_or_default("padding_idx"),
                                   c.args().flag_or_default("scale_grad_by_freq")}));
  }
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
using embedding_ops = op_list<embedding_op, aten::embedding_dense_backward>;

}  // namespace typex
