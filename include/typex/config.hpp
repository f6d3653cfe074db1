// typex/config.hpp — version, portability macros and user switches.
//
// The only header allowed to test compilers and platforms. Every other header includes it first
// (directly or through a lower layer) and uses the TYPEX_* macros defined here.
#pragma once

#define TYPEX_VERSION_MAJOR 0
#define TYPEX_VERSION_MINOR 1
#define TYPEX_VERSION_PATCH 0
#define TYPEX_VERSION (TYPEX_VERSION_MAJOR * 10000 + TYPEX_VERSION_MINOR * 100 + TYPEX_VERSION_PATCH)

#if !defined(__cplusplus) || (__cplusplus < 202002L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 202002L))
#error "typex needs C++20: compile with -std=c++20 (CMake: target_link_libraries(app PRIVATE typex::typex) sets it)"
#endif

// Functions that the CUDA backend also calls from device code (scalar math, dim arithmetic).
// TYPEX_CUDA_COMPILER: this unit is compiled by nvcc (the CUDA backend's kernel API is native);
// otherwise backend/cuda/kernel_api.cuh runs kernels on its CPU emulator of the execution model.
#if defined(__CUDACC__)
#define TYPEX_CUDA_COMPILER 1
#define TYPEX_HOST_DEVICE __host__ __device__
#else
#define TYPEX_HOST_DEVICE
#endif

// Cold paths (error reporting) stay out of line so hot loops do not pay for message formatting.
#if defined(__GNUC__) || defined(__clang__)
#define TYPEX_NOINLINE __attribute__((noinline))
#define TYPEX_COLD __attribute__((cold))
#else
#define TYPEX_NOINLINE
#define TYPEX_COLD
#endif

// The compiler's spelling of the current function, with template arguments (type names in messages).
#if defined(__GNUC__) || defined(__clang__)
#define TYPEX_PRETTY_FUNCTION __PRETTY_FUNCTION__
#endif

// clang 16 elides string template arguments after 32 characters in diagnostics: static error
// messages are passed to it in pieces of this many characters (0: one piece, as g++ prints them whole).
#if defined(__clang__)
#define TYPEX_STATIC_MESSAGE_PIECE 31
#else
#define TYPEX_STATIC_MESSAGE_PIECE 0
#endif

// Alignment (bytes) of host tensor storage: one cache line, enough for AVX-512 loads.
#ifndef TYPEX_CONFIG_ALIGNMENT
#define TYPEX_CONFIG_ALIGNMENT 64
#endif

// The backend exported_program::module() runs a program on when the call names none: a type a
// backend's header defines (<typex/backend/eigen.hpp>: typex::eigen_backend, the CPU). Define
// TYPEX_DEFAULT_BACKEND project-wide to make another the default; the export layer names no backend.
#ifndef TYPEX_DEFAULT_BACKEND
namespace typex {
struct eigen_backend;
}
#define TYPEX_DEFAULT_BACKEND ::typex::eigen_backend
#endif

// Where typex's run-time code is compiled: the graph, printer and verifier, the exported program
// (input binding, its own verifier, printing), export's bookkeeping (shape facts, the module call
// graph), the tracing context. In every unit that includes it by default (header-only: nothing to
// link). Define TYPEX_SEPARATE_COMPILATION project-wide to compile it once instead, as {fmt} does:
// CMake's typex::runtime library holds it and sets the macro for its users (typex::eigen links it);
// without CMake, define the macro everywhere and compile one unit that also defines
// TYPEX_IMPLEMENTATION before including <typex/typex.hpp>.
#if defined(TYPEX_SEPARATE_COMPILATION)
#define TYPEX_API
#else
#define TYPEX_API inline
#endif
#if !defined(TYPEX_SEPARATE_COMPILATION) || defined(TYPEX_IMPLEMENTATION)
#define TYPEX_HEADER_DEFINITIONS 1
#else
#define TYPEX_HEADER_DEFINITIONS 0
#endif

// Whether files can be memory-mapped (POSIX mmap): safetensors files and program archives are then
// mapped and their tensors share the mapping; elsewhere they are read into memory once.
#if defined(__unix__) || defined(__APPLE__)
#define TYPEX_HAS_MMAP 1
#else
#define TYPEX_HAS_MMAP 0
#endif

// Where the Eigen backend's kernels are compiled. By default in every unit that includes
// <typex/backend/eigen.hpp> (header-only: nothing to link, ~10 s of compile time per unit). Define
// TYPEX_EIGEN_SEPARATE_COMPILATION project-wide to compile them once instead: CMake's typex::eigen
// target does (it is a library holding them and sets the macro for its users); without CMake,
// define it everywhere and compile one unit that also defines TYPEX_EIGEN_IMPLEMENTATION before
// including <typex/backend/eigen.hpp>.
#if defined(TYPEX_EIGEN_SEPARATE_COMPILATION)
#define TYPEX_EIGEN_API
#else
#define TYPEX_EIGEN_API inline
#endif

// Hot-loop helpers for the CPU backend's own GEMM micro-kernel and thread pool.
// TYPEX_KEEP_IN_REGISTER(v): an empty asm statement that makes v live in a vector register at
// this point. g++ 12 otherwise folds a vector load into every FMA that uses it (four loads of the
// same packet per step in Eigen's 3pX4 micro-kernel), which makes its GEMM load-bound: ~75 % of
// peak where clang reaches ~94 %. TYPEX_CPU_RELAX(): the spin-wait hint.
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define TYPEX_KEEP_IN_REGISTER(v) __asm__("" : "+v"(v))
#define TYPEX_CPU_RELAX() __builtin_ia32_pause()
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
#define TYPEX_KEEP_IN_REGISTER(v) __asm__("" : "+w"(v))
#define TYPEX_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define TYPEX_KEEP_IN_REGISTER(v) ((void)0)
#define TYPEX_CPU_RELAX() ((void)0)
#endif
// TYPEX_SIMD_ABI: an inline namespace around code whose data layout depends on the vector width
// the unit is compiled for (the GEMM's packed panels). typex::eigen is compiled with -march=native
// by default while a user's unit may not be: without it, the two copies of gemm<float> would share
// one mangled name and the linker would mix an AVX-512 packing with an SSE micro-kernel.
#if defined(__AVX512F__)
#define TYPEX_SIMD_ABI simd_avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define TYPEX_SIMD_ABI simd_avx2_fma
#elif defined(__AVX__)
#define TYPEX_SIMD_ABI simd_avx
#elif defined(__SSE2__)
#define TYPEX_SIMD_ABI simd_sse2
#elif defined(__ARM_NEON)
#define TYPEX_SIMD_ABI simd_neon
#else
#define TYPEX_SIMD_ABI simd_generic
#endif

// TYPEX_VECTOR_TEMPLATE_ARGS_BEGIN / _END: around code that names a class template with a SIMD
// vector type as its argument (Eigen's PacketBlock<Packet4f, 4>): g++ warns that the vector's
// attributes are ignored there (-Wignored-attributes, which is harmless here); Eigen silences it
// the same way in its own headers.
#if defined(__GNUC__) || defined(__clang__)
#define TYPEX_VECTOR_TEMPLATE_ARGS_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wignored-attributes\"")
#define TYPEX_VECTOR_TEMPLATE_ARGS_END _Pragma("GCC diagnostic pop")
#else
#define TYPEX_VECTOR_TEMPLATE_ARGS_BEGIN
#define TYPEX_VECTOR_TEMPLATE_ARGS_END
#endif

// TYPEX_UNROLL: unroll the next loop (a constant trip count) completely.
#if defined(__clang__)
#define TYPEX_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define TYPEX_UNROLL _Pragma("GCC unroll 32")
#else
#define TYPEX_UNROLL
#endif

// TYPEX_UNROLL_4: unroll the next loop (a run-time trip count) 4 times. The GEMM micro-kernel's k
// loop: g++ 12 leaves it rolled at -O3; unrolled, it ran 1.05x to 1.22x faster on Zen 3
// (benchmarks/README.md, issue 39).
#if defined(__clang__)
#define TYPEX_UNROLL_4 _Pragma("unroll 4")
#elif defined(__GNUC__)
#define TYPEX_UNROLL_4 _Pragma("GCC unroll 4")
#else
#define TYPEX_UNROLL_4
#endif

namespace typex {
inline constexpr int version_major = TYPEX_VERSION_MAJOR;
inline constexpr int version_minor = TYPEX_VERSION_MINOR;
inline constexpr int version_patch = TYPEX_VERSION_PATCH;
}  // namespace typex
