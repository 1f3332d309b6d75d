// GoogleTest main of the single-process test binary: gtest_main's, after giving the process (and
// every command it starts) a TMPDIR of its own.
//
// Note [a private TMPDIR per test]
// Every Open MPI process on a host, singletons included, makes its session directory under
// $TMPDIR/ompi.<host>.<uid> and removes that directory when it is empty at exit. CTest runs tests
// side by side, so one process can remove the shared directory between another's mkdir of it and
// of its own pid.N below it: "A call to mkdir was unable to create the desired directory ...
// orte_session_dir failed" (CI of f560d2a, TrainClassifierCli; open-mpi/ompi#8510 reports the same
// under CTest). So each test runs with a TMPDIR nobody else uses: this main for the GoogleTest
// cases, tests/support/private_tmpdir.sh for the commands CTest starts itself. The product's
// launchers that may start mpiruns together give each a folder of its own:
// See Note [an mpirun's session directory of its own]
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "pix2pix/common/cpu_convolutions.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char** argv) {
  const char* base = std::getenv("TMPDIR");
  std::string dir = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/p2p-test.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror(("mkdtemp " + dir).c_str());
    return 1;
  }
  // Like /tmp: some tests run a command as another user (setpriv).
  ::chmod(dir.c_str(), 01777);
  ::setenv("TMPDIR", dir.c_str(), /*overwrite=*/1);
  // See Note [oneDNN's wrong input gradients]: tests run CPU backward passes outside a trainer, as
  // the product runs them inside one.
  pix2pix::prepare_cpu_convolutions();
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return status;
}

// The wrapper's own check: this process's TMPDIR is the one main made (a p2p-test.* directory).
TEST(TestHarness, EachTestProcessHasATmpdirOfItsOwn) {
  const char* tmpdir = std::getenv("TMPDIR");
  ASSERT_NE(tmpdir, nullptr);
  EXPECT_EQ(std::filesystem::path(tmpdir).filename().string().rfind("p2p-test.", 0), 0u) << tmpdir;
  EXPECT_TRUE(std::filesystem::is_directory(tmpdir)) << tmpdir;
}
