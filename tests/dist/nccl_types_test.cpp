// The NCCL backend's pure part: which NCCL type carries each tensor type. In CUDA builds this
// also proves the NCCL sources are compiled and linked into the library CI tests.
#include <gtest/gtest.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/nccl_communicator.hpp"

#ifdef PIX2PIX_HAVE_CUDA
#include <nccl.h>

TEST(NcclTypes, EveryTrainingTypeMapsToItsNcclType) {
  using pix2pix::dist::nccl_data_type;
  ASSERT_TRUE(pix2pix::dist::nccl_compiled());
  EXPECT_EQ(nccl_data_type(torch::kFloat32), ncclFloat32);
  EXPECT_EQ(nccl_data_type(torch::kFloat64), ncclFloat64);
  EXPECT_EQ(nccl_data_type(torch::kFloat16), ncclFloat16);
  EXPECT_EQ(nccl_data_type(torch::kBFloat16), ncclBfloat16);
  EXPECT_EQ(nccl_data_type(torch::kInt32), ncclInt32);
  EXPECT_EQ(nccl_data_type(torch::kInt64), ncclInt64);
  EXPECT_EQ(nccl_data_type(torch::kUInt8), ncclUint8);
  EXPECT_THROW(nccl_data_type(torch::kComplexFloat), pix2pix::Error);
  EXPECT_THROW(nccl_data_type(torch::kBool), pix2pix::Error);
}
#else
TEST(NcclTypes, ABuildWithoutNcclSaysSo) {
  EXPECT_FALSE(pix2pix::dist::nccl_compiled());
  EXPECT_THROW(pix2pix::dist::nccl_data_type(torch::kFloat32), pix2pix::Error);
  EXPECT_THROW(pix2pix::dist::NcclCommunicator(0, 1.0), pix2pix::Error);
}
#endif
