// CUDA/NCCL/cuBLAS probe. Without a driver, cudaGetDeviceCount fails ("driver version is
// insufficient"): that is reported as "no GPU", never as a crash.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <stdexcept>

#include "backend/gpu/cublas_library.h"
#include "backend/gpu/gpu_probe.h"

namespace backend {

void probe_gpus(Capabilities& capabilities) {
  capabilities.built_with_cuda = true;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
    capabilities.cuda_runtime = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);
  }
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    capabilities.nccl = fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100);
  }
  try {
    const gpu::Cublas& cublas = gpu::cublas();
    int version[3] = {0, 0, 0};
    for (int part = 0; part < 3; ++part) cublas.get_property(static_cast<libraryPropertyType>(part), &version[part]);
    capabilities.cublas = fmt::format("{}.{}.{}", version[0], version[1], version[2]);
  } catch (const std::runtime_error& error) {
    capabilities.cublas = error.what();
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    capabilities.gpu_status = cudaGetErrorString(status);
    return;
  }
  if (count == 0) capabilities.gpu_status = "no CUDA device visible";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, i) != cudaSuccess) continue;
    capabilities.gpus.push_back({i, properties.name, static_cast<double>(properties.totalGlobalMem)});
  }
}

}  // namespace backend
