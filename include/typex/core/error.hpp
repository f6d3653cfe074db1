// typex/core/error.hpp — the exceptions typex throws, and the one cold path that throws them.
//
// Every run-time failure is a typed exception derived from typex::error, whose message says what
// was expected, what was given, and what to do. The same checks run at compile time where the facts
// are static: the throwing helpers below are deliberately not constexpr, so reaching one during
// constant evaluation is a compile error at the user's line (the {fmt} `report_error` trick).
#pragma once

#include <typex/core/text.hpp>

#include <stdexcept>
#include <string>

namespace typex {

// Base of every exception typex throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Extents that do not fit an op or a declared tensor type (rank, static extent, broadcast, ...).
class shape_error : public error {
 public:
  using error::error;
};

// A symbolic dim outside its declared range, or two uses of one symbol bound to different values.
// (torch.export: ConstraintViolationError.)
class constraint_violation : public shape_error {
 public:
  using shape_error::shape_error;
};

// A tensor of the wrong dtype where a specific dtype is required.
class dtype_error : public error {
 public:
  using error::error;
};

// Leaves or a spec that do not fit a pytree structure.
class tree_error : public error {
 public:
  using error::error;
};

// An argument out of its domain (a dim index out of range, a negative extent, a zero step, ...).
class argument_error : public error {
 public:
  using error::error;
};

// An op, dtype or feature a backend does not run (named in the message), found before running.
class unsupported_error : public error {
 public:
  using error::error;
};

// An object used after it lost its state: a tensor or module that was moved from (its storage or
// program is gone). Use a tensor or module that owns its state.
class state_error : public error {
 public:
  using error::error;
};

// A module call or swap whose signature does not fit (unflatten): a replacement that takes or
// returns other trees, dtypes or shapes than the call it replaces, a submodule called alone whose
// signature the program did not keep. The message names the module's path and both signatures.
class signature_error : public error {
 public:
  using error::error;
};

// A device that cannot do what was asked (the message names the device and the reason): no GPU or
// no driver at run time, out of device memory (nothing leaked: the caller may free memory and try
// again), a kernel or library call that failed (naming the node and op), a tensor on one device
// given where another device's is needed (naming the input and both devices).
class device_error : public error {
 public:
  using error::error;
};

// A file that cannot be opened, read, mapped or written (the message names the file and the
// system's reason).
class file_error : public error {
 public:
  using error::error;
};

// A file (or buffer) whose content is not what its format says: a truncated safetensors file, a
// header that is not JSON, tensors whose byte ranges overlap or leave the file, a program archive
// whose description breaks its schema. The message names the file and the first thing wrong.
// Nothing is read outside the bytes given, whatever they hold.
class format_error : public error {
 public:
  using error::error;
};

namespace detail {

// Formats the message with `f(writer)` and throws E. Out of line and cold: the formatting code
// never sits in a hot loop, and calling this from a constexpr function fails constant evaluation.
template <class E, class F>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void raise(F&& f) {
  throw E(to_string_with(f));
}

template <class E>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void raise_message(std::string message) {
  throw E(std::move(message));
}

}  // namespace detail
}  // namespace typex
