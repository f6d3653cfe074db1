// typex/nn/activation.hpp — parameterless modules: ReLU, GELU, SiLU, Tanh, Sigmoid, Dropout, Flatten.
//
// They are modules (not just functions) so that they appear in the nn_module_stack and the module
// call graph as PyTorch's do. Dropout is the identity in eval mode (nothing is recorded), and in
// training mode (typex::train(model)) records aten.dropout.default(x, p, True), which draws its mask
// from the calling thread's random stream (typex::manual_seed) eagerly and in the program alike.
#pragma once

#include <typex/ops/attention.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/unary.hpp>
#include <typex/trace/context.hpp>

#include <boost/hana/define_struct.hpp>

namespace typex::nn {

struct ReLU {
  BOOST_HANA_DEFINE_STRUCT(ReLU);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::relu(x));
  }
};

struct GELU {
  BOOST_HANA_DEFINE_STRUCT(GELU);
  gelu_approximation approximate = gelu_approximation::none;
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::gelu(x, approximate));
  }
};

struct SiLU {
  BOOST_HANA_DEFINE_STRUCT(SiLU);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::silu(x));
  }
};

struct Tanh {
  BOOST_HANA_DEFINE_STRUCT(Tanh);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::tanh(x));
  }
};

struct Sigmoid {
  BOOST_HANA_DEFINE_STRUCT(Sigmoid);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::sigmoid(x));
  }
};

struct Dropout {
  BOOST_HANA_DEFINE_STRUCT(Dropout);
  double p = 0.5;
  bool training = false;  // as torch's module.train() (typex::train / typex::eval set it model-wide)
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    using R = decltype(typex::dropout(x, p, true));
    if (!training || p == 0.0) return scope.returns(R(x));
    return scope.returns(typex::dropout(x, p, true));
  }
};

// torch.nn.Flatten (start_dim = 1, end_dim = -1 by default).
template <long long Start = 1, long long End = -1>
struct Flatten {
  BOOST_HANA_DEFINE_STRUCT(Flatten);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::flatten<Start, End>(x));
  }
};

}  // namespace typex::nn
