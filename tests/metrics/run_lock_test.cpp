// One job per run directory (See Note [one job per run directory]): the lock refuses a second holder
// with its identity, goes with its holder however that ends, and is no entry of a run.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/run_claim.hpp"
#include "pix2pix/metrics/run_lock.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using fixtures::contains;
using fixtures::error_of;
using fixtures::TempDir;

TEST(RunLock, ASecondHolderIsRefusedWithTheFirstOnesIdentity) {
  TempDir dir;
  const std::string run = dir / "a/run";  // created by the lock
  auto first = std::make_unique<metrics::RunLock>(run);
  EXPECT_TRUE(first->held());
  const std::string refused = error_of([&] { metrics::RunLock second(run); });
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_TRUE(contains(refused, "--run-dir " + run + " is in use by another job (host " + std::string(host) + ", PID " +
                                    std::to_string(::getpid()) + ", started "))
      << refused;
  EXPECT_TRUE(contains(refused, "command ")) << refused;
  // Reading the holder's record opens and closes the file: that must not drop the lock.
  EXPECT_FALSE(metrics::run_lock_holder(run).empty());
  EXPECT_TRUE(contains(error_of([&] { metrics::RunLock third(run); }), "is in use by another job")) << "lost on close";
  first.reset();
  EXPECT_EQ(error_of([&] { metrics::RunLock again(run); }), "(no error)");
}

TEST(RunLock, AHolderKilledByTheKernelLeavesNoStaleLock) {
  TempDir dir;
  const std::string run = dir / "run";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    metrics::RunLock lock(run);
    const char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  const std::string refused = error_of([&] { metrics::RunLock mine(run); });
  EXPECT_TRUE(contains(refused, "PID " + std::to_string(child))) << refused;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(error_of([&] { metrics::RunLock mine(run); }), "(no error)") << "a killed holder's lock must go with it";
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(RunLock, TheLockFileIsNoEntryOfARunAndOverwriteKeepsIt) {
  TempDir dir;
  const std::string run = dir / "run";
  { metrics::RunLock lock(run); }
  EXPECT_TRUE(metrics::claim_for_new_run(run, false, {}).removed.empty()) << "only the lock: an empty run directory";
  std::ofstream(run + "/metrics.csv") << "epoch\n";
  EXPECT_TRUE(contains(error_of([&] { metrics::claim_for_new_run(run, false, {}); }), "is not empty (metrics.csv)"));
  const auto claim = metrics::claim_for_new_run(run, true, {});
  EXPECT_EQ(claim.removed, std::vector<std::string>{"metrics.csv"});
  EXPECT_TRUE(std::filesystem::exists(run + "/" + metrics::RunLock::kFileName));
}

TEST(RunLock, AFolderThatCannotBeCreatedIsNamed) {
  TempDir dir;
  std::ofstream(dir / "file") << "x";
  const std::string refused = error_of([&] { metrics::RunLock lock(dir / "file/run"); });
  EXPECT_TRUE(contains(refused, "--run-dir " + (dir / "file/run") + ": cannot create")) << refused;
}
