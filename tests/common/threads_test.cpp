// See Note [one thread budget per rank]: the rule (which source wins, the share of the cores, what is
// lowered or ignored, the BLAS kept at one thread) and that applying it reaches both libraries.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pix2pix/common/threads.hpp"

using pix2pix::CoreShare;
using pix2pix::decide_thread_budget;
using pix2pix::ThreadRequest;

namespace {
bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST(ThreadBudget, AutoTakesTheCoresOfTheMaskSharedByTheRanksOfTheNode) {
  EXPECT_EQ(decide_thread_budget({}, CoreShare{8, 1}).intra_op, 8) << "one process alone: all its cores";
  EXPECT_EQ(decide_thread_budget({}, CoreShare{8, 4}).intra_op, 2) << "4 unbound ranks on 8 cores";
  EXPECT_EQ(decide_thread_budget({}, CoreShare{1, 1}).intra_op, 1) << "a rank bound to one core";
  EXPECT_EQ(decide_thread_budget({}, CoreShare{2, 4}).intra_op, 1) << "oversubscribed: never below 1";
  EXPECT_EQ(decide_thread_budget({}, CoreShare{9, 2}).intra_op, 4) << "the share rounds down";
  const auto budget = decide_thread_budget({}, CoreShare{8, 4});
  EXPECT_EQ(budget.blas, 1);
  EXPECT_EQ(budget.warning, "");
  EXPECT_TRUE(has(budget.describe(),
                  "2 per rank: intra-op 2, BLAS 1 (auto: 8 cores in this rank's affinity mask, "
                  "shared by 4 ranks of this node)"))
      << budget.describe();
}

TEST(ThreadBudget, TheOptionThenOmpThenSlurmWin) {
  ThreadRequest request;
  request.threads_option = 3;
  request.omp_num_threads = "2";
  request.slurm_cpus_per_task = "4";
  auto budget = decide_thread_budget(request, CoreShare{8, 2});
  EXPECT_EQ(budget.intra_op, 3);
  EXPECT_TRUE(has(budget.source, "--threads 3")) << budget.source;
  request.threads_option = 0;
  budget = decide_thread_budget(request, CoreShare{8, 2});
  EXPECT_EQ(budget.intra_op, 2);
  EXPECT_TRUE(has(budget.source, "OMP_NUM_THREADS=2")) << budget.source;
  request.omp_num_threads = nullptr;
  budget = decide_thread_budget(request, CoreShare{8, 2});
  EXPECT_EQ(budget.intra_op, 4);
  EXPECT_TRUE(has(budget.source, "SLURM_CPUS_PER_TASK=4")) << budget.source;
  EXPECT_EQ(budget.warning, "");
}

// The case of issue 30: OMP_NUM_THREADS alone must not give OpenBLAS threads of its own.
TEST(ThreadBudget, TheBlasKeepsOneThreadUnlessItsOwnVariableSaysOtherwise) {
  ThreadRequest request;
  request.omp_num_threads = "2";
  auto budget = decide_thread_budget(request, CoreShare{2, 1});
  EXPECT_EQ(budget.intra_op, 2);
  EXPECT_EQ(budget.blas, 1);
  request.openblas_num_threads = "2";
  budget = decide_thread_budget(request, CoreShare{2, 1});
  EXPECT_EQ(budget.blas, 2);
  EXPECT_TRUE(has(budget.warning, "OPENBLAS_NUM_THREADS=2 beside 2 intra-op threads: BLAS threads add to LibTorch's"))
      << budget.warning;
  request.omp_num_threads = "1";
  EXPECT_EQ(decide_thread_budget(request, CoreShare{2, 1}).warning, "") << "2 BLAS threads beside 1: no overlap";
}

// A count that is not a number, or more threads than cores (libgomp segfaulted creating 100,000),
// is not taken as given: ignored (the next source decides), or lowered to the cores, with a warning.
TEST(ThreadBudget, AnAbsurdCountIsLoweredOrIgnoredWithAWarning) {
  ThreadRequest request;
  request.omp_num_threads = "100000";
  auto budget = decide_thread_budget(request, CoreShare{4, 1});
  EXPECT_EQ(budget.intra_op, 4);
  EXPECT_TRUE(has(budget.warning, "OMP_NUM_THREADS=100000 is more than the 4 cores this process may use: using 4"))
      << budget.warning;
  request.omp_num_threads = "lots";
  request.slurm_cpus_per_task = "2";
  budget = decide_thread_budget(request, CoreShare{4, 1});
  EXPECT_EQ(budget.intra_op, 2) << "an unusable OMP_NUM_THREADS falls through to the next source";
  EXPECT_TRUE(has(budget.warning, "OMP_NUM_THREADS=lots is not a positive whole number: ignored")) << budget.warning;
  request = ThreadRequest{};
  request.threads_option = 64;
  budget = decide_thread_budget(request, CoreShare{4, 1});
  EXPECT_EQ(budget.intra_op, 4);
  EXPECT_TRUE(has(budget.warning, "--threads=64 is more than the 4 cores")) << budget.warning;
  request = ThreadRequest{};
  request.openblas_num_threads = "1000";
  budget = decide_thread_budget(request, CoreShare{4, 1});
  EXPECT_EQ(budget.blas, 4);
  EXPECT_TRUE(has(budget.warning, "OPENBLAS_NUM_THREADS=1000 is more than")) << budget.warning;
}

// OpenBLAS is limited where it is the BLAS (Debian's LibTorch: CI and scripts/install-deps.sh). A
// pip LibTorch (a GPU node's) brings MKL, which takes its own setting: there nothing may claim to
// have limited a BLAS (applied.blas 0, which the run's thread line reports as "not OpenBLAS").
TEST(ThreadBudget, ApplyingItSetsLibTorchAndOpenBlas) {
  auto set_blas = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set_blas == nullptr) {
    ASSERT_TRUE(at::hasMKL()) << "the BLAS in use is neither OpenBLAS (scripts/install-deps.sh selects it) nor MKL";
  }
  // Start from the opposite so that the test fails if nothing sets them.
  torch::set_num_threads(1);
  if (set_blas != nullptr) set_blas(2);
  pix2pix::ThreadBudget wanted;
  wanted.intra_op = 2;
  wanted.blas = 1;
  auto applied = pix2pix::apply_thread_budget(wanted);
  EXPECT_EQ(applied.intra_op, 2);
  EXPECT_EQ(torch::get_num_threads(), 2);
  if (set_blas != nullptr) {
    EXPECT_EQ(applied.blas, 1) << "OpenBLAS not limited to one thread";
  } else {
    EXPECT_EQ(applied.blas, 0) << "no OpenBLAS in this process, yet a BLAS limit is reported";
  }
  wanted.intra_op = 1;
  applied = pix2pix::apply_thread_budget(wanted);
  EXPECT_EQ(torch::get_num_threads(), 1);
}
