// RAII MPI session: MPI_Init_thread on construction, MPI_Finalize on every exit path; knows the
// world, this rank, its node-local rank and the host names. One per process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pix2pix/common/threads.hpp"

namespace pix2pix::dist {

class MpiSession {
 public:
  // Initialises MPI (MPI_THREAD_FUNNELED: only the main thread calls MPI) and sets errors to
  // return codes so that MPI_CHECK can report them.
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int node_count() const { return node_count_; }
  const std::string& host() const { return host_; }
  const std::vector<std::string>& hosts() const { return hosts_; }  // host of every rank
  // This rank's affinity mask and the ranks of its node that share its cores
  // (See Note [one thread budget per rank]), and the cores of all the node's ranks' masks together.
  const CoreShare& core_share() const { return core_share_; }
  int node_cores() const { return node_cores_; }
  // Whether this rank's MPI yields its core while it waits (Open MPI's mpi_yield_when_idle); unset
  // where the library has no such variable. See Note [waiting ranks that spin].
  std::optional<bool> yields_when_idle() const { return yields_when_idle_; }
  // The sum of `mine` over the ranks of this node (a collective: all ranks call it).
  int sum_over_node(int mine) const;

  // Ends the whole job with `message` on stderr: for an error that only some ranks see, so that
  // no rank is left waiting in a collective.
  [[noreturn]] static void abort_job(const std::string& message, int exit_code = 1);
  static bool initialised();
  // Every rank's `mine`, in rank order, on every rank (a collective: all ranks call it).
  std::vector<std::string> allgather(const std::string& mine) const;
  // Logical OR of `flag` over all ranks (for tests and agreement on errors).
  bool any(bool flag) const;
  void barrier() const;

 private:
  int rank_ = 0, world_ = 1, local_rank_ = 0, local_size_ = 1, node_count_ = 1;
  std::string host_;
  std::vector<std::string> hosts_;
  CoreShare core_share_;
  int node_cores_ = 1;
  std::optional<bool> yields_when_idle_;
};

// The MPI library's own version line (MPI_Get_library_version), first line only.
std::string mpi_library_version();

}  // namespace pix2pix::dist
