// OpenBLAS reads OPENBLAS_NUM_THREADS when it is loaded, before main(), so setting the variable
// here would be too late; its runtime setter is looked up with dlsym because Debian selects the
// BLAS through update-alternatives and it may not be OpenBLAS at all.
#include "pix2pix/common/threads.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>

namespace pix2pix {
namespace {

// What a thread-count variable asks for.
struct Requested {
  bool set = false;
  long value = 0;  // 0: not a positive whole number
};

Requested read_count(const char* text) {
  Requested r;
  if (text == nullptr) return r;
  r.set = true;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (end != text && *end == '\0' && errno == 0 && value > 0) r.value = value;
  return r;
}

void note(std::string& warning, const std::string& line) {
  warning += (warning.empty() ? "" : "\n") + line;
}

}  // namespace

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadDefaults apply_thread_defaults(const char* omp_num_threads, const char* openblas_num_threads) {
  ThreadDefaults result;
  const int cores = usable_cores();
  const Requested omp = read_count(omp_num_threads), blas = read_count(openblas_num_threads);
  // The count to use for a variable that is set: its value, or 1 when unusable, lowered to cores.
  const auto usable = [&](const Requested& r, const char* name, const char* text) -> int {
    if (r.value == 0) {
      note(result.warning,
           std::string("warning: ") + name + "=" + text + " is not a positive whole number: ignored (1 thread)");
      return 1;
    }
    if (r.value > cores) {
      note(result.warning, std::string("warning: ") + name + "=" + text + " is more than the " + std::to_string(cores) +
                               " cores this process may use: using " + std::to_string(cores));
      return cores;
    }
    return static_cast<int>(r.value);
  };
  const int torch_threads = omp.set ? usable(omp, "OMP_NUM_THREADS", omp_num_threads) : 1;
  // OpenMP would read the variable itself at the first parallel region: what we decided wins.
  torch::set_num_threads(torch_threads);
  using SetThreads = void (*)(int);
  using GetThreads = int (*)();
  auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get_blas = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set_blas != nullptr) {
    // OpenBLAS took OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, when it was loaded.
    if (blas.set) {
      const int blas_threads = usable(blas, "OPENBLAS_NUM_THREADS", openblas_num_threads);
      if (blas.value == 0 || blas.value > cores) set_blas(blas_threads);
    } else if (!omp.set || omp.value == 0 || omp.value > cores) {
      set_blas(torch_threads);
    }
  }
  result.torch_threads = torch::get_num_threads();
  result.openblas_threads = get_blas != nullptr ? get_blas() : 0;
  return result;
}

}  // namespace pix2pix
