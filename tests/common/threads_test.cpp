// The one-thread-per-process default, and that an explicit user setting is left alone.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pix2pix/common/threads.hpp"

TEST(ThreadDefaults, OneThreadUnlessTheUserSaidOtherwise) {
  torch::set_num_threads(2);
  // Start from two BLAS threads so that the test fails if nothing limits them.
  auto set_blas = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  ASSERT_NE(set_blas, nullptr) << "the BLAS in use is not OpenBLAS (scripts/install-deps.sh selects it)";
  set_blas(2);
  auto result = pix2pix::apply_thread_defaults("2", nullptr);
  EXPECT_EQ(result.torch_threads, 2) << "OMP_NUM_THREADS set: LibTorch's threads must stay as they are";
  EXPECT_EQ(result.openblas_threads, 2) << "OMP_NUM_THREADS set: OpenBLAS's threads must stay as they are";
  result = pix2pix::apply_thread_defaults(nullptr, nullptr);
  EXPECT_EQ(result.torch_threads, 1);
  // Debian's LibTorch links the system BLAS; install-deps selects OpenBLAS, whose setter we use.
  EXPECT_EQ(result.openblas_threads, 1) << "OpenBLAS not found or not limited to one thread";
}

// A count that is not a number, or more threads than cores (libgomp segfaulted creating 100,000),
// is not taken as given: ignored, or lowered to the cores this process may use, with a warning.
TEST(ThreadDefaults, AnAbsurdCountIsLoweredToTheCoresWithAWarning) {
  const int cores = pix2pix::usable_cores();
  auto result = pix2pix::apply_thread_defaults("100000", nullptr);
  EXPECT_EQ(result.torch_threads, cores);
  EXPECT_EQ(result.openblas_threads, cores);
  EXPECT_NE(result.warning.find("OMP_NUM_THREADS=100000 is more than the " + std::to_string(cores) +
                                " cores this process may use: using " + std::to_string(cores)),
            std::string::npos)
      << result.warning;
  result = pix2pix::apply_thread_defaults("1", "1000");
  EXPECT_EQ(result.torch_threads, 1);
  EXPECT_EQ(result.openblas_threads, cores);
  EXPECT_NE(result.warning.find("OPENBLAS_NUM_THREADS=1000 is more than"), std::string::npos) << result.warning;
  result = pix2pix::apply_thread_defaults("lots", nullptr);
  EXPECT_EQ(result.torch_threads, 1);
  EXPECT_NE(result.warning.find("OMP_NUM_THREADS=lots is not a positive whole number: ignored"), std::string::npos);
  result = pix2pix::apply_thread_defaults(nullptr, nullptr);
  EXPECT_EQ(result.warning, "");
}
