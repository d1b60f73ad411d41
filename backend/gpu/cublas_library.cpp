// Loading cuBLAS on first use (see cublas_library.h).
#include "backend/gpu/cublas_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace backend::gpu {
namespace {

// The spelled-out type is the C function's (the header's overload set includes it). Checked in
// an unevaluated operand: taking the address for real would need libcublas at link time, which
// an -O0 (Debug) build does not optimise away.
static_assert(sizeof(static_cast<GemmStridedBatchedEx>(&cublasGemmStridedBatchedEx)) == sizeof(GemmStridedBatchedEx));

template <typename Function>
void resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (function == nullptr) throw std::runtime_error(fmt::format("cuBLAS has no {}: {}", name, dlerror()));
}

Cublas load() {
  const std::string name = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    throw std::runtime_error(fmt::format("cannot load {} ({}): put the CUDA toolkit's libraries on LD_LIBRARY_PATH",
                                         name, dlerror()));
  }
  Cublas functions;  // the library stays loaded for the process's life
  resolve(library, "cublasCreate_v2", functions.create);
  resolve(library, "cublasDestroy_v2", functions.destroy);
  resolve(library, "cublasSetStream_v2", functions.set_stream);
  resolve(library, "cublasGemmStridedBatchedEx", functions.gemm_strided_batched);
  resolve(library, "cublasGetStatusString", functions.status_string);
  resolve(library, "cublasGetProperty", functions.get_property);
  return functions;
}

}  // namespace

const Cublas& cublas() {
  static const Cublas loaded = load();
  return loaded;
}

cublasHandle_t blas_handle(cudaStream_t stream) {
  cublasHandle_t handle = nullptr;
  if (const cublasStatus_t status = cublas().create(&handle); status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(fmt::format("creating a cuBLAS handle: {}", cublas().status_string(status)));
  }
  if (const cublasStatus_t status = cublas().set_stream(handle, stream); status != CUBLAS_STATUS_SUCCESS) {
    cublas().destroy(handle);
    throw std::runtime_error(fmt::format("binding a cuBLAS handle to its stream: {}", cublas().status_string(status)));
  }
  return handle;
}

}  // namespace backend::gpu
