// A Communicator whose ranks are threads of one process (Gloo's test pattern): fast tests of
// multi-rank logic (averaging, broadcast, agreement) in addition to the real mpirun runs.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::fixtures {

class ThreadGroup {
 public:
  explicit ThreadGroup(int world) : world_(world), slots_(static_cast<size_t>(world)) {}
  int world() const { return world_; }
  // Every rank contributes `mine`; the last to arrive combines all contributions with `combine`;
  // every rank returns the combined tensor.
  torch::Tensor exchange(int rank, const torch::Tensor& mine,
                         const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& combine);

 private:
  int world_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<torch::Tensor> slots_;
  torch::Tensor result_;
  int arrived_ = 0, departed_ = 0;
  long generation_ = 0;
};

class ThreadCommunicator final : public dist::Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return group_->world(); }
  std::string name() const override { return "threads"; }
  void allreduce_sum(torch::Tensor& tensor) override;
  void allreduce_max(torch::Tensor& tensor) override;
  void broadcast(torch::Tensor& tensor, int root) override;
  void barrier() override;

 private:
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

// Runs `body(comm)` on `world` threads, one ThreadCommunicator each; rethrows the first failure.
void run_ranks(int world, const std::function<void(ThreadCommunicator&)>& body);

}  // namespace pix2pix::fixtures
