// typex/backend/cuda.hpp — the CUDA backend's entry header: exported programs on a CUDA device
// (program.hpp: cuda_backend for program_module), device tensors and copies (memory.hpp,
// tensor.hpp: device_tensor<DT, S>), and ops on device tensors run eagerly (eager.hpp).
//
// The kernels are compiled by nvcc into typex::cuda (CMake: defined where nvcc is found); this
// header is host C++ and includes no CUDA runtime header but cuBLASLt's (lt.hpp). For tests and CI
// without a GPU, <typex/backend/cuda/emulated_device.hpp> gives a device that runs the same kernels
// on the CPU emulator of the execution model. docs/cuda_backend.md says what runs where.
#pragma once

#include <typex/backend/cuda/device_ops.hpp>
#include <typex/backend/cuda/eager.hpp>
#include <typex/backend/cuda/memory.hpp>
#include <typex/backend/cuda/program.hpp>
#include <typex/backend/cuda/tensor.hpp>
