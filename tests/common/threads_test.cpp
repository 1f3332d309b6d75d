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
