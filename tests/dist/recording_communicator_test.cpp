// --collective-log: every collective leaves a begin and an end line with the same sequence
// number on every rank, written before the call returns (so a rank stuck inside one has still
// written its begin), and the wrapped communicator's results are unchanged.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "pix2pix/dist/recording_communicator.hpp"
#include "support/fixtures.hpp"
#include "support/thread_communicator.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;

namespace {
std::vector<std::vector<std::string>> rows_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, '\t');) fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}
}  // namespace

TEST(RecordingCommunicator, LogsEachCollectiveOnEveryRankAndForwardsIt) {
  TempDir dir;
  auto group = std::make_shared<fixtures::ThreadGroup>(2);
  std::vector<std::thread> ranks;
  std::vector<double> sums(2);
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      dist::RecordingCommunicator comm(std::make_unique<fixtures::ThreadCommunicator>(group, r),
                                       dir / ("logs/rank-" + std::to_string(r) + ".tsv"));
      auto t = torch::full({4}, static_cast<float>(r + 1));
      comm.allreduce_sum(t);
      sums[static_cast<size_t>(r)] = t.sum().item<double>();
      comm.broadcast_string(r == 0 ? "from zero" : "", 0);
      comm.barrier();
    });
  for (auto& t : ranks) t.join();
  EXPECT_EQ(sums[0], 12.0);
  EXPECT_EQ(sums[1], 12.0);
  for (int r = 0; r < 2; ++r) {
    const auto rows = rows_of(dir / ("logs/rank-" + std::to_string(r) + ".tsv"));
    // allreduce_sum, broadcast_string's length and text broadcasts, barrier: begin + end each.
    ASSERT_EQ(rows.size(), 8u) << "rank " << r;
    EXPECT_EQ(rows[0], (std::vector<std::string>{"begin", "1", "allreduce_sum", "16", rows[0][4]}));
    EXPECT_EQ(rows[1][0], "end");
    EXPECT_EQ(rows[1][1], "1");
    EXPECT_EQ(rows[6][2], "barrier");
    EXPECT_EQ(rows[7][1], "4");
    EXPECT_LE(std::stod(rows[0][4]), std::stod(rows[1][4]));
  }
}

TEST(RecordingCommunicator, ARankStuckInACollectiveHasWrittenItsBegin) {
  TempDir dir;
  auto group = std::make_shared<fixtures::ThreadGroup>(2);
  const std::string log = dir / "rank-0.tsv";
  std::thread stuck([&] {
    dist::RecordingCommunicator comm(std::make_unique<fixtures::ThreadCommunicator>(group, 0), log);
    comm.barrier();  // rank 1 arrives only after the log was read
  });
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < 500 && rows.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    rows = rows_of(log);
  }
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "begin");
  EXPECT_EQ(rows[0][2], "barrier");
  fixtures::ThreadCommunicator(group, 1).barrier();
  stuck.join();
  EXPECT_EQ(rows_of(log).size(), 2u);
}

// The log changes nothing the run loop asks of the communicator it wraps: which threads may call
// it, and whether its collectives are queued on the device (bench's gradient-averaging line).
TEST(RecordingCommunicator, SaysWhatTheWrappedCommunicatorSaysOfItsThreadsAndTheDevice) {
  struct QueuingOnTheDevice : dist::Communicator {
    int rank() const override { return 0; }
    int world() const override { return 1; }
    std::string name() const override { return "queuing"; }
    void allreduce_sum(torch::Tensor&) override {}
    void allreduce_max(torch::Tensor&) override {}
    void broadcast(torch::Tensor&, int) override {}
    void barrier() override {}
    bool starts_from_any_thread() const override { return true; }
    bool queues_on_device() const override { return true; }
  };
  TempDir dir;
  dist::RecordingCommunicator queuing(std::make_unique<QueuingOnTheDevice>(), dir / "queuing.tsv");
  EXPECT_TRUE(queuing.starts_from_any_thread());
  EXPECT_TRUE(queuing.device_collectives_from_any_thread());
  EXPECT_TRUE(queuing.queues_on_device());
  EXPECT_EQ(queuing.name(), "queuing");
  dist::RecordingCommunicator blocking(
      std::make_unique<fixtures::ThreadCommunicator>(std::make_shared<fixtures::ThreadGroup>(1), 0),
      dir / "blocking.tsv");
  EXPECT_FALSE(blocking.starts_from_any_thread());
  EXPECT_FALSE(blocking.queues_on_device());
}
