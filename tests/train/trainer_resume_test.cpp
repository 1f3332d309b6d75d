// The run loop resumes: a resumed run equals a straight one, a graceful stop mid-epoch resumes to
// the same run, and --resume auto falls back over damaged checkpoints.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/train/trainer.hpp"
#include "support/fixtures.hpp"
#include "support/model_access.hpp"
#include "train/tiny_training.hpp"

using namespace pix2pix;
using namespace pix2pix::train_tests;
namespace fs = std::filesystem;

TEST(Trainer, ResumedRunEqualsAStraightRun) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto straight = tiny_options(dir / "straight");
  train::Trainer a(straight, kCpu, comm);
  a.run();

  auto first = tiny_options(dir / "resumed");
  first.max_epochs = 2;  // stop half-way: the LR schedule depends on --epochs, not on this bound
  {
    train::Trainer b(first, kCpu, comm);
    b.run();
  }
  auto second = tiny_options(dir / "resumed");
  second.resume = "auto";
  train::Trainer c(second, kCpu, comm);
  c.run();

  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).generator()->parameters()),
                        copies(fixtures::pix2pix_model(c).generator()->parameters())));
  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).discriminator()->parameters()),
                        copies(fixtures::pix2pix_model(c).discriminator()->parameters())));
  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).generator()->buffers()),
                        copies(fixtures::pix2pix_model(c).generator()->buffers())));
  const auto x = read_csv(dir / "straight/metrics.csv"), y = read_csv(dir / "resumed/metrics.csv");
  ASSERT_EQ(x.size(), 4u);
  ASSERT_EQ(y.size(), 4u);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t col : {size_t{3}, size_t{4}, kLossL1, kValPsnr, size_t{7}, size_t{8}, kValL1})
      EXPECT_EQ(x[i].fields[col], y[i].fields[col]) << "epoch " << i << " column " << col;
}

// A graceful stop (SIGUSR1 through the real handler) in the middle of epoch 1 writes last.pt at
// that step; resuming finishes with exactly the metrics and weights of an uninterrupted run.
TEST(Trainer, GracefulStopMidEpochResumesToTheSameRun) {
  TempDir dir;
  dist::LocalCommunicator comm;
  install_interrupt_handlers();
  auto straight = tiny_options(dir / "straight");
  train::Trainer a(straight, kCpu, comm);
  a.run();

  auto first = tiny_options(dir / "stopped");
  train::TestFaults signal;
  signal.signal_at_step = 13;  // 9 steps per epoch: step 4 of epoch 1
  signal.rank = 0;
  {
    train::Trainer b(first, kCpu, comm, std::make_shared<train::TestFaults>(signal));
    const auto result = b.run();
    EXPECT_EQ(result.exit_code, train::kExitInterrupted);
    EXPECT_EQ(result.last_epoch, 0);
    EXPECT_NE(result.stop_reason.find("after step 5 of epoch 1"), std::string::npos) << result.stop_reason;
  }
  EXPECT_EQ(interrupt_signal(), SIGUSR1);
  // See Note [a graceful stop ends together]: last.pt is written, so a launcher's SIGTERM now
  // ends the process with the graceful status, not 128+15.
  EXPECT_EXIT(raise(SIGTERM), ::testing::ExitedWithCode(train::kExitInterrupted), "");
  clear_interrupt();
  auto second = tiny_options(dir / "stopped");
  second.resume = "auto";
  train::Trainer c(second, kCpu, comm);
  const auto result = c.run();
  EXPECT_EQ(result.exit_code, 0);

  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).generator()->parameters()),
                        copies(fixtures::pix2pix_model(c).generator()->parameters())));
  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).discriminator()->parameters()),
                        copies(fixtures::pix2pix_model(c).discriminator()->parameters())));
  const auto x = read_csv(dir / "straight/metrics.csv"), y = read_csv(dir / "stopped/metrics.csv");
  ASSERT_EQ(x.size(), 4u);
  ASSERT_EQ(y.size(), 4u);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t col : {size_t{1}, size_t{3}, size_t{4}, kLossL1, kValPsnr, size_t{7}, size_t{8}, kValL1})
      EXPECT_EQ(x[i].fields[col], y[i].fields[col]) << "epoch " << i << " column " << col;
}

// --resume auto skips a damaged newest checkpoint (reported), takes the newest good one, and the
// run still ends where an uninterrupted one does; when every checkpoint is damaged, it says so.
TEST(Trainer, ResumeAutoFallsBackOverDamagedCheckpoints) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto straight = tiny_options(dir / "straight");
  straight.max_epochs = 3;
  train::Trainer a(straight, kCpu, comm);
  a.run();

  auto first = tiny_options(dir / "run");
  first.max_epochs = 2;  // last.pt: epoch 1, last.prev.pt: epoch 0
  {
    train::Trainer b(first, kCpu, comm);
    b.run();
  }
  const std::string last = dir / "run/checkpoints/last.pt";
  {  // damage one byte in the middle of the newest checkpoint
    std::fstream f(last, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(last) / 2));
    const char c = static_cast<char>(f.peek());
    f.seekp(static_cast<std::streamoff>(fs::file_size(last) / 2));
    f.put(static_cast<char>(c ^ 0x01));
  }
  auto again = tiny_options(dir / "run");
  again.max_epochs = 3;
  again.resume = "auto";
  {
    testing::internal::CaptureStderr();
    train::Trainer c(again, kCpu, comm);
    const std::string warnings = testing::internal::GetCapturedStderr();
    EXPECT_NE(warnings.find("last.pt is damaged (checksum mismatch"), std::string::npos) << warnings;
    c.run();
    EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).generator()->parameters()),
                          copies(fixtures::pix2pix_model(c).generator()->parameters())))
        << "resuming from last.prev.pt (epoch 0) and training epochs 1-2 should match the straight run";
  }
  const auto x = read_csv(dir / "straight/metrics.csv"), y = read_csv(dir / "run/metrics.csv");
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(x[2].fields[kValPsnr], y[2].fields[kValPsnr]);

  for (const auto& entry : fs::directory_iterator(dir / "run/checkpoints"))
    if (entry.path().extension() == ".pt") fs::resize_file(entry.path(), 100);
  try {
    train::Trainer d(again, kCpu, comm);
    ADD_FAILURE() << "resumed from a damaged checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("every checkpoint in"), std::string::npos) << e.what();
  }
}
