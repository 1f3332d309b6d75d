// CUDA_CHECK: every CUDA runtime return code goes through here; a failure throws pix2pix::Error
// naming the call, file, line, rank and cudaGetErrorString. Include only in dist/ GPU sources.
#pragma once

#include <cuda_runtime.h>

#include "pix2pix/common/error.hpp"

#define CUDA_CHECK(call)                                                                                             \
  do {                                                                                                               \
    const cudaError_t cuda_check_code_ = (call);                                                                     \
    if (cuda_check_code_ != cudaSuccess)                                                                             \
      throw ::pix2pix::Error(                                                                                        \
          ::pix2pix::describe_failed_call("CUDA", #call, __FILE__, __LINE__, cudaGetErrorString(cuda_check_code_))); \
  } while (0)
