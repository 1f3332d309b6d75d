// One compute thread per process unless the user says otherwise: on CPU, parallelism comes from
// ranks (one per core), and N ranks each spawning N BLAS/OpenMP threads oversubscribe the node.
#pragma once

#include <string>

namespace pix2pix {

struct ThreadDefaults {
  int torch_threads = 0;     // what torch::get_num_threads() reports afterwards
  int openblas_threads = 0;  // what openblas_get_num_threads() reports afterwards, 0 without OpenBLAS
  std::string warning;       // "" or what was not taken as given, and why (main prints it)
};

// Sets LibTorch's intra-op threads to 1 unless OMP_NUM_THREADS is set, and OpenBLAS's to 1
// unless OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) is set. A value that is not a positive whole
// number is ignored, and one above the cores this process may run on (its CPU affinity: what
// Slurm or taskset gave it) is lowered to that count, with a warning either way: libgomp
// segfaulted creating 100,000 threads, and 1,000 made an epoch 60x slower. The environment
// variables are passed in so that the rule can be tested; main() passes getenv's answers.
ThreadDefaults apply_thread_defaults(const char* omp_num_threads, const char* openblas_num_threads);

// The cores this process may run on (sched_getaffinity), at least 1.
int usable_cores();

}  // namespace pix2pix
