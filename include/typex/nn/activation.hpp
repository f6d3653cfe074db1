// typex/nn/activation.hpp — parameterless modules: ReLU, ReLU6, Hardtanh, LeakyReLU, ELU, GELU, SiLU,
// Hardswish, Hardsigmoid, Mish, Softplus, Tanh, Sigmoid, Softmax, LogSoftmax, Identity, Dropout, Flatten.
//
// They are modules (not just functions) so that they appear in the nn_module_stack and the module
// call graph as PyTorch's do. Dropout is the identity in eval mode (nothing is recorded), and in
// training mode (typex::train(model)) records aten.dropout.default(x, p, True), which draws its mask
// from the calling thread's random stream (typex::manual_seed) eagerly and in the program alike.
#pragma once

#include <typex/ops/attention.hpp>
#include <typex/ops/normalization.hpp>
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

// torch.nn.ReLU6: hardtanh(x, 0, 6), recorded as aten.hardtanh.default(x, 0.0, 6.0) (torch.export's).
struct ReLU6 {
  BOOST_HANA_DEFINE_STRUCT(ReLU6);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::relu6(x));
  }
};

struct Hardtanh {
  BOOST_HANA_DEFINE_STRUCT(Hardtanh);
  double min_val = -1.0;
  double max_val = 1.0;
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::hardtanh(x, min_val, max_val));
  }
};

struct LeakyReLU {
  BOOST_HANA_DEFINE_STRUCT(LeakyReLU);
  double negative_slope = 0.01;
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::leaky_relu(x, negative_slope));
  }
};

struct ELU {
  BOOST_HANA_DEFINE_STRUCT(ELU);
  double alpha = 1.0;
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::elu(x, alpha));
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

struct Hardswish {
  BOOST_HANA_DEFINE_STRUCT(Hardswish);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::hardswish(x));
  }
};

struct Hardsigmoid {
  BOOST_HANA_DEFINE_STRUCT(Hardsigmoid);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::hardsigmoid(x));
  }
};

struct Mish {
  BOOST_HANA_DEFINE_STRUCT(Mish);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::mish(x));
  }
};

struct Softplus {
  BOOST_HANA_DEFINE_STRUCT(Softplus);
  double beta = 1.0;
  double threshold = 20.0;
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::softplus(x, beta, threshold));
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

// torch.nn.Softmax(dim) / torch.nn.LogSoftmax(dim), the dim a template argument.
template <long long Dim>
struct Softmax {
  BOOST_HANA_DEFINE_STRUCT(Softmax);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::softmax<Dim>(x));
  }
};

template <long long Dim>
struct LogSoftmax {
  BOOST_HANA_DEFINE_STRUCT(LogSoftmax);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::log_softmax<Dim>(x));
  }
};

// torch.nn.Identity: its input, unchanged (no op recorded; the module call graph has the call).
struct Identity {
  BOOST_HANA_DEFINE_STRUCT(Identity);
  template <class X>
  X operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(x);
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
