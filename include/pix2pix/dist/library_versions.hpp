// Which LibTorch, CUDA runtime, cuDNN and NCCL this process actually runs with, for --version and
// the start-up table: a cluster's module system or a pip wheel can load other libraries than the
// headers the binary was compiled against, and a scaling study must say which ones it measured.
#pragma once

#include <string>

namespace pix2pix::dist {

// Version codes as the libraries encode them, written as people do (pure; tested without a GPU).
std::string cuda_version_string(int code);    // cudaRuntimeGetVersion / CUDART_VERSION: 12040 -> "12.4"
std::string nccl_version_string(int code);    // ncclGetVersion: 22809 -> "2.28.9" (2.8.4 and older: 2804)
std::string cudnn_version_string(long code);  // cudnnGetVersion: 90100 -> "9.1.0" (8.x: 8907 -> "8.9.7")

// "2.6.0, built for CUDA 12.4, cuDNN 9.1.0" or "1.13.0, CPU only": the LibTorch headers' version
// and, from its CUDA hooks, the CUDA it was built for and the cuDNN it loaded.
std::string libtorch_summary();

// "compiled for CUDA runtime 13.0 and NCCL 2.28.9; loaded CUDA runtime 13.0, NCCL 2.28.9, driver
// 12.8" (driver "none" on a machine without one), or "not compiled in".
std::string cuda_nccl_summary();

}  // namespace pix2pix::dist
