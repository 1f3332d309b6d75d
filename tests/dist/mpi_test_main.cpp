// GoogleTest main for tests run under `mpirun -np N`: one MPI session for the whole binary,
// and a failure on any rank fails the job (the exit status is agreed over all ranks).
#include <gtest/gtest.h>

#include "pix2pix/common/cpu_convolutions.hpp"
#include "pix2pix/dist/mpi_session.hpp"
#include "support/mpi_env.hpp"

namespace pix2pix::fixtures {
dist::MpiSession* g_mpi = nullptr;
}

int main(int argc, char** argv) {
  pix2pix::dist::MpiSession mpi(&argc, &argv);
  pix2pix::fixtures::g_mpi = &mpi;
  // See Note [oneDNN's wrong input gradients]: as tests/support/test_main.cpp.
  pix2pix::prepare_cpu_convolutions();
  ::testing::InitGoogleTest(&argc, argv);
  if (mpi.rank() != 0) {
    // Keep one readable report: other ranks print only their failures.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const bool failed = RUN_ALL_TESTS() != 0;
  const bool any_failed = mpi.any(failed);
  if (mpi.rank() == 0) std::printf("%s on %d ranks\n", any_failed ? "FAILED" : "PASSED", mpi.world());
  return any_failed ? 1 : 0;
}
