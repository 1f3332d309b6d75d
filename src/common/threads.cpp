// Note [one thread budget per rank]
// On CPU a rank computes with LibTorch's intra-op threads (OpenMP), and LibTorch calls the BLAS
// from inside them. Debian's OpenBLAS (the pthread build) keeps a thread pool of its own that
// knows nothing of OpenMP's, sized when the library is loaded from OPENBLAS_NUM_THREADS, else
// OMP_NUM_THREADS, else every core. So a user who set only OMP_NUM_THREADS=2 on 2 cores ran 2
// LibTorch threads and 2 BLAS threads, busy-waiting against each other: 19 images/s where
// adding OPENBLAS_NUM_THREADS=1 gave 61 (docs/performance.md, "One thread budget per rank"). The BLAS
// therefore gets one thread unless OPENBLAS_NUM_THREADS itself says otherwise, set through
// openblas_set_num_threads (looked up with dlsym: Debian selects the BLAS through
// update-alternatives and it may not be OpenBLAS), because its own variable was read before
// main() ran.
//
// The intra-op count comes from the first of --threads, OMP_NUM_THREADS, SLURM_CPUS_PER_TASK and
// the cores this rank may use: its affinity mask divided among the ranks of the node whose masks
// overlap it. mpirun binds 2 ranks to a core each (mask 1: 1 thread); with --bind-to none every
// rank sees every core and the division keeps ranks x threads within them; one process alone
// gets all its cores. No count exceeds the mask: libgomp segfaulted creating 100,000 threads,
// and 1,000 made an epoch 60x slower.
#include "pix2pix/common/threads.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <torch/torch.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <thread>

namespace pix2pix {
namespace {

// A thread count as given: 0 when it is not a positive whole number.
long parse_count(const char* text) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && errno == 0 && value > 0 ? value : 0;
}

void note(std::string& warning, const std::string& line) {
  warning += (warning.empty() ? "" : "\n") + line;
}

using SetThreads = void (*)(int);
using GetThreads = int (*)();

}  // namespace

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string ThreadBudget::describe() const {
  std::string text = std::to_string(intra_op) + " per rank: intra-op " + std::to_string(intra_op) + ", BLAS ";
  text += blas > 0 ? std::to_string(blas) : std::string("(not OpenBLAS: its own setting)");
  return text + " (" + source + ")";
}

ThreadBudget decide_thread_budget(const ThreadRequest& request, const CoreShare& share) {
  ThreadBudget budget;
  const int cores = std::max(1, share.mask_cores);
  // A count that is set: its value lowered to the cores, or 0 when unusable; with a warning.
  const auto usable = [&](const std::string& name, const std::string& text, long value) -> int {
    if (value == 0) {
      note(budget.warning, "warning: " + name + "=" + text + " is not a positive whole number: ignored");
      return 0;
    }
    if (value > cores) {
      note(budget.warning, "warning: " + name + "=" + text + " is more than the " + std::to_string(cores) +
                               " cores this process may use: using " + std::to_string(cores));
      return cores;
    }
    return static_cast<int>(value);
  };
  int chosen = 0;
  if (request.threads_option > 0) {
    chosen = usable("--threads", std::to_string(request.threads_option), request.threads_option);
    budget.source = "from --threads " + std::to_string(request.threads_option);
  }
  if (chosen == 0 && request.omp_num_threads != nullptr) {
    chosen = usable("OMP_NUM_THREADS", request.omp_num_threads, parse_count(request.omp_num_threads));
    budget.source = std::string("from OMP_NUM_THREADS=") + request.omp_num_threads;
  }
  if (chosen == 0 && request.slurm_cpus_per_task != nullptr) {
    chosen = usable("SLURM_CPUS_PER_TASK", request.slurm_cpus_per_task, parse_count(request.slurm_cpus_per_task));
    budget.source = std::string("from SLURM_CPUS_PER_TASK=") + request.slurm_cpus_per_task;
  }
  if (chosen == 0) {
    const int ranks = std::max(1, share.ranks_sharing);
    chosen = std::max(1, cores / ranks);
    budget.source = "auto: " + std::to_string(cores) + (cores == 1 ? " core" : " cores") +
                    " in this rank's affinity mask" +
                    (ranks > 1 ? ", shared by " + std::to_string(ranks) + " ranks of this node" : "");
  }
  budget.intra_op = chosen;
  budget.blas = 1;
  if (request.openblas_num_threads != nullptr) {
    const int blas =
        usable("OPENBLAS_NUM_THREADS", request.openblas_num_threads, parse_count(request.openblas_num_threads));
    if (blas > 0) budget.blas = blas;
    if (budget.blas > 1 && budget.intra_op > 1)
      note(budget.warning,
           "warning: OPENBLAS_NUM_THREADS=" + std::string(request.openblas_num_threads) + " beside " +
               std::to_string(budget.intra_op) + " intra-op threads: BLAS threads add to LibTorch's (up to " +
               std::to_string(budget.blas * budget.intra_op) + " per rank); unset it to let the trainer keep one");
  }
  return budget;
}

ThreadBudget apply_thread_budget(const ThreadBudget& budget) {
  ThreadBudget applied = budget;
  // OpenMP would read OMP_NUM_THREADS itself at the first parallel region: what we decided wins.
  torch::set_num_threads(budget.intra_op);
  applied.intra_op = torch::get_num_threads();
  auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get_blas = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set_blas != nullptr) set_blas(budget.blas);
  applied.blas = get_blas != nullptr ? get_blas() : 0;
  return applied;
}

ThreadRequest thread_request_from_environment(long threads_option) {
  ThreadRequest request;
  request.threads_option = threads_option;
  request.omp_num_threads = std::getenv("OMP_NUM_THREADS");
  request.openblas_num_threads = std::getenv("OPENBLAS_NUM_THREADS");
  request.slurm_cpus_per_task = std::getenv("SLURM_CPUS_PER_TASK");
  return request;
}

}  // namespace pix2pix
