// typex/nn/optim.hpp — torch.optim's SGD, Adam and AdamW, and torch.nn.utils.clip_grad_norm_, over a
// module's parameters by fully-qualified name.
//
//   typex::optim::adamw opt(model, {.lr = 1e-3});         // the model's parameters (tied ones once)
//   opt.step(grads);                                      // grads: named_tensors, FQN -> gradient
//   typex::optim::clip_grad_norm_(grads, 1.0);            // before step, as in PyTorch
//   auto sd = opt.state_dict();                           // "0.weight.exp_avg", "0.weight.step", ...
//
// Each step is PyTorch's single-tensor algorithm (what torch.optim runs on CPU tensors), element by
// element in the parameter's dtype (f32 or f64) with the same order of operations, so a run matches
// torch.optim's step for step to rounding (tests/unit/nn/optim.cpp, reference data from
// tools/optim_reference.py). The gradients come by name: a parameter without one is skipped (as
// torch skips p.grad None), a gradient for a name that is not a parameter, or of another shape or
// dtype, is an error naming it. The parameters are updated in place: the optimizer holds tensors that
// share the module's storage, so the module (and an exported program made from it) sees the update.
// An optimizer belongs to one thread at a time; two optimizers share nothing.
//
// Parameters on a device (a CUDA program_module's parameters()) are stepped there: the same update,
// one kernel per parameter through the device's operations (tensor/device_ops.hpp; include the
// backend, <typex/backend/cuda.hpp>), the state (momentum, exp_avg, ...) kept on the device beside
// them and given to state_dict() as host copies. The gradients must be on the parameter's device.
#pragma once

#include <typex/core/error.hpp>
#include <typex/tensor/device_ops.hpp>
#include <typex/tensor/named_tensors.hpp>
#include <typex/trace/module.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex::optim {

// The parameters an optimizer updates: (FQN, a tensor sharing the parameter's storage), as
// named_parameters(model) gives them.
using param_list = std::vector<std::pair<std::string, any_tensor>>;

struct sgd_options {
  double lr = 1e-3;  // (torch.optim.SGD's defaults)
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;
};

struct adam_options {
  double lr = 1e-3;  // (torch.optim.Adam's defaults)
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled_weight_decay = false;  // AdamW: p *= 1 - lr * weight_decay, not grad += weight_decay * p
};

namespace detail {

// Each parameter's gradient in `grads` (nullptr where it has none), all checked before a step
// changes anything: every name a parameter's, each gradient of its parameter's dtype and shape.
TYPEX_API std::vector<const any_tensor*> gradients_of(const named_tensors& grads, const param_list& params,
                                                      std::string_view who);
// Parameters an optimizer can update: floating f32 or f64, each once.
TYPEX_API void check_params(const param_list& params, std::string_view who);
TYPEX_API void check_sgd(const sgd_options& o);
TYPEX_API void check_adam(const adam_options& o);

// A fresh zero tensor of p's dtype and shape, where p lives.
inline any_tensor zeros_like(const any_tensor& p) { return zeros_where_it_is(p, "typex::optim: the optimizer's state"); }
// A host copy of optimizer state (what state_dict gives).
inline any_tensor copy_of(const any_tensor& p) { return host_copy(p, "typex::optim::state_dict"); }
// Runs the device updates a step collected (none: nothing), each on its parameter's device.
inline void run_device_updates(const std::vector<optimizer_update>& updates) {
  if (!updates.empty()) device_ops_for(updates.front().param->device(), "typex::optim::step").step(updates);
}

// f(T{}) for the parameter's dtype (f32 or f64: check_params saw to it).
template <class F>
decltype(auto) with_floating(dtype d, F&& f) {
  if (d == dtype::f64) return f(double{});
  return f(float{});
}

// Loads one state tensor `name` of `sd` into `dst` (a copy), checking dtype and shape.
TYPEX_API void load_state_tensor(const named_tensors& sd, const std::string& name, any_tensor& dst, std::string_view who);
// Names in sd that `known` does not hold: an argument_error listing them.
TYPEX_API void check_state_names(const named_tensors& sd, const std::vector<std::string>& known, std::string_view who);

}  // namespace detail

// torch.optim.SGD (momentum, dampening, weight decay, Nesterov, maximize).
class sgd {
 public:
  explicit sgd(param_list params, sgd_options o = {}) : options(o), params_(std::move(params)), momentum_(params_.size()) {
    detail::check_params(params_, "typex::optim::sgd");
    detail::check_sgd(options);
  }
  template <typex::module_type M>
  explicit sgd(M& model, sgd_options o = {}) : sgd(named_parameters(model), o) {}

  // One step with the gradients by FQN.
  void step(const named_tensors& grads) {
    detail::check_sgd(options);
    const std::vector<const any_tensor*> gs = detail::gradients_of(grads, params_, "typex::optim::sgd::step");
    std::vector<optimizer_update> device;  // (the parameters on a device: stepped together, after the loop)
    // (a device parameter's state before this step: restored if the step fails before its launches
    // ran, e.g. no device memory for a new momentum buffer, so that a retry is the same first step)
    std::vector<std::pair<std::size_t, std::optional<any_tensor>>> before;
    try {
      for (std::size_t i = 0; i < params_.size(); ++i) {
        const any_tensor& p = params_[i].second;
        const any_tensor* g = gs[i];
        if (g == nullptr) continue;
        if (!p.device().is_host()) before.emplace_back(i, momentum_[i]);
        const bool first = options.momentum != 0 && !momentum_[i];  // (the first buffer is the gradient itself)
        if (first) momentum_[i] = detail::zeros_like(p);
        if (!p.device().is_host()) {
          device.push_back(device_update(p, *g, i, first));
          continue;
        }
        detail::with_floating(p.scalar_type(), [&](auto zero) { update(zero, p, *g, i, first); });
      }
      detail::run_device_updates(device);
    } catch (...) {
      for (auto& [i, m] : before) momentum_[i] = std::move(m);
      throw;
    }
  }

  // "<fqn>.momentum_buffer" for each parameter that has one (copies).
  named_tensors state_dict() const {
    named_tensors sd;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (momentum_[i]) sd.insert(params_[i].first + ".momentum_buffer", detail::copy_of(*momentum_[i]));
    return sd;
  }
  // Restores what state_dict gave (names, dtypes and shapes checked; nothing changes on an error).
  void load_state_dict(const named_tensors& sd) {
    static constexpr std::string_view who = "typex::optim::sgd::load_state_dict";
    std::vector<std::string> known;
    for (const auto& [name, p] : params_) known.push_back(name + ".momentum_buffer");
    detail::check_state_names(sd, known, who);
    std::vector<std::optional<any_tensor>> m(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (sd.contains(known[i])) {
        m[i] = detail::zeros_like(params_[i].second);
        detail::load_state_tensor(sd, known[i], *m[i], who);
      }
    momentum_ = std::move(m);
  }

  const param_list& parameters() const noexcept { return params_; }
  sgd_options options;  // (torch's param_groups[0]: a schedule may change lr between steps)

 private:
  optimizer_update device_update(const any_tensor& p, const any_tensor& g, std::size_t i, bool first) const {
    optimizer_update u;
    u.kind = optimizer_update::algorithm::sgd;
    u.param = &p, u.grad = &g;
    u.buf1 = options.momentum != 0 && momentum_[i] ? &*momentum_[i] : nullptr;
    u.maximize = options.maximize, u.first = first, u.nesterov = options.nesterov;
    u.weight_decay = options.weight_decay, u.momentum = options.momentum, u.keep = 1 - options.dampening, u.lr_step = -options.lr;
    return u;
  }
  template <class T>
  void update(T, const any_tensor& p, const any_tensor& g, std::size_t i, bool first) const {
    T* w = p.data<T>();
    const T* d = g.data<T>();
    T* buf = options.momentum != 0 && momentum_[i] ? momentum_[i]->data<T>() : nullptr;  // (momentum 0: no buffer, as torch)
    const index_t n = p.numel();
    const T wd = static_cast<T>(options.weight_decay), mom = static_cast<T>(options.momentum);
    const T keep = static_cast<T>(1 - options.dampening), step = static_cast<T>(-options.lr);
    // (the options in locals, and plain SGD as a loop of its own: read through `this` in the loop,
    // they kept it scalar, a third of the MLP's training step at batch 32)
    const bool maximize = options.maximize, decay = options.weight_decay != 0, nesterov = options.nesterov;
    if (!maximize && !decay && buf == nullptr) {
      for (index_t k = 0; k < n; ++k) w[k] = w[k] + step * d[k];
      return;
    }
    if (!maximize && !decay && !nesterov && !first) {  // (momentum, after the first step)
      for (index_t k = 0; k < n; ++k) {
        buf[k] = buf[k] * mom + keep * d[k];
        w[k] = w[k] + step * buf[k];
      }
      return;
    }
    for (index_t k = 0; k < n; ++k) {
      T grad = maximize ? -d[k] : d[k];
      if (decay) grad = grad + wd * w[k];
      if (buf != nullptr) {
        buf[k] = first ? grad : buf[k] * mom + keep * grad;
        grad = nesterov ? grad + mom * buf[k] : buf[k];
      }
      w[k] = w[k] + step * grad;
    }
  }

  param_list params_;
  std::vector<std::optional<any_tensor>> momentum_;
};

// torch.optim.Adam (weight decay, AMSGrad, maximize); with decoupled_weight_decay, torch.optim.AdamW.
class adam {
 public:
  explicit adam(param_list params, adam_options o = {}) : options(o), params_(std::move(params)), state_(params_.size()) {
    detail::check_params(params_, "typex::optim::adam");
    detail::check_adam(options);
  }
  template <typex::module_type M>
  explicit adam(M& model, adam_options o = {}) : adam(named_parameters(model), o) {}

  void step(const named_tensors& grads) {
    detail::check_adam(options);
    const std::vector<const any_tensor*> gs = detail::gradients_of(grads, params_, "typex::optim::adam::step");
    std::vector<optimizer_update> device;  // (the parameters on a device: stepped together, after the loop)
    // (a device parameter's state before this step: restored if the step fails before its launches
    // ran, e.g. no device memory for new state, so that a retry takes the same step count)
    std::vector<std::pair<std::size_t, slot>> before;
    try {
      for (std::size_t i = 0; i < params_.size(); ++i) {
        const any_tensor& p = params_[i].second;
        const any_tensor* g = gs[i];
        if (g == nullptr) continue;
        slot& s = state_[i];
        if (!p.device().is_host()) before.emplace_back(i, s);
        if (!s.exp_avg) {
          s.exp_avg = detail::zeros_like(p);
          s.exp_avg_sq = detail::zeros_like(p);
          if (options.amsgrad) s.max_exp_avg_sq = detail::zeros_like(p);
        }
        if (options.amsgrad && !s.max_exp_avg_sq) s.max_exp_avg_sq = detail::zeros_like(p);
        s.step += 1;
        if (!p.device().is_host()) {
          device.push_back(device_update(p, *g, s));
          continue;
        }
        detail::with_floating(p.scalar_type(), [&](auto zero) { update(zero, p, *g, s); });
      }
      detail::run_device_updates(device);
    } catch (...) {
      for (auto& [i, s] : before) state_[i] = std::move(s);
      throw;
    }
  }

  // "<fqn>.step" (an f32 scalar, as torch keeps it), "<fqn>.exp_avg", "<fqn>.exp_avg_sq" and, with
  // AMSGrad, "<fqn>.max_exp_avg_sq", for each parameter stepped at least once (copies).
  named_tensors state_dict() const {
    named_tensors sd;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const slot& s = state_[i];
      if (!s.exp_avg) continue;
      const std::string& n = params_[i].first;
      any_tensor step(dtype::f32, {});
      *step.data<float>() = static_cast<float>(s.step);
      sd.insert(n + ".step", std::move(step));
      sd.insert(n + ".exp_avg", detail::copy_of(*s.exp_avg));
      sd.insert(n + ".exp_avg_sq", detail::copy_of(*s.exp_avg_sq));
      if (s.max_exp_avg_sq) sd.insert(n + ".max_exp_avg_sq", detail::copy_of(*s.max_exp_avg_sq));
    }
    return sd;
  }
  void load_state_dict(const named_tensors& sd) {
    static constexpr std::string_view who = "typex::optim::adam::load_state_dict";
    std::vector<std::string> known;
    for (const auto& [name, p] : params_)
      for (const char* k : {".step", ".exp_avg", ".exp_avg_sq", ".max_exp_avg_sq"}) known.push_back(name + k);
    detail::check_state_names(sd, known, who);
    std::vector<slot> st(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const std::string& n = params_[i].first;
      if (!sd.contains(n + ".step")) continue;
      any_tensor step(dtype::f32, {});
      detail::load_state_tensor(sd, n + ".step", step, who);
      st[i].step = static_cast<double>(*step.data<float>());
      for (auto [key, dst] : {std::pair{".exp_avg", &st[i].exp_avg}, std::pair{".exp_avg_sq", &st[i].exp_avg_sq},
                              std::pair{".max_exp_avg_sq", &st[i].max_exp_avg_sq}}) {
        if (!sd.contains(n + key)) continue;
        *dst = detail::zeros_like(params_[i].second);
        detail::load_state_tensor(sd, n + key, **dst, who);
      }
      if (!st[i].exp_avg || !st[i].exp_avg_sq)
        typex::detail::raise<argument_error>([&](auto& w) {
          w.put(who); w.put(": '"); w.put(n); w.put(".step' comes without '"); w.put(n); w.put(".exp_avg' and '");
          w.put(n); w.put(".exp_avg_sq'");
        });
    }
    state_ = std::move(st);
  }

  const param_list& parameters() const noexcept { return params_; }
  adam_options options;

 private:
  struct slot {
    double step = 0;
    std::optional<any_tensor> exp_avg, exp_avg_sq, max_exp_avg_sq;
  };

  // (the scalars as update() computes them, in double: the device converts them to T as it does)
  optimizer_update device_update(const any_tensor& p, const any_tensor& g, const slot& s) const {
    optimizer_update u;
    u.kind = optimizer_update::algorithm::adam;
    u.param = &p, u.grad = &g, u.buf1 = &*s.exp_avg, u.buf2 = &*s.exp_avg_sq;
    u.buf3 = options.amsgrad ? &*s.max_exp_avg_sq : nullptr;
    u.maximize = options.maximize, u.decoupled = options.decoupled_weight_decay;
    const double bias1 = 1 - std::pow(options.beta1, s.step), bias2 = 1 - std::pow(options.beta2, s.step);
    u.step_size = -(options.lr / bias1);
    u.bias2_sqrt = std::sqrt(bias2);
    u.one_minus_beta1 = 1 - options.beta1, u.beta2 = options.beta2, u.one_minus_beta2 = 1 - options.beta2, u.eps = options.eps;
    u.weight_decay = options.weight_decay, u.decay = 1 - options.lr * options.weight_decay;
    return u;
  }
  template <class T>
  void update(T, const any_tensor& p, const any_tensor& g, slot& s) const {
    T* w = p.data<T>();
    const T* d = g.data<T>();
    T* m = s.exp_avg->data<T>();
    T* v = s.exp_avg_sq->data<T>();
    T* vmax = options.amsgrad ? s.max_exp_avg_sq->data<T>() : nullptr;
    const index_t n = p.numel();
    const double bias1 = 1 - std::pow(options.beta1, s.step), bias2 = 1 - std::pow(options.beta2, s.step);
    const T step_size = static_cast<T>(-(options.lr / bias1));
    const T bias2_sqrt = static_cast<T>(std::sqrt(bias2));
    const T one_minus_beta1 = static_cast<T>(1 - options.beta1), beta2 = static_cast<T>(options.beta2);
    const T one_minus_beta2 = static_cast<T>(1 - options.beta2), eps = static_cast<T>(options.eps);
    const T wd = static_cast<T>(options.weight_decay), decay = static_cast<T>(1 - options.lr * options.weight_decay);
    for (index_t k = 0; k < n; ++k) {
      T grad = options.maximize ? -d[k] : d[k];
      if (options.weight_decay != 0) {
        if (options.decoupled_weight_decay) w[k] = w[k] * decay;
        else grad = grad + wd * w[k];
      }
      // exp_avg.lerp_(grad, 1 - beta1), as torch's lerp: from the nearer end
      m[k] = one_minus_beta1 < T(0.5) ? m[k] + one_minus_beta1 * (grad - m[k]) : grad - (grad - m[k]) * (T(1) - one_minus_beta1);
      v[k] = v[k] * beta2 + one_minus_beta2 * grad * grad;
      T second = v[k];
      if (vmax != nullptr) second = vmax[k] = std::max(vmax[k], v[k]);
      const T denom = std::sqrt(second) / bias2_sqrt + eps;
      w[k] = w[k] + step_size * (m[k] / denom);
    }
  }

  param_list params_;
  std::vector<slot> state_;
};

// torch.optim.AdamW: Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the update),
// weight_decay 0.01 by default (its own options, so that {.lr = 1e-3} keeps that default).
struct adamw_options {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  bool amsgrad = false;
  bool maximize = false;
  constexpr adam_options as_adam() const noexcept {
    return {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay, .amsgrad = amsgrad,
            .maximize = maximize, .decoupled_weight_decay = true};
  }
};
class adamw : public adam {
 public:
  explicit adamw(param_list params, adamw_options o = {}) : adam(std::move(params), o.as_adam()) {}
  template <typex::module_type M>
  explicit adamw(M& model, adamw_options o = {}) : adamw(named_parameters(model), o) {}
};

// torch.nn.utils.clip_grad_norm_: scales every gradient in place by min(1, max_norm / (total + 1e-6)),
// where total is the norm (norm_type: p >= 1, or infinity) of all gradients together, and returns
// total. A total that is NaN or infinite raises argument_error when error_if_nonfinite (torch's
// RuntimeError); otherwise the gradients are scaled by it as torch does. Each gradient's norm is
// summed in chunks of power_sum_chunk elements (tensor/device_ops.hpp), where the gradient is: a
// device gradient's on its device, the same bits as the host's for p = 1, 2 and inf.
TYPEX_API double clip_grad_norm_(named_tensors& grads, double max_norm, double norm_type = 2.0,
                                 bool error_if_nonfinite = false);

}  // namespace typex::optim

#if TYPEX_HEADER_DEFINITIONS
namespace typex::optim::detail {
inline const any_tensor* gradient_of(const named_tensors& grads, const std::string& name, const any_tensor& p,
                                     std::string_view who) {
  const any_tensor* g = grads.find(name);
  if (g == nullptr) return nullptr;
  g->check_storage("the gradient of '" + name + "'");
  if (g->scalar_type() != p.scalar_type())
    typex::detail::raise<dtype_error>([&](auto& w) {
      w.put(who); w.put(": the gradient of '"); w.put(name); w.put("' is "); w.put(g->to_string());
      w.put(", the parameter "); w.put(p.to_string());
    });
  if (g->device() != p.device())
    typex::detail::raise<device_error>([&](auto& w) {
      w.put(who); w.put(": the gradient of '"); w.put(name); w.put("' is on "); w.put(g->device().to_string());
      w.put(", the parameter on "); w.put(p.device().to_string()); w.put(" (an update reads both on one device)");
    });
  if (g->extents() != p.extents())
    typex::detail::raise<shape_error>([&](auto& w) {
      w.put(who); w.put(": the gradient of '"); w.put(name); w.put("' is "); w.put(g->to_string());
      w.put(", the parameter "); w.put(p.to_string());
    });
  if (g->raw_data() == p.raw_data() && p.nbytes() != 0)
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": the gradient of '"); w.put(name); w.put("' is the parameter itself (the same storage)");
    });
  return g;
}
}  // namespace typex::optim::detail

TYPEX_API auto typex::optim::detail::gradients_of(const named_tensors& grads, const param_list& params,
                                                  std::string_view who) -> std::vector<const any_tensor*> {
  std::string unknown;
  for (const auto& [name, g] : grads) {
    bool found = false;
    for (const auto& [pname, p] : params) found = found || pname == name;
    if (!found) {
      if (!unknown.empty()) unknown += ", ";
      unknown += "'" + name + "'";
    }
  }
  if (!unknown.empty())
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": gradients for names that are not parameters of this optimizer: "); w.put(unknown);
      w.put(" (a frozen parameter, one of another module, or a misspelt FQN)");
    });
  std::vector<const any_tensor*> gs;
  gs.reserve(params.size());
  for (const auto& [name, p] : params) gs.push_back(gradient_of(grads, name, p, who));
  return gs;
}

TYPEX_API auto typex::optim::detail::check_params(const param_list& params, std::string_view who) -> void {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    p.check_storage("parameter '" + name + "'");
    if (p.scalar_type() != dtype::f32 && p.scalar_type() != dtype::f64)
      typex::detail::raise<dtype_error>([&](auto& w) {
        w.put(who); w.put(": parameter '"); w.put(name); w.put("' is "); w.put(p.to_string());
        w.put("; the optimizers update f32 and f64 parameters");
      });
    for (std::size_t j = 0; j < i; ++j)
      if (params[j].first == name || (params[j].second.raw_data() == p.raw_data() && p.nbytes() != 0))
        typex::detail::raise<argument_error>([&](auto& w) {
          w.put(who); w.put(": parameter '"); w.put(name); w.put("' is given twice (as '"); w.put(params[j].first);
          w.put("'): a tensor would be stepped twice per step");
        });
  }
}

TYPEX_API auto typex::optim::detail::check_sgd(const sgd_options& o) -> void {
  auto bad = [](std::string_view what) {
    typex::detail::raise<argument_error>([&](auto& w) { w.put("typex::optim::sgd: invalid "); w.put(what); });
  };
  if (!(o.lr >= 0) || !std::isfinite(o.lr)) bad("learning rate (must be >= 0 and finite)");
  if (!(o.momentum >= 0) || !std::isfinite(o.momentum)) bad("momentum (must be >= 0 and finite)");
  if (!(o.weight_decay >= 0) || !std::isfinite(o.weight_decay)) bad("weight_decay (must be >= 0 and finite)");
  if (!std::isfinite(o.dampening)) bad("dampening (must be finite)");
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    bad("options: Nesterov momentum requires a momentum and zero dampening (as torch.optim.SGD)");
}

TYPEX_API auto typex::optim::detail::check_adam(const adam_options& o) -> void {
  auto bad = [](std::string_view what) {
    typex::detail::raise<argument_error>([&](auto& w) { w.put("typex::optim::adam: invalid "); w.put(what); });
  };
  if (!(o.lr >= 0) || !std::isfinite(o.lr)) bad("learning rate (must be >= 0 and finite)");
  if (!(o.eps >= 0) || !std::isfinite(o.eps)) bad("eps (must be >= 0 and finite)");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) bad("beta1 (must be in [0, 1))");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) bad("beta2 (must be in [0, 1))");
  if (!(o.weight_decay >= 0) || !std::isfinite(o.weight_decay)) bad("weight_decay (must be >= 0 and finite)");
}

TYPEX_API auto typex::optim::detail::load_state_tensor(const named_tensors& sd, const std::string& name, any_tensor& dst,
                                                       std::string_view who) -> void {
  const any_tensor& src = sd.at(name);
  src.check_storage("the optimizer state's '" + name + "'");
  if (src.scalar_type() != dst.scalar_type() || src.extents() != dst.extents())
    typex::detail::raise<shape_error>([&](auto& w) {
      w.put(who); w.put(": '"); w.put(name); w.put("' is "); w.put(src.to_string()); w.put(", expected ");
      w.put(dst.to_string());
    });
  copy_bytes(dst, src, who);  // (dst on the parameter's device)
}

TYPEX_API auto typex::optim::detail::check_state_names(const named_tensors& sd, const std::vector<std::string>& known,
                                                       std::string_view who) -> void {
  std::string unknown;
  for (const auto& [name, t] : sd)
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      if (!unknown.empty()) unknown += ", ";
      unknown += "'" + name + "'";
    }
  if (!unknown.empty())
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": entries this optimizer does not have: "); w.put(unknown);
    });
}

TYPEX_API auto typex::optim::clip_grad_norm_(named_tensors& grads, double max_norm, double norm_type,
                                             bool error_if_nonfinite) -> double {
  if (!(norm_type >= 1))  // (+inf passes; -inf, torch's min-norm, and NaN do not)
    typex::detail::raise_message<argument_error>("typex::optim::clip_grad_norm_: norm_type must be >= 1 or +infinity");
  const bool inf = std::isinf(norm_type);
  // per gradient: its norm (accumulated in double, as PyTorch's CPU reductions of f32), then the norm
  // of the norms. First every gradient's chunk sums (tensor/device_ops.hpp: the same bits on the
  // host and on a device, which computes them where the gradient is and hands back one double per
  // chunk): the host's here, a device's all in one call of its backend (one synchronization).
  std::vector<std::vector<double>> sums;
  sums.reserve(grads.size());
  std::vector<std::pair<const device_ops*, std::vector<power_sum_request>>> on_devices;
  for (const auto& [name, g] : grads) {
    g.check_storage("the gradient '" + name + "'");
    if (g.scalar_type() != dtype::f32 && g.scalar_type() != dtype::f64)
      typex::detail::raise<dtype_error>([&](auto& w) {
        w.put("typex::optim::clip_grad_norm_: the gradient '"); w.put(name); w.put("' is "); w.put(g.to_string());
        w.put("; f32 or f64 expected");
      });
    std::vector<double>& s = sums.emplace_back(static_cast<std::size_t>((g.numel() + power_sum_chunk - 1) / power_sum_chunk));
    const device_ops* ops = g.device().is_host() ? nullptr : &device_ops_for(g.device(), "typex::optim::clip_grad_norm_");
    if (ops != nullptr && ops->power_sums != nullptr) {
      std::size_t k = 0;
      while (k < on_devices.size() && on_devices[k].first != ops) ++k;
      if (k == on_devices.size()) on_devices.emplace_back(ops, std::vector<power_sum_request>{});
      on_devices[k].second.push_back({&g, s});
    } else {  // (a host gradient, or a device whose backend computes no sums: its host copy)
      const any_tensor h = ops == nullptr ? g : host_copy(g, "typex::optim::clip_grad_norm_");
      detail::with_floating(g.scalar_type(), [&](auto zero) {
        using T = decltype(zero);
        host_power_sums(h.data<T>(), h.numel(), norm_type, s);
      });
    }
  }
  for (const auto& [ops, requests] : on_devices) ops->power_sums(requests, norm_type);
  std::vector<double> norms;
  std::size_t i = 0;
  for (const auto& [name, g] : grads) {
    double acc = 0;
    for (const double c : sums[i++]) acc = std::isnan(c) || std::isnan(acc) ? NAN : (inf ? std::max(acc, c) : acc + c);
    detail::with_floating(g.scalar_type(), [&](auto zero) {
      using T = decltype(zero);
      norms.push_back(static_cast<double>(static_cast<T>(inf ? acc : std::pow(acc, 1.0 / norm_type))));
    });
  }
  if (norms.empty()) return 0.0;
  double total = 0;
  for (const double n : norms) total = inf ? (std::isnan(n) || std::isnan(total) ? NAN : std::max(total, n)) : total + std::pow(n, norm_type);
  if (!inf) total = std::pow(total, 1.0 / norm_type);
  const float total_f = static_cast<float>(total);
  if (error_if_nonfinite && !std::isfinite(total_f))
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put("typex::optim::clip_grad_norm_: the total norm of order "); w.put(inf ? "inf" : "");
      if (!inf) w.put_int(static_cast<long long>(norm_type));
      w.put(" of the gradients is not finite, so they cannot be clipped (as torch: error_if_nonfinite=True)");
    });
  const float coef = std::min(static_cast<float>(max_norm) / (total_f + 1e-6f), 1.0f);
  std::vector<optimizer_update> device;  // (gradients on a device: scaled there)
  for (const auto& [name, g] : grads) {
    if (!g.device().is_host()) {
      optimizer_update u;
      u.kind = optimizer_update::algorithm::scale;
      u.param = &g, u.factor = static_cast<double>(coef);
      device.push_back(u);
      continue;
    }
    detail::with_floating(g.scalar_type(), [&](auto zero) {
      using T = decltype(zero);
      T* d = g.data<T>();
      for (index_t k = 0; k < g.numel(); ++k) d[k] = d[k] * static_cast<T>(coef);
    });
  }
  detail::run_device_updates(device);
  return static_cast<double>(total_f);
}
#endif  // TYPEX_HEADER_DEFINITIONS
