// The CPU backend of Communicator: MPI collectives on host tensors, non-blocking and polled so
// that a collective that never completes (a dead or stuck rank) ends the job after
// --collective-timeout with a report of which collective stalled on which rank, instead of
// hanging until the batch system's time limit. CUDA tensors are staged through host memory.
// bf16 tensors are summed as bf16 (2 bytes an element on the wire, with a user-defined MPI_Op,
// since MPI has no bf16 type: See Note [bf16 gradients on the wire]); fp16 ones in fp32.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::dist {

class MpiCommunicator final : public Communicator {
 public:
  // Duplicates MPI_COMM_WORLD (our traffic never mixes with anyone else's).
  explicit MpiCommunicator(double timeout_seconds);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "mpi"; }
  void allreduce_sum(torch::Tensor& tensor) override;
  void allreduce_max(torch::Tensor& tensor) override;
  void broadcast(torch::Tensor& tensor, int root) override;
  void barrier() override;
  // MPI_Iallreduce, waited for (polled, with the timeout) in PendingCollective::wait().
  std::unique_ptr<PendingCollective> start_allreduce_mean(torch::Tensor& tensor) override;

  std::int64_t collectives_started() const { return sequence_; }

 private:
  class PendingAllreduce;
  // MPI_Iallreduce in place on a staged copy of `tensor` (or the tensor itself).
  MPI_Request start_allreduce(torch::Tensor& staged, MPI_Op op);
  void allreduce(torch::Tensor& tensor, MPI_Op op, const char* what);
  // Polls `request` until done; past the timeout, reports collective #`sequence` (default: the
  // latest started) and aborts the whole job.
  void wait(MPI_Request& request, const char* what, std::int64_t bytes, std::int64_t sequence = -1);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Op bf16_sum_ = MPI_OP_NULL;
  int rank_ = 0, world_ = 1;
  double timeout_seconds_;
  std::int64_t sequence_ = 0;
};

}  // namespace pix2pix::dist
