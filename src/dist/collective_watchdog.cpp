#include "pix2pix/dist/collective_watchdog.hpp"

#include <cstdio>

#include "pix2pix/common/stopwatch.hpp"

namespace pix2pix::dist {

CollectiveWatchdog::CollectiveWatchdog(int rank, double timeout_seconds, OnFailure on_failure,
                                       std::function<void()> thread_setup)
    : rank_(rank), timeout_seconds_(timeout_seconds), on_failure_(std::move(on_failure)) {
  thread_ = std::thread([this, setup = std::move(thread_setup)]() mutable { loop(std::move(setup)); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::watch(std::int64_t sequence, std::string what, std::int64_t bytes, Poll poll,
                               std::function<void()> release) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(
        {sequence, std::move(what), bytes, std::move(poll), std::move(release), std::chrono::steady_clock::now()});
  }
  changed_.notify_all();
}

void CollectiveWatchdog::wait_all() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() || failed_; });
}

std::size_t CollectiveWatchdog::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

bool CollectiveWatchdog::failed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

void CollectiveWatchdog::loop(std::function<void()> thread_setup) {
  if (thread_setup) thread_setup();
  std::int64_t idle_polls = 0;
  for (;;) {
    Entry* front = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stop_ || (!queue_.empty() && !failed_); });
      if (stop_) return;
      front = &queue_.front();  // stable: only this thread pops, push_back keeps front's address
    }
    const Status status = front->poll();
    if (status.done) {
      if (front->release) front->release();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.pop_front();
      }
      changed_.notify_all();
      idle_polls = 0;
      continue;
    }
    const double waited = seconds_since(front->since);
    if (!status.error.empty() || waited > timeout_seconds_) {
      char report[512];
      std::snprintf(
          report, sizeof(report),
          "rank %d: collective #%lld (%s, %lld bytes) %s after %.1f s; %zu collective(s) pending on this rank", rank_,
          static_cast<long long>(front->sequence), front->what.c_str(), static_cast<long long>(front->bytes),
          status.error.empty() ? "did not complete within --collective-timeout" : status.error.c_str(), waited,
          pending());
      on_failure_(report);  // ends the process in the trainer; in tests it returns
      {
        std::lock_guard<std::mutex> lock(mutex_);
        failed_ = true;
      }
      changed_.notify_all();
      continue;  // nothing more is watched: wait for stop
    }
    // Spin briefly (a collective often finishes within microseconds), then back off.
    if (++idle_polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace pix2pix::dist
