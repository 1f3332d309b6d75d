// One compute thread per process unless the user says otherwise: on CPU, parallelism comes from
// ranks (one per core), and N ranks each spawning N BLAS/OpenMP threads oversubscribe the node.
#pragma once

namespace pix2pix {

struct ThreadDefaults {
  int torch_threads = 0;     // what torch::get_num_threads() reports afterwards
  int openblas_threads = 0;  // what openblas_get_num_threads() reports afterwards, 0 without OpenBLAS
};

// Sets LibTorch's intra-op threads to 1 unless OMP_NUM_THREADS is set, and OpenBLAS's to 1
// unless OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) is set. The environment variables are
// passed in so that the rule can be tested; main() passes getenv's answers.
ThreadDefaults apply_thread_defaults(const char* omp_num_threads, const char* openblas_num_threads);

}  // namespace pix2pix
