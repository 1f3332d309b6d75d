// Watches collectives that were enqueued on a device stream and returned at once, so that the
// host does not wait for each one (issue #4: the host never blocks needlessly) and a stalled
// one still ends the job: a background thread polls the oldest pending collective (they finish
// in order on one stream) and calls `on_failure` with a report naming it when its poll says it
// failed (NCCL's asynchronous error) or it is older than the timeout.
// Device-agnostic (polls are callbacks), so its logic is tested on CPU; NcclCommunicator feeds
// it CUDA events and ncclCommGetAsyncError.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace pix2pix::dist {

class CollectiveWatchdog {
 public:
  struct Status {
    bool done = false;
    std::string error;  // not empty: the collective (or its communicator) failed
  };
  using Poll = std::function<Status()>;
  // Called once, on the watchdog thread; in the trainer it aborts the communicator and ends the
  // process (it does not return there; the launcher then ends the job). After it, nothing more
  // is watched and wait_all() returns.
  using OnFailure = std::function<void(const std::string& report)>;

  // `rank` only labels reports; `thread_setup` runs first on the watchdog thread (cudaSetDevice).
  CollectiveWatchdog(int rank, double timeout_seconds, OnFailure on_failure,
                     std::function<void()> thread_setup = nullptr);
  ~CollectiveWatchdog();  // stops polling; what is still pending is abandoned
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // `release` (optional) runs on the watchdog thread once `poll` said done (e.g. recycles an event).
  void watch(std::int64_t sequence, std::string what, std::int64_t bytes, Poll poll,
             std::function<void()> release = nullptr);
  // Blocks until everything watched so far is done, or a failure was reported (then returns).
  void wait_all();
  std::size_t pending();
  bool failed();

 private:
  struct Entry {
    std::int64_t sequence;
    std::string what;
    std::int64_t bytes;
    Poll poll;
    std::function<void()> release;
    std::chrono::steady_clock::time_point since;
  };
  void loop(std::function<void()> thread_setup);

  const int rank_;
  const double timeout_seconds_;
  OnFailure on_failure_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Entry> queue_;
  bool stop_ = false, failed_ = false;
  std::thread thread_;
};

}  // namespace pix2pix::dist
