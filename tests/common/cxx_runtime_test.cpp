// See Note [two C++ runtimes in one process]: the check is quiet on a whole runtime and names the
// object that took part of it, with the preload that mends it, when a library exports its copies.
#include "pix2pix/common/cxx_runtime.hpp"

#include <gtest/gtest.h>

#include "support/fixtures.hpp"

using pix2pix::fixtures::contains;

namespace {

TEST(CxxRuntime, TheTestProgramRunsOneRuntime) {
  const auto runtime = pix2pix::inspect_cxx_runtime();
  EXPECT_TRUE(contains(runtime.library, "libstdc++.so.6")) << runtime.library;
  EXPECT_EQ(runtime.split, "");
  EXPECT_EQ(pix2pix::cxx_runtime_warning(runtime), "");
}

TEST(CxxRuntime, ALibraryThatExportsLibstdcxxPartsIsNamedWithTheMend) {
  const std::string bin = pix2pix::fixtures::pix2pix_bin();
  auto r = pix2pix::fixtures::run_shell(bin + " --version");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "two C++ runtimes")) << r.output;
  EXPECT_TRUE(contains(r.output, "libstdc++.so.6, one runtime")) << r.output;
  // The variable set by a caller that wants the program as linked (gpu-node-build.sh) is no restart.
  r = pix2pix::fixtures::run_shell("PIX2PIX_RUNTIME_MENDED=1 " + bin + " --version");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "libstdc++.so.6, one runtime\n")) << r.output;

  // See Note [a program that mends its own runtime]: the program restarts itself with libstdc++
  // preloaded first, and runs whole.
  r = pix2pix::fixtures::run_shell("LD_PRELOAD=" SPLIT_RUNTIME_STANDIN " " + bin + " --version");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "two C++ runtimes")) << r.output;
  EXPECT_TRUE(contains(r.output, "one runtime (restarted with it preloaded: the link order did not take)")) << r.output;

  // Where it cannot be mended (already restarted once), the warning names the mend.
  r = pix2pix::fixtures::run_shell("PIX2PIX_RUNTIME_MENDED=1 LD_PRELOAD=" SPLIT_RUNTIME_STANDIN " " + bin +
                                   " --version");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "warning: two C++ runtimes in this process: "
                       "std::filesystem::__cxx11::recursive_directory_iterator::depth() binds to " SPLIT_RUNTIME_STANDIN
                       ", not to "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "Run with LD_PRELOAD=")) << r.output;
  EXPECT_TRUE(contains(r.output, "C++       split: ")) << r.output;
}

}  // namespace
