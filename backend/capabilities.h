// What this dtsim build can execute for real: the MPI and BLAS libraries it links, and —
// when built with CUDA and NCCL — the NCCL version and the GPUs visible now. `dtsim info`
// prints it; the real-execution backend consults it before it starts.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace backend {

struct GpuInfo {
  int index = 0;
  std::string name;
  double memory_bytes = 0;
};

struct Capabilities {
  std::string mpi_library;   // MPI_Get_library_version, first line
  std::string blas_library;  // openblas_get_config
  bool built_with_cuda = false;
  std::string cuda_runtime;  // e.g. "13.0"; empty without CUDA
  std::string nccl;          // e.g. "2.28.3"; empty without NCCL
  std::string cublas;        // e.g. "13.0.2", or why it cannot be loaded (it is loaded at run time)
  std::string driver;        // e.g. "580.95.05 (CUDA 13.0)"; empty without a driver
  // Where each library was loaded from, as the dynamic loader found it: (name, path), e.g.
  // ("NCCL", "/…/site-packages/nvidia/nccl/lib/libnccl.so.2").
  std::vector<std::pair<std::string, std::string>> library_paths;
  std::vector<GpuInfo> gpus;
  std::string gpu_status;    // why no GPU is usable, when none is
};

Capabilities probe_capabilities();
std::string describe(const Capabilities& capabilities);

}  // namespace backend
