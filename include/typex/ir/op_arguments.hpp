// typex/ir/op_arguments.hpp — an op call's arguments as IR data, in the ATen schema's order.
//
// The tensor and scalar arguments (converted by the caller: graph values while tracing, positions
// when running eagerly) with the op's attributes inserted where the op says (ops/apply.hpp).
// Sizes that may be symbolic become sym_exprs: the dim types' expressions while tracing (namer
// given), their current values otherwise.
#pragma once

#include <typex/ir/graph.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/shape_ops.hpp>

#include <array>
#include <string_view>
#include <vector>

namespace typex::ir {

class attribute_writer {
 public:
  attribute_writer(std::vector<argument>& out, symbol_namer* namer) : out_(out), namer_(namer) {}

  void operator()(index_t v) const { out_.emplace_back(std::int64_t{v}); }
  void operator()(double v) const { out_.emplace_back(v); }
  void operator()(bool v) const { out_.emplace_back(v); }
  void operator()(std::string_view v) const { out_.emplace_back(std::string(v)); }
  void operator()(std::nullptr_t) const { out_.emplace_back(none_t{}); }
  void operator()(dtype v) const { out_.emplace_back(v); }
  template <std::size_t N>
  void operator()(const std::array<index_t, N>& v) const {
    out_.emplace_back(std::vector<std::int64_t>(v.begin(), v.end()));
  }
  template <class S>
  void operator()(const sizes_attribute<S>& v) const {
    std::vector<sym_expr> sizes;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        using D = typename S::template dim_t<K>;
        if (static_cast<long long>(K) == v.infer_at) {
          sizes.emplace_back(index_t{-1});
        } else if (namer_ != nullptr) {
          if constexpr (typex::detail::has_anonymous_dim_v<D>)
            if (v.factory) anonymous_size<D>(static_cast<long long>(K));
          sizes.push_back(to_sym_expr<D>(*namer_));
        } else {
          sizes.emplace_back(v.dims.template get<K>().get());
        }
      };
      (one(std::integral_constant<std::size_t, I>{}), ...);
    }(std::make_index_sequence<S::rank>{});
    out_.emplace_back(std::move(sizes));
  }
  template <class D>
  void operator()(const size_attribute<D>& v) const {
    if (namer_ == nullptr) {
      out_.emplace_back(std::int64_t{v.value.get()});
    } else {
      if constexpr (typex::detail::has_anonymous_dim_v<D>) anonymous_size<D>(-1);
      out_.emplace_back(to_sym_expr<D>(*namer_));
    }
  }

 private:
  // Tracing a factory whose size is (or is derived from) an anonymous dim: the graph could only
  // record the example value, silently wrong for other shapes, or a symbol nothing binds.
  template <class D>
  [[noreturn]] static void anonymous_size(long long k) {
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put("typex: a factory traced with an anonymous size ");
      if (k >= 0) { w.put("(size "); w.put_int(k); w.put(", "); }
      else w.put("(");
      D::write_type(w, 0);
      w.put("): tracing cannot tell which input it follows; declare that input dim as a named symbolic dim "
            "(typex::sym<\"n\", min, max>) so the graph records its symbol, or pass a static extent (16_c)");
    });
  }

  std::vector<argument>& out_;
  symbol_namer* namer_;
};

// The arguments of op(args...): to_arg(a) for each argument, the attributes at their position.
template <class Op, class ToArg, class... A>
std::vector<argument> op_arguments(const Op& op, symbol_namer* namer, ToArg&& to_arg, const A&... args) {
  std::vector<argument> out;
  out.reserve(sizeof...(A) + 4);
  const attribute_writer w(out, namer);
  constexpr std::size_t at = attributes_position<Op>(sizeof...(A));
  std::size_t k = 0;
  [[maybe_unused]] auto one = [&](const auto& a) {  // (unused by a factory: no arguments)
    if (k++ == at) visit_attributes(op, w);
    out.push_back(to_arg(a));
  };
  (one(args), ...);
  if (at == sizeof...(A)) visit_attributes(op, w);
  return out;
}

}  // namespace typex::ir
