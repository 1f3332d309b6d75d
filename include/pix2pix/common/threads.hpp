// The thread budget of a process: how many intra-op (OpenMP) threads LibTorch runs and how many
// threads OpenBLAS may start beside them (See Note [one thread budget per rank]).
#pragma once

#include <string>

namespace pix2pix {

// What the user and the launcher asked for. Environment values are passed in (not read here) so
// that the rule can be tested; thread_request_from_environment() reads them.
struct ThreadRequest {
  long threads_option = 0;  // --threads; 0: not given (auto)
  const char* omp_num_threads = nullptr;
  const char* openblas_num_threads = nullptr;
  const char* slurm_cpus_per_task = nullptr;
};

// The cores this rank may run on, and how many ranks of its node may run on them too.
struct CoreShare {
  int mask_cores = 1;     // cores in this process's affinity mask (what mpirun, srun or taskset gave it)
  int ranks_sharing = 1;  // ranks of this node whose masks overlap it, itself included
};

struct ThreadBudget {
  int intra_op = 1;     // LibTorch's intra-op threads (torch::set_num_threads)
  int blas = 1;         // OpenBLAS's threads (0 after apply_thread_budget: the BLAS is not OpenBLAS)
  std::string source;   // where intra_op came from, for the start-up line
  std::string warning;  // "" or what was not taken as given, and why
  // "2 per rank: intra-op 2, BLAS 1 (from OMP_NUM_THREADS=2)"
  std::string describe() const;
};

// The rule (See Note [one thread budget per rank] for why). Intra-op threads come from the first of --threads,
// OMP_NUM_THREADS, SLURM_CPUS_PER_TASK and "auto" (the cores of this rank's affinity mask divided
// by the ranks of its node that share them, at least 1), and never exceed the mask's cores. BLAS
// threads are 1 unless OPENBLAS_NUM_THREADS says otherwise. The warnings name what was not taken.
ThreadBudget decide_thread_budget(const ThreadRequest& request, const CoreShare& share);

// Sets LibTorch's intra-op threads and OpenBLAS's threads (through openblas_set_num_threads when
// the BLAS in use is OpenBLAS) and returns the budget as the libraries now report it.
ThreadBudget apply_thread_budget(const ThreadBudget& budget);

ThreadRequest thread_request_from_environment(long threads_option);

// The cores this process may run on (sched_getaffinity), at least 1.
int usable_cores();

}  // namespace pix2pix
