// OpenBLAS reads OPENBLAS_NUM_THREADS when it is loaded, before main(), so setting the variable
// here would be too late; its runtime setter is looked up with dlsym because Debian selects the
// BLAS through update-alternatives and it may not be OpenBLAS at all.
#include "pix2pix/common/threads.hpp"

#include <dlfcn.h>
#include <torch/torch.h>

namespace pix2pix {

ThreadDefaults apply_thread_defaults(const char* omp_num_threads, const char* openblas_num_threads) {
  if (omp_num_threads == nullptr) torch::set_num_threads(1);
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get_blas = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set_blas != nullptr && openblas_num_threads == nullptr && omp_num_threads == nullptr) set_blas(1);
  ThreadDefaults result;
  result.torch_threads = torch::get_num_threads();
  result.openblas_threads = get_blas != nullptr ? get_blas() : 0;
  return result;
}

}  // namespace pix2pix
