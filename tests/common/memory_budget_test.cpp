// The memory budget sees the limits a job runs under, and allocation failures say what failed.
#include <gtest/gtest.h>

#include "pix2pix/common/memory_budget.hpp"
#include "support/child_process.hpp"

using namespace pix2pix;

TEST(MemoryBudget, SeesAnAddressSpaceLimitAndNamesIt) {
  const MemoryBudget free_now = available_memory();
  EXPECT_GT(free_now.bytes, 0);
  const auto outcome = fixtures::run_in_child([] {
    fixtures::limit_address_space(300LL << 20);
    const MemoryBudget budget = available_memory();
    if (budget.limited_by != "ulimit -v") return 11;
    if (budget.bytes > (300LL << 20) || budget.bytes < (200LL << 20)) return 12;
    try {
      require_memory(1LL << 30, "a test buffer");
      return 13;
    } catch (const Error& e) {
      const std::string m = e.what();
      return m.find("a test buffer needs 1.0 GiB") != std::string::npos && m.find("ulimit -v") != std::string::npos
                 ? 10
                 : 14;
    }
  });
  EXPECT_TRUE(outcome.exited && outcome.code == 10) << outcome.describe();
}

TEST(MemoryBudget, FailedAllocationsSayWhatWasBeingAllocated) {
  const auto outcome = fixtures::run_in_child([] {
    fixtures::limit_address_space(200LL << 20);
    try {
      allocating(1LL << 32, "4 GiB of test pixels", [] { return torch::empty({1LL << 32}, torch::kUInt8); });
      return 11;
    } catch (const Error& e) {
      const std::string m = e.what();
      if (m.find("out of memory allocating 4.0 GiB for 4 GiB of test pixels") == std::string::npos) return 12;
    }
    try {
      allocating(1LL << 33, "a vector", [] { return std::vector<char>(1ULL << 33); });
      return 13;
    } catch (const Error& e) {
      return std::string(e.what()).find("for a vector") != std::string::npos ? 10 : 14;
    }
  });
  EXPECT_TRUE(outcome.exited && outcome.code == 10) << outcome.describe();
}

TEST(MemoryBudget, FormatsBytesForPeople) {
  EXPECT_EQ(format_bytes(100), "100 bytes");
  EXPECT_EQ(format_bytes(3 << 20), "3.0 MiB");
  EXPECT_EQ(format_bytes(640LL << 20), "640 MiB");
  EXPECT_EQ(format_bytes(45LL << 50), "45 PiB");
}
