// MpiSession under mpirun -np 2. See Note [ring all-reduce]: after MPI start-up, Open MPI's
// non-blocking all-reduce is set to its ring unless the user chose an algorithm. ctest runs this twice: as it is
// (expects "1") and with the user's choice in the environment (PIX2PIX_EXPECTED_IALLREDUCE_ALGORITHM says which).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "pix2pix/dist/mpi_session.hpp"
#include "support/mpi_env.hpp"

TEST(MpiSession, InPlaceAllreducesTakeOpenMpisRingUnlessTheUserChose) {
  const char* expected = std::getenv("PIX2PIX_EXPECTED_IALLREDUCE_ALGORITHM");
  const char* chosen = std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(std::string(chosen), expected != nullptr ? expected : "1");
}

// The start-up table's GPU names: strings of different lengths (an empty one too) come back to
// every rank in rank order.
TEST(MpiSession, AllgatherGivesEveryRankEveryRanksStringInRankOrder) {
  const auto& mpi = *pix2pix::fixtures::g_mpi;
  ASSERT_GE(mpi.world(), 2) << "run under mpirun -np 2";
  auto text = [](int rank) {
    return rank == 1 ? std::string() : std::string(3 * rank + 5, static_cast<char>('a' + rank));
  };
  const std::vector<std::string> all = mpi.allgather(text(mpi.rank()));
  ASSERT_EQ(all.size(), static_cast<size_t>(mpi.world()));
  for (int r = 0; r < mpi.world(); ++r) EXPECT_EQ(all[static_cast<size_t>(r)], text(r)) << "rank " << r;
  EXPECT_EQ(mpi.hosts(), mpi.allgather(mpi.host()));
}
