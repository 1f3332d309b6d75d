// `--collective-log`: wraps the job's communicator and records every collective in a per-rank
// file, one line when it begins and one when it ends, flushed as written. After a hang, a
// timeout or a killed rank, the last `begin` without its `end` in each rank's file says which
// rank stopped at which collective (the sequence numbers match across ranks, since every rank
// calls the same collectives in the same order).
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::dist {

class RecordingCommunicator final : public Communicator {
 public:
  // Creates `path` (and its folder); lines are `begin|end <TAB> seq <TAB> name <TAB> bytes <TAB> seconds`.
  RecordingCommunicator(std::unique_ptr<Communicator> inner, const std::string& path);
  ~RecordingCommunicator() override;
  RecordingCommunicator(const RecordingCommunicator&) = delete;
  RecordingCommunicator& operator=(const RecordingCommunicator&) = delete;

  int rank() const override { return inner_->rank(); }
  int world() const override { return inner_->world(); }
  std::string name() const override { return inner_->name(); }
  void allreduce_sum(torch::Tensor& tensor) override;
  void allreduce_max(torch::Tensor& tensor) override;
  void allreduce_mean(torch::Tensor& tensor) override;
  void broadcast(torch::Tensor& tensor, int root) override;
  void barrier() override;
  // `begin` when it starts, `end` when it has been waited for.
  std::unique_ptr<PendingCollective> start_allreduce_mean(torch::Tensor& tensor) override;
  bool starts_from_any_thread() const override { return inner_->starts_from_any_thread(); }
  bool device_collectives_from_any_thread() const override { return inner_->device_collectives_from_any_thread(); }
  bool queues_on_device() const override { return inner_->queues_on_device(); }
  void watch_replay(const char* what) override { inner_->watch_replay(what); }

 private:
  class PendingRecord;
  void record(const char* name, std::int64_t bytes, const std::function<void()>& run);
  void write(const char* event, std::int64_t seq, const char* name, std::int64_t bytes);

  std::unique_ptr<Communicator> inner_;
  std::FILE* file_ = nullptr;
  std::int64_t sequence_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace pix2pix::dist
