# typex's CUDA backend in the build (included from the root CMakeLists.txt; design:
# docs of the CUDA backend, sections 4.4 and 4.6). Two independent parts, so that each build gets
# what it can compile:
#
#   typex::cuda_emulated  (INTERFACE, not installed) needs only the CUDA toolkit's headers and
#       cuBLASLt, no nvcc and no GPU: the emulated device runs the kernels' .cuh source on the CPU
#       emulator and reads the real cuBLASLt descriptors (creating and querying them works without a
#       driver). Any host compiler builds it, the clang sanitizer builds of scripts/test.sh included:
#       they are the race and memory checkers of the kernels.
#   typex::cuda  (STATIC, installed; TYPEX_CUDA) the native device runtime (src/cuda/*.cpp, host
#       code: the host compiler) and the kernels (src/cuda/*.cu: nvcc); runs only where there is a GPU.
#
# The toolkit is optional: nothing is installed for it (scripts/install-deps.sh; this project's
# machines have it preinstalled in /usr/local/cuda). Without it both parts are skipped here, the CUDA
# tests with them (tests/CMakeLists.txt tests for the targets), and the rest of typex builds as before.

find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  message(STATUS "typex: no CUDA toolkit found: the CUDA backend and its tests are skipped")
  if(TYPEX_CUDA)
    message(FATAL_ERROR "TYPEX_CUDA is ON but no CUDA toolkit was found (CUDAToolkit_ROOT names where it is)")
  endif()
  return()
endif()

# ---- the emulated device's dependencies: headers and cuBLASLt, any host compiler -----------------
add_library(typex_cuda_emulated INTERFACE)
add_library(typex::cuda_emulated ALIAS typex_cuda_emulated)
# (CUDA::cublasLt carries the toolkit's include directory: cuda_runtime_api.h for the types that the
# launch records and descriptors name, cublasLt.h for the descriptors)
target_link_libraries(typex_cuda_emulated INTERFACE typex_runtime CUDA::cublasLt)

# ---- nvcc: the native device and the kernels ------------------------------------------------------
# check_language only where TYPEX_CUDA may end up ON: the sanitizer builds pass -DTYPEX_CUDA=OFF and
# so do not pay for probing nvcc.
if(NOT DEFINED TYPEX_CUDA OR TYPEX_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
endif()
if(CMAKE_CUDA_COMPILER)
  set(_typex_cuda_default ON)
else()
  set(_typex_cuda_default OFF)
endif()
option(TYPEX_CUDA "Build typex::cuda, the native CUDA device and kernels (needs nvcc)" ${_typex_cuda_default})
# cuDNN: compile_options::convolutions = conv_engine::cudnn runs conv2d through cuDNN (dnn.hpp). On
# by default where cuDNN's header and library are found beside the toolkit (this project's machines:
# /usr/local/cuda; the pip wheels put libcudnn.so.9 there too), then system-wide. typex's own
# kernels stay the default path that every test covers; with cuDNN the emulated device also runs
# cuDNN's convolutions through its model (dnn_reference.hpp), so CI tests the cuDNN path's lowering.
# CMake 3.25's FindCUDAToolkit has no CUDA::cudnn target (newer CMake versions may).
find_path(TYPEX_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
if(TARGET CUDA::cudnn)
  set(TYPEX_CUDNN_LIBRARY CUDA::cudnn)
else()
  find_library(TYPEX_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT} PATH_SUFFIXES lib lib64)
endif()
if(TYPEX_CUDNN_INCLUDE_DIR AND TYPEX_CUDNN_LIBRARY)
  set(_typex_cudnn_default ON)
else()
  set(_typex_cudnn_default OFF)
endif()
option(TYPEX_CUDNN "Run conv2d through cuDNN where compile_options asks (needs cuDNN 9)" ${_typex_cudnn_default})
if(TYPEX_CUDNN AND NOT (TYPEX_CUDNN_INCLUDE_DIR AND TYPEX_CUDNN_LIBRARY))
  message(FATAL_ERROR "TYPEX_CUDNN is ON but cuDNN was not found (TYPEX_CUDNN_INCLUDE_DIR and TYPEX_CUDNN_LIBRARY name where it is)")
endif()
# (the engine's unit and the emulated device see TYPEX_CUDNN, and link cuDNN, with the target below)
function(typex_use_cudnn target)
  if(TYPEX_CUDNN)
    target_include_directories(${target} SYSTEM PUBLIC ${TYPEX_CUDNN_INCLUDE_DIR})
    target_link_libraries(${target} PUBLIC ${TYPEX_CUDNN_LIBRARY})
    target_compile_definitions(${target} PUBLIC TYPEX_CUDNN)
  endif()
endfunction()

if(NOT TYPEX_CUDA)
  message(STATUS "typex: CUDA toolkit ${CUDAToolkit_VERSION}: emulated CUDA device only (TYPEX_CUDA is OFF)")
  # (the backend's default device is the native one, defined by typex::cuda: a build without it gets
  # definitions that say so with a device_error, so that programs given an emulated device link)
  add_library(typex_cuda_host_only STATIC ${PROJECT_SOURCE_DIR}/src/cuda/host_only/no_native_device.cpp
                                          ${PROJECT_SOURCE_DIR}/src/cuda/engine.cpp)
  target_link_libraries(typex_cuda_host_only PUBLIC typex_eigen CUDA::cublasLt)
  target_compile_definitions(typex_cuda_host_only PUBLIC TYPEX_CUDA_SEPARATE_COMPILATION)
  typex_use_cudnn(typex_cuda_host_only)
  target_link_libraries(typex_cuda_emulated INTERFACE typex_cuda_host_only)
  return()
endif()
if(NOT CMAKE_CUDA_COMPILER)
  message(FATAL_ERROR "TYPEX_CUDA is ON but CMake found no CUDA compiler (set CMAKE_CUDA_COMPILER to nvcc)")
endif()
enable_language(CUDA)
message(STATUS "typex: CUDA toolkit ${CUDAToolkit_VERSION}: typex::cuda built by ${CMAKE_CUDA_COMPILER}")

file(GLOB TYPEX_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cuda/*.cu ${PROJECT_SOURCE_DIR}/src/cuda/*.cpp)
add_library(typex_cuda STATIC ${TYPEX_CUDA_SOURCES})
add_library(typex::cuda ALIAS typex_cuda)
set_target_properties(typex_cuda PROPERTIES
  EXPORT_NAME cuda
  POSITION_INDEPENDENT_CODE ON
  # sm_90a: the H100/H200 (SASS, the arch-specific features); sm_80: A100, and its PTX lets the
  # driver compile for newer GPUs. (CUDA 13 supports nothing below sm_75.)
  CUDA_ARCHITECTURES "80;90a"
  # the shared runtime, the one CUDA::cudart names: a static copy in typex::cuda and a shared one in
  # the program (cuBLASLt loads it) would be two runtimes with two sets of contexts and errors
  CUDA_RUNTIME_LIBRARY Shared)
# (the planned engine, src/cuda/engine.cpp, is compiled here once: its users get the declarations,
# TYPEX_CUDA_SEPARATE_COMPILATION; its constant folding runs typex::eigen's kernels)
target_link_libraries(typex_cuda PUBLIC typex_eigen CUDA::cudart CUDA::cublasLt)
target_compile_definitions(typex_cuda PUBLIC TYPEX_CUDA_SEPARATE_COMPILATION)
target_compile_options(typex_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:
  # CMake 3.25 does not know that nvcc 13 speaks C++20: with CUDA_STANDARD 20 it silently passes
  # -std=c++17 (and with CUDA_STANDARD_REQUIRED it refuses), so the flag is given here
  -std=c++20
  # constexpr host functions (typex's dim arithmetic, std::min) callable from kernels
  --expt-relaxed-constexpr
  # nvcc's front end warns "pointless comparison of unsigned integer with zero" (#186) for loops
  # whose template-dependent bound is 0 (core/sentence.hpp's message pieces); g++ and clang do not
  -diag-suppress=186
  # a host function reached from device code through a template is a warning by default, a crash
  # or a wrong result at run time: an error here
  --Werror=cross-execution-space-call
  # register spills and local memory are build errors: a kernel that needs them is rewritten, not
  # shipped slow; the report (registers, stack, barriers per kernel) is kept below
  -Xptxas=-warn-spills,-warn-lmem-usage,-Werror
  --resource-usage>)

# ptxas's resource report (registers, shared memory, stack, spills per kernel and architecture) as a
# build artifact: <build>/cuda/resource-usage/<unit>.cu.txt, rewritten by each compile of the unit.
# A compiler launcher (before any user launcher, e.g. ccache, which replays the report on a hit) sends
# the report to that file and everything else nvcc prints to the console as usual.
set(TYPEX_CUDA_REPORT_DIR ${PROJECT_BINARY_DIR}/cuda/resource-usage)
file(MAKE_DIRECTORY ${TYPEX_CUDA_REPORT_DIR})
file(WRITE ${PROJECT_BINARY_DIR}/cuda/nvcc-report.sh [=[
# generated by cmake/typexCuda.cmake: sh nvcc-report.sh <report dir> <compile command...>
dir=$1
shift
obj=unit
prev=
for a in "$@"; do
  [ "$prev" = "-o" ] && obj=$a
  prev=$a
done
log="$dir/$(basename "$obj" .o).txt"
"$@" 2>"$log.all"
rc=$?
grep -E '^(ptxas info|    [0-9]+ bytes stack frame)' "$log.all" >"$log"
grep -Ev '^(ptxas info|    [0-9]+ bytes stack frame)' "$log.all" >&2
rm -f "$log.all"
exit $rc
]=])
set_property(TARGET typex_cuda PROPERTY CUDA_COMPILER_LAUNCHER
             sh ${PROJECT_BINARY_DIR}/cuda/nvcc-report.sh ${TYPEX_CUDA_REPORT_DIR} ${CMAKE_CUDA_COMPILER_LAUNCHER})

typex_use_cudnn(typex_cuda)

# (the emulated device's users get the native one too where it is built: the backend's default
# device, make_native_device, is defined there)
target_link_libraries(typex_cuda_emulated INTERFACE typex_cuda)
