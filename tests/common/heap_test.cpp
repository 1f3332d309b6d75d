// See Note [freed memory stays in the heap]: after retain_freed_memory, a large block that is freed
// and allocated again is not faulted in again.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

#include "pix2pix/common/heap.hpp"

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Page faults while a fresh 64 MiB block is written, after one of the same size was freed.
long faults_to_refill_a_freed_block() {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  char* first = static_cast<char*>(std::malloc(kBytes));
  std::memset(first, 1, kBytes);
  asm volatile("" : : "r"(first) : "memory");  // the compiler must not drop the block
  std::free(first);
  const long before = minor_faults();
  char* second = static_cast<char*>(std::malloc(kBytes));
  std::memset(second, 2, kBytes);
  asm volatile("" : : "r"(second) : "memory");
  const long faults = minor_faults() - before;
  std::free(second);
  return faults;
}

}  // namespace

TEST(RetainFreedMemory, LeavesAUsersMallocTuningAloneAndOtherwiseKeepsFreedBlocks) {
  const char* tuned[] = {"PATH=/usr/bin", "MALLOC_ARENA_MAX=2", nullptr};
  EXPECT_FALSE(pix2pix::retain_freed_memory(tuned));
  const char* tunables[] = {"GLIBC_TUNABLES=glibc.malloc.trim_threshold=0", nullptr};
  EXPECT_FALSE(pix2pix::retain_freed_memory(tunables));

  const long default_faults = faults_to_refill_a_freed_block();
  const char* plain[] = {"PATH=/usr/bin", "GLIBC_TUNABLES=glibc.rtld.nns=2", nullptr};
  ASSERT_TRUE(pix2pix::retain_freed_memory(plain));
  faults_to_refill_a_freed_block();  // the heap grows to hold the block once
  const long retained_faults = faults_to_refill_a_freed_block();
  // 64 MiB are 16384 pages of 4 KiB: refilling them from the kernel faults thousands of times.
  EXPECT_LT(retained_faults, 256) << "glibc's default allocator faulted " << default_faults << " times";
}
