// cuBLAS, loaded the first time a GPU run or calibration needs it (dlopen). Linked, its
// libraries (libcublas and libcublasLt, over 500 MB) would be mapped and relocated by every
// dtsim command — half a second and 200 MB of memory for `dtsim presets` — GPU or not.
// The function types come from cuBLAS's own header (one spelled out, checked against it in
// cublas_library.cpp), so the calls are checked as if linked.
#pragma once

#include <cublas_v2.h>

namespace backend::gpu {

// cublasGemmStridedBatchedEx is overloaded in C++ (a cudaDataType-compatible inline wrapper):
// this is the exported C function's type.
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                const void*, const void*, cudaDataType, int, long long, const void*,
                                                cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                                long long, int, cublasComputeType_t, cublasGemmAlgo_t);

struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  GemmStridedBatchedEx gemm_strided_batched = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasGetProperty) get_property = nullptr;
};

// The loaded library (libcublas.so.<the major version built against>). Throws
// std::runtime_error naming the library and the loader's reason when it cannot be loaded.
const Cublas& cublas();

// A cuBLAS handle bound to `stream`; throws std::runtime_error when cuBLAS cannot create one
// or bind it.
cublasHandle_t blas_handle(cudaStream_t stream);

}  // namespace backend::gpu
