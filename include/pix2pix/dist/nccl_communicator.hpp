// The GPU backend of Communicator: NCCL on CUDA tensors. Bootstrapped over MPI (rank 0's
// ncclUniqueId is broadcast with MPI_Bcast), one communicator per process on its local GPU.
// Collectives run on the communicator's own stream, ordered after the compute (default) stream
// with events, and the host does not wait for them: a CollectiveWatchdog thread polls their
// completion events and NCCL's asynchronous errors, so a stalled collective still ends the job
// after --collective-timeout with a report instead of a hang. Host tensors (flags, sums,
// decisions) go through MPI instead, so that they never wait for the GPU
// (See Note [host tensors over MPI]).
// Compiled only when CUDA and NCCL are found (PIX2PIX_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "pix2pix/dist/communicator.hpp"

struct CUevent_st;  // cudaEvent_t's type, kept out of this header with the rest of CUDA

namespace pix2pix::dist {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over MPI_COMM_WORLD: every rank must construct it together.
  NcclCommunicator(int device_index, double timeout_seconds);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override;
  void allreduce_sum(torch::Tensor& tensor) override;
  void allreduce_max(torch::Tensor& tensor) override;
  void allreduce_mean(torch::Tensor& tensor) override;  // ncclAvg
  // On NCCL's stream; the compute stream waits for it only in wait() (See Note [overlap on the GPU]).
  std::unique_ptr<PendingCollective> start_allreduce_mean(torch::Tensor& tensor) override;
  void broadcast(torch::Tensor& tensor, int root) override;
  void barrier() override;
  // Device tensors never touch MPI here (host ones do: See Note [host tensors over MPI]).
  bool device_collectives_from_any_thread() const override { return true; }
  bool queues_on_device() const override { return true; }
  void watch_replay(const char* what) override;

 private:
  struct State;  // NCCL and CUDA handles, kept out of this header
  enum class Op { sum, max, avg, broadcast };
  void run(torch::Tensor& tensor, Op op, int root, const char* what);
  // Queues the collective on NCCL's stream after the compute stream's work so far. `ready`
  // (a CUDA event, or null): recorded after it, for a started collective's wait(); null: the
  // compute stream waits for it at once.
  void enqueue(torch::Tensor& tensor, Op op, int root, const char* what, ::CUevent_st* ready);
  // Hands `done` (recorded after a collective of `bytes`) to the watchdog (See Note [no host wait]).
  void watch(const char* what, std::int64_t bytes, ::CUevent_st* done);

  std::unique_ptr<State> state_;
  int rank_ = 0, world_ = 1;
  double timeout_seconds_;
  std::int64_t sequence_ = 0;
};

// Whether this build has the NCCL backend (false: NcclCommunicator is not compiled in).
bool nccl_compiled();

// The ncclDataType_t (as an int) that carries tensors of `type`; Error for types NCCL cannot
// reduce, and in builds without NCCL.
int nccl_data_type(torch::ScalarType type);

}  // namespace pix2pix::dist
