// CUDA/NCCL/cuBLAS probe. Without a driver, cudaGetDeviceCount fails ("driver version is
// insufficient"): that is reported as "no GPU", never as a crash. Each library's path is where
// the dynamic loader found it (dladdr on one of its functions), so that a machine with several
// NCCLs or CUDA runtimes (a toolkit and Python wheels) shows which one dtsim runs.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <nccl.h>

#include <fstream>
#include <stdexcept>

#include "backend/gpu/cublas_library.h"
#include "backend/gpu/gpu_probe.h"
#include "backend/gpu_rules.h"

namespace backend {
namespace {

// The file that holds `address` (a function of a loaded library, or of dtsim when linked in).
std::string file_of(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "unknown";
  return info.dli_fname;
}

// The driver library (libcuda.so.1), loaded by the runtime once it has looked for GPUs.
std::string driver_library() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return "not loaded";
  link_map* map = nullptr;
  std::string path = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr ? map->l_name : "unknown";
  dlclose(handle);
  return path;
}

// The kernel module's version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05 …").
std::string kernel_module_version() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string word, previous;
  while (file >> word) {
    if (previous == "Module") return word;
    previous = word;
  }
  return "";
}

}  // namespace

void probe_gpus(Capabilities& capabilities) {
  capabilities.built_with_cuda = true;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
    capabilities.cuda_runtime = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);
  }
  const std::string runtime_file = file_of(reinterpret_cast<const void*>(&cudaRuntimeGetVersion));
  capabilities.library_paths.emplace_back(
      "CUDA runtime",
      runtime_file == file_of(reinterpret_cast<const void*>(&probe_gpus)) ? "linked into dtsim (static)" : runtime_file);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    capabilities.nccl = gpu_rules::nccl_version_text(nccl);
  }
  capabilities.library_paths.emplace_back("NCCL", file_of(reinterpret_cast<const void*>(&ncclGetVersion)));
  try {
    const gpu::Cublas& cublas = gpu::cublas();
    int version[3] = {0, 0, 0};
    for (int part = 0; part < 3; ++part) cublas.get_property(static_cast<libraryPropertyType>(part), &version[part]);
    capabilities.cublas = fmt::format("{}.{}.{}", version[0], version[1], version[2]);
    capabilities.library_paths.emplace_back("cuBLAS", file_of(reinterpret_cast<const void*>(cublas.get_property)));
  } catch (const std::runtime_error& error) {
    capabilities.cublas = error.what();
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    const std::string module = kernel_module_version();
    capabilities.driver = fmt::format("{}(CUDA {}.{})", module.empty() ? "" : module + " ", driver / 1000, (driver % 1000) / 10);
    capabilities.library_paths.emplace_back("driver", driver_library());
  }
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
