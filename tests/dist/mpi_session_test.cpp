// Note [ring all-reduce]: after MPI start-up, Open MPI's non-blocking all-reduce is set to its
// ring unless the user chose an algorithm. ctest runs this twice: as it is (expects "1") and with
// the user's choice in the environment (PIX2PIX_EXPECTED_IALLREDUCE_ALGORITHM says which).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

TEST(MpiSession, InPlaceAllreducesTakeOpenMpisRingUnlessTheUserChose) {
  const char* expected = std::getenv("PIX2PIX_EXPECTED_IALLREDUCE_ALGORITHM");
  const char* chosen = std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(std::string(chosen), expected != nullptr ? expected : "1");
}
