// Host-side capability probe: MPI and BLAS (always linked); CUDA and NCCL through
// gpu/gpu_probe.cpp when the build has them.
#include "backend/capabilities.h"

#include <cblas.h>
#include <fmt/format.h>
#include <mpi.h>

#include "backend/gpu/gpu_probe.h"

namespace backend {

Capabilities probe_capabilities() {
  Capabilities capabilities;
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  capabilities.mpi_library = std::string(version, static_cast<std::size_t>(length));
  // The first line; the length Open MPI gives counts the terminating NUL.
  if (auto newline = capabilities.mpi_library.find_first_of(std::string_view("\r\n\0", 3)); newline != std::string::npos) {
    capabilities.mpi_library.resize(newline);
  }
  capabilities.blas_library = openblas_get_config();
  probe_gpus(capabilities);
  return capabilities;
}

std::string describe(const Capabilities& c) {
  std::string out;
  out += fmt::format("MPI:   {}\n", c.mpi_library);
  out += fmt::format("BLAS:  {}\n", c.blas_library);
  if (!c.built_with_cuda) {
    out += "CUDA:  not built (no CUDA Toolkit, nvcc or NCCL at configure time, or -DDTSIM_WITH_CUDA=OFF)\n";
    return out;
  }
  out += fmt::format("CUDA:  runtime {}, NCCL {}, cuBLAS {}, driver {}\n", c.cuda_runtime, c.nccl, c.cublas,
                     c.driver.empty() ? "none" : c.driver);
  for (const auto& [library, path] : c.library_paths) out += fmt::format("       {:<13} {}\n", library, path);
  if (c.gpus.empty()) {
    out += fmt::format("GPUs:  none usable ({})\n", c.gpu_status);
  }
  for (const GpuInfo& gpu : c.gpus) {
    out += fmt::format("GPU {}: {}, {:.1f} GB\n", gpu.index, gpu.name, gpu.memory_bytes / 1e9);
  }
  return out;
}

}  // namespace backend
