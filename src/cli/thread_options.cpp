#include "pix2pix/cli/thread_options.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::cli {

OptionGroup thread_options(long& threads) {
  OptionGroup g("Threads");
  g.count("threads", threads, 0, 1 << 20,
          "intra-op threads per rank (0: auto, from OMP_NUM_THREADS, SLURM_CPUS_PER_TASK or the cores this rank "
          "may use, shared with the other ranks of its node)")
      .how_the_job_runs()
      .rank_local();
  return g;
}

ThreadBudget settle_threads(long threads, const dist::MpiSession* mpi) {
  const CoreShare share = mpi != nullptr ? mpi->core_share() : CoreShare{usable_cores(), 1};
  const ThreadBudget wanted = decide_thread_budget(thread_request_from_environment(threads), share);
  const ThreadBudget budget = apply_thread_budget(wanted);
  const bool speaks = mpi == nullptr || mpi->local_rank() == 0;
  if (speaks && !budget.warning.empty()) std::fprintf(stderr, "%s\n", budget.warning.c_str());
  if (mpi != nullptr) {
    const int ranks = mpi->local_size(), cores = mpi->node_cores();
    const int node_threads = mpi->sum_over_node(budget.intra_op);
    // More threads than cores; beyond one thread per rank only, since fewer threads cannot help
    // ranks that outnumber the cores (that is the warning below).
    if (speaks && node_threads > std::max(cores, ranks))
      std::fprintf(stderr,
                   "warning: the %d ranks on %s run %d intra-op threads on %d core%s: the node is oversubscribed "
                   "(at most --threads %d per rank, or unset OMP_NUM_THREADS to let each rank take its share)\n",
                   ranks, mpi->host().c_str(), node_threads, cores, cores == 1 ? "" : "s", std::max(1, cores / ranks));
    // See Note [waiting ranks that spin].
    if (speaks && ranks > cores && !mpi->yields_when_idle().value_or(true))
      std::fprintf(stderr,
                   "warning: the %d ranks on %s share %d core%s, and their waits spin (Open MPI's mpi_yield_when_idle "
                   "is off: it was not told that the node is oversubscribed), taking cores from the ranks with work; "
                   "export OMPI_MCA_mpi_yield_when_idle=1 before mpirun or srun, or give the node's true core count\n",
                   ranks, mpi->host().c_str(), cores, cores == 1 ? "" : "s");
  }
  return budget;
}

bool settles_threads(const std::string& command) {
  static const std::set<std::string> kSettling = {"train", "train-classifier", "bench", "evaluate", "translate"};
  return kSettling.count(command) != 0;
}

}  // namespace pix2pix::cli
