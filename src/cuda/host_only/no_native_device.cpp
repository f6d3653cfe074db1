// The CUDA backend's native-device entry points in a build without nvcc (TYPEX_CUDA=OFF: the clang
// sanitizer stages of scripts/test.sh): programs run on an emulated device they are given, and
// asking for a GPU says why there is none, as a GPU-less machine's driver error would.
#include <typex/backend/cuda/device.hpp>

namespace typex::cuda {

int device_count(std::string* why) {
  if (why != nullptr) *why = "this build of typex has no native CUDA device runtime (typex::cuda was not built: TYPEX_CUDA=OFF)";
  return 0;
}

std::shared_ptr<device_runtime> make_native_device(int ordinal) {
  typex::detail::raise<device_error>([&](auto& w) {
    w.put("typex::cuda: no GPU for device "); w.put_int(ordinal);
    w.put(": this build of typex has no native CUDA device runtime (typex::cuda was not built: TYPEX_CUDA=OFF); "
          "pass compile_options::device (an emulated device, or a native one from a build with nvcc)");
  });
}

}  // namespace typex::cuda
