// typex/trace/module.hpp — modules: structs of tensors and submodules, named by reflection.
//
// A module is a struct adapted with one line of Boost.Hana (BOOST_HANA_ADAPT_STRUCT(my::block,
// attn, ffn, norm);). Its members are walked in declaration order: module tensors (parameter,
// buffer, constant) get fully-qualified names (`fc1.weight`), adapted structs are submodules,
// std::array / std::vector of submodules are numbered (`layers.0`, `layers.1`), a plain host_tensor
// member counts as a constant (as torch.export lifts tensor attributes), and anything else
// (sizes, flags, options) is configuration and skipped.
//
//   named_parameters(m)       parameters, each storage once (tied weights: the first name)
//   named_buffers(m)          buffers, persistent and not
//   state_dict(m)             parameters and persistent buffers, every name (tied ones twice)
//   load_state_dict(m, sd)    copies values in, checking names, dtypes and shapes
//   train(m) / eval(m)        training or evaluation mode, model-wide (torch's module.train())
#pragma once

#include <typex/core/sentence.hpp>
#include <typex/core/type_name.hpp>
#include <typex/tensor/named_tensors.hpp>
#include <typex/trace/module_tensor.hpp>
#include <typex/tree/node.hpp>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/for_each.hpp>

#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace typex {

// A container module numbers its children instead of naming them (nn::Sequential: `0`, `1`, ...):
// it holds them in a std::tuple member `children` and says `static constexpr bool numbered_children = true;`.
template <class T>
concept numbered_module_type = requires { requires T::numbered_children; };

// A module whose tensors have names of its own making (torch's nn.LSTM: weight_ih_l0,
// weight_hh_l1_reverse, ...) says `static constexpr bool flat_named_tensors = true;` and has
// `template <class Self, class F> static void for_each_named_tensor(Self& self, F&& f)` calling
// f(name, tensor) for each of its module tensors, in order.
template <class T>
concept flat_named_module_type = requires { requires T::flat_named_tensors; };

template <class T>
concept module_type = (boost::hana::Struct<T>::value || numbered_module_type<T> || flat_named_module_type<T>) &&
                      !module_tensor_type<T> && !host_tensor_type<T>;

namespace detail {
// An error here means: the model type has no reflection, so its parameters, buffers and submodules
// cannot be found. (One sentence for every use: the second use of the same model, init_module then
// export_program, is the same instantiation and adds no error; the chain names each caller.)
template <class M>
constexpr auto fail_not_a_module() {
  TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
    w.put("typex: "); w.put(raw_type_name<M>());
    w.put(" is not a module (init_module, export_program and load_state_dict find its parameters, buffers and "
          "submodules by reflection): adapt it with BOOST_HANA_ADAPT_STRUCT("); w.put(raw_type_name<M>());
    w.put(", member1, member2, ...) listing every parameter, buffer and submodule (or declare them with "
          "BOOST_HANA_DEFINE_STRUCT)");
  });
}

template <class T> struct is_module_sequence : std::false_type {};
template <class T, std::size_t N> struct is_module_sequence<std::array<T, N>> : std::bool_constant<module_type<T>> {};
template <class T, class A> struct is_module_sequence<std::vector<T, A>> : std::bool_constant<module_type<T>> {};

inline std::string join_fqn(std::string_view prefix, std::string_view name) {
  std::string s(prefix);
  if (!s.empty()) s += '.';
  s += name;
  return s;
}

template <class M, class OnTensor, class OnModule>
void walk_members(M& m, const std::string& prefix, OnTensor&& on_tensor, OnModule&& on_module);

// Visits every member of module m (tensors and submodules), recursively.
//   on_tensor(fqn, role, persistent, tensor&), on_module(fqn, module&) — the root's fqn is `prefix`.
template <class M, class OnTensor, class OnModule>
void walk_module(M& m, const std::string& prefix, OnTensor&& on_tensor, OnModule&& on_module) {
  on_module(prefix, m);
  if constexpr (flat_named_module_type<std::remove_const_t<M>>) {
    std::remove_const_t<M>::for_each_named_tensor(m, [&](std::string_view name, auto& t) {
      using T = std::remove_cvref_t<decltype(t)>;
      on_tensor(join_fqn(prefix, name), T::role, T::persistent, t);
    });
  } else if constexpr (numbered_module_type<std::remove_const_t<M>>) {
    std::size_t i = 0;
    std::apply([&](auto&... c) { (walk_module(c, join_fqn(prefix, std::to_string(i++)), on_tensor, on_module), ...); },
               m.children);
  } else {
    walk_members(m, prefix, on_tensor, on_module);
  }
}

template <class M, class OnTensor, class OnModule>
void walk_members(M& m, const std::string& prefix, OnTensor&& on_tensor, OnModule&& on_module) {
  boost::hana::for_each(boost::hana::accessors<std::remove_const_t<M>>(), [&](auto acc) {
    auto& member = boost::hana::second(acc)(m);
    using T = std::remove_cvref_t<decltype(member)>;
    const std::string fqn = join_fqn(prefix, boost::hana::to<const char*>(boost::hana::first(acc)));
    if constexpr (module_tensor_type<T>) {
      on_tensor(fqn, T::role, T::persistent, member);
    } else if constexpr (host_tensor_type<T>) {
      on_tensor(fqn, tensor_role::constant, true, member);
    } else if constexpr (module_type<T>) {
      walk_module(member, fqn, on_tensor, on_module);
    } else if constexpr (is_module_sequence<T>::value) {
      std::size_t i = 0;
      for (auto& sub : member) walk_module(sub, join_fqn(fqn, std::to_string(i++)), on_tensor, on_module);
    }
  });
}
}  // namespace detail

// Calls f(fqn, role, persistent, tensor) for every module tensor of m, in declaration order.
template <module_type M, class F>
void for_each_module_tensor(M& m, F&& f) {
  detail::walk_module(m, std::string{}, f, [](const std::string&, const auto&) {});
}

// Calls f(fqn, module) for m ("") and every submodule, parents first.
template <module_type M, class F>
void for_each_submodule(M& m, F&& f) {
  detail::walk_module(m, std::string{}, [](const std::string&, tensor_role, bool, const auto&) {}, f);
}

namespace detail {
template <class M, class Keep>
std::vector<std::pair<std::string, any_tensor>> collect(const M& m, bool remove_duplicate, Keep&& keep) {
  std::vector<std::pair<std::string, any_tensor>> out;
  std::vector<const std::byte*> seen;
  for_each_module_tensor(m, [&](const std::string& fqn, tensor_role role, bool persistent, const auto& t) {
    if (!keep(role, persistent)) return;
    const std::byte* id = t.get_storage().data();
    if (remove_duplicate && id != nullptr) {  // (null: a moved-from tensor, never shared)
      for (const std::byte* s : seen)
        if (s == id) return;
      seen.push_back(id);
    }
    out.emplace_back(fqn, t.erase());
  });
  return out;
}
}  // namespace detail

// (name, tensor) for every parameter; a storage shared by several names (tied weights) appears
// once, under its first name, unless remove_duplicate is false.
template <module_type M>
std::vector<std::pair<std::string, any_tensor>> named_parameters(const M& m, bool remove_duplicate = true) {
  return detail::collect(m, remove_duplicate, [](tensor_role r, bool) { return r == tensor_role::parameter; });
}

template <module_type M>
std::vector<std::pair<std::string, any_tensor>> named_buffers(const M& m, bool remove_duplicate = true) {
  return detail::collect(m, remove_duplicate, [](tensor_role r, bool) { return r == tensor_role::buffer; });
}

// Tensors that are neither parameters nor buffers (constants, plain tensor members).
template <module_type M>
std::vector<std::pair<std::string, any_tensor>> named_constants(const M& m) {
  return detail::collect(m, false, [](tensor_role r, bool) { return r == tensor_role::constant; });
}

// Parameters and persistent buffers under every name, as torch's state_dict().
template <module_type M>
named_tensors state_dict(const M& m) {
  named_tensors sd;
  for (auto& [name, t] :
       detail::collect(m, false, [](tensor_role r, bool p) { return r == tensor_role::parameter || (r == tensor_role::buffer && p); }))
    sd.insert(std::move(name), std::move(t));
  return sd;
}

// Copies the values of `sd` into m's parameters and persistent buffers (their storage is kept, so
// tied weights stay tied), as torch's load_state_dict: a name in both must have the same shape
// (shape_error) and dtype (dtype_error, unless options.convert_dtypes); with options.strict, every
// such tensor must be in `sd` and `sd` may hold nothing else (argument_error naming the missing and
// unexpected keys); without it, the names that match are loaded and the others returned. Every
// problem is found first and named in one message; nothing is copied unless everything fits. Tied
// weights (one storage under several names) load once, from whichever of their names `sd` has.
//   typex::load_state_dict(model, typex::load_safetensors("model.safetensors"));   // from PyTorch
template <module_type M>
load_result load_state_dict(M& m, const named_tensors& sd, const load_options& options) {
  std::vector<std::pair<std::string, any_tensor>> dst;
  for_each_module_tensor(m, [&](const std::string& fqn, tensor_role role, bool persistent, auto& t) {
    if (role == tensor_role::parameter || (role == tensor_role::buffer && persistent))
      dst.emplace_back(fqn, t.erase());  // (shares the member's storage: the copy lands in the model)
  });
  return detail::load_named(dst, sd, options, "typex::load_state_dict");
}
template <module_type M>
load_result load_state_dict(M& m, const named_tensors& sd, bool strict = true) {
  return load_state_dict(m, sd, load_options{.strict = strict});
}

// Training mode (mode = true) or evaluation mode for m and every submodule that has one (a
// `training` member: nn::Dropout, nn::BatchNorm1d/2d, nn::MultiheadAttention, a user's module), as
// torch's module.train(mode) / module.eval(): export records what the mode does (training-mode
// dropout draws a mask; batch norm uses the batch's statistics and updates the running ones).
// Returns m, so that `typex::export_program(typex::eval(model), x)` reads as torch's.
template <module_type M>
M& train(M& m, bool mode = true) {
  for_each_submodule(m, [&](const std::string&, auto& sub) {
    if constexpr (requires { sub.training = mode; }) sub.training = mode;
  });
  return m;
}
template <module_type M>
M& eval(M& m) {
  return train(m, false);
}

}  // namespace typex
