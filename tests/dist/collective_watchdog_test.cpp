// The watchdog that lets NCCL collectives run without the host waiting for each: completions are
// retired in order, a failure or a stall is reported once with the collective's number and name,
// and wait_all() returns when everything is done or something failed. Polls are fakes here; on
// a GPU they are cudaEventQuery and ncclCommGetAsyncError.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "pix2pix/dist/collective_watchdog.hpp"

using namespace pix2pix;
using Status = dist::CollectiveWatchdog::Status;

TEST(CollectiveWatchdog, RetiresCompletedCollectivesInOrderWithoutBlockingTheCaller) {
  std::atomic<int> finished{0}, released{0};
  std::vector<std::string> failures;
  dist::CollectiveWatchdog watchdog(0, 10.0, [&](const std::string& r) { failures.push_back(r); });
  for (int i = 0; i < 5; ++i)
    watchdog.watch(
        i + 1, "allreduce_sum", 64,
        [&finished, i] {
          return Status{finished.load() > i, ""};
        },
        [&released] { ++released; });
  // Nothing has finished: watch() returned at once and all five are pending.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(watchdog.pending(), 5u);
  finished = 2;
  for (int i = 0; i < 200 && watchdog.pending() != 3u; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(watchdog.pending(), 3u);
  EXPECT_EQ(released.load(), 2);
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    finished = 5;
  });
  watchdog.wait_all();
  finisher.join();
  EXPECT_EQ(watchdog.pending(), 0u);
  EXPECT_EQ(released.load(), 5);
  EXPECT_TRUE(failures.empty());
}

TEST(CollectiveWatchdog, AnAsynchronousErrorIsReportedOnceNamingTheCollective) {
  std::atomic<bool> broken{false};
  std::vector<std::string> failures;
  std::mutex m;
  dist::CollectiveWatchdog watchdog(3, 10.0, [&](const std::string& r) {
    std::lock_guard<std::mutex> lock(m);
    failures.push_back(r);
  });
  watchdog.watch(7, "broadcast", 1024, [&] { return Status{false, broken ? "remote process exited" : ""}; });
  watchdog.watch(8, "allreduce_sum", 16, [] { return Status{false, ""}; });
  broken = true;
  watchdog.wait_all();  // returns on the failure
  EXPECT_TRUE(watchdog.failed());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::lock_guard<std::mutex> lock(m);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("rank 3: collective #7 (broadcast, 1024 bytes) remote process exited"), std::string::npos)
      << failures[0];
  EXPECT_NE(failures[0].find("2 collective(s) pending"), std::string::npos) << failures[0];
}

TEST(CollectiveWatchdog, AStalledCollectiveIsReportedAfterTheTimeout) {
  std::vector<std::string> failures;
  dist::CollectiveWatchdog watchdog(1, 0.2, [&](const std::string& r) { failures.push_back(r); });
  const auto start = std::chrono::steady_clock::now();
  watchdog.watch(42, "allreduce_max", 8, [] { return Status{false, ""}; });
  watchdog.wait_all();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 5.0);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("collective #42 (allreduce_max, 8 bytes) did not complete within --collective-timeout"),
            std::string::npos)
      << failures[0];
}
