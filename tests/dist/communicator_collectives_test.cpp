// Every collective of the communicator training uses on this device (MPI on CPUs in CI; NCCL on
// GPUs when scripts/gpu-smoke.sh sets PIX2PIX_TEST_DEVICE=cuda, at every world size, one
// included), checked element by element against values computed here, and the wrong elements
// counted as nccl-tests counts them. Rank r contributes ((r + i) % 3) + 1 at element i: sums and
// maxima are small integers, exact in every type up to 85 ranks; means are compared to the type's
// precision. The element pattern moves with the rank, so a result at the wrong offset, from the
// wrong rank or of the wrong operation shows up as wrong elements.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pix2pix/dist/communicator.hpp"
#include "support/mpi_devices.hpp"
#include "support/mpi_env.hpp"

using namespace pix2pix;

namespace {

torch::Tensor contribution(int rank, std::int64_t numel) {
  return (torch::arange(numel, torch::kInt64) + rank).remainder(3) + 1;
}

enum class Reduction { sum, max, mean };

// The expected result in float64, from every rank's contribution.
torch::Tensor expected(Reduction reduction, int world, std::int64_t numel) {
  auto out = contribution(0, numel).to(torch::kFloat64);
  for (int r = 1; r < world; ++r) {
    const auto c = contribution(r, numel).to(torch::kFloat64);
    out = reduction == Reduction::max ? torch::maximum(out, c) : out + c;
  }
  return reduction == Reduction::mean ? out / world : out;
}

// Largest relative error a correct result may have: exact for sums and maxima (small integers),
// the type's rounding for means.
double tolerance(Reduction reduction, torch::ScalarType type) {
  if (reduction != Reduction::mean) return 0.0;
  switch (type) {
    case torch::kBFloat16:
      return 1.0 / 128;
    case torch::kFloat16:
      return 1.0 / 1024;
    case torch::kFloat32:
      return 1e-6;
    default:
      return 1e-12;
  }
}

// How many elements of `result` are not `want` (nccl-tests' #wrong), and the first of them.
std::string count_wrong(const torch::Tensor& result, const torch::Tensor& want, double relative) {
  const auto got = result.to(torch::kCPU).to(torch::kFloat64).reshape({-1});
  const auto bad = (got - want).abs().gt(want.abs() * relative);
  const std::int64_t wrong = bad.sum().item<std::int64_t>();
  if (wrong == 0) return "";
  const std::int64_t first = bad.nonzero()[0][0].item<std::int64_t>();
  return std::to_string(wrong) + " of " + std::to_string(got.numel()) + " elements wrong; first: element " +
         std::to_string(first) + " is " + std::to_string(got[first].item<double>()) + ", want " +
         std::to_string(want[first].item<double>());
}

class Collectives : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = fixtures::test_device();
    comm_ = fixtures::make_test_communicator(device_);
  }
  // The devices whose tensors this communicator takes: its own, and host tensors on GPU ranks
  // (See Note [host tensors over MPI]: the stop poll, loss sums and decisions are host tensors).
  std::vector<torch::Device> devices() const {
    if (device_.is_cuda()) return {device_, torch::Device(torch::kCPU)};
    return {device_};
  }
  std::string where(torch::ScalarType type, std::int64_t numel, const torch::Device& device) const {
    return comm_->name() + ", world " + std::to_string(comm_->world()) + ", " + c10::toString(type) + " x " +
           std::to_string(numel) + " on " + device.str();
  }
  torch::Tensor mine(torch::ScalarType type, std::int64_t numel, const torch::Device& device) const {
    return contribution(comm_->rank(), numel).to(device).to(type);
  }

  torch::Device device_{torch::kCPU};
  std::unique_ptr<dist::Communicator> comm_;
};

const std::vector<torch::ScalarType> kTypes = {torch::kFloat32, torch::kFloat64, torch::kBFloat16, torch::kFloat16,
                                               torch::kInt32,   torch::kInt64,   torch::kUInt8};
// One element, an odd size, and one large enough for NCCL's and MPI's pipelined algorithms.
const std::vector<std::int64_t> kSizes = {1, 1001, (1 << 20) + 3};

}  // namespace

TEST_F(Collectives, AllreduceSumMaxAndMeanOfEveryTypeAndSize) {
  const int world = comm_->world();
  for (const auto& device : devices())
    for (const auto type : kTypes)
      for (const auto numel : kSizes) {
        auto sum = mine(type, numel, device), max = mine(type, numel, device);
        comm_->allreduce_sum(sum);
        comm_->allreduce_max(max);
        EXPECT_EQ(count_wrong(sum, expected(Reduction::sum, world, numel), 0.0), "")
            << "sum, " << where(type, numel, device);
        EXPECT_EQ(count_wrong(max, expected(Reduction::max, world, numel), 0.0), "")
            << "max, " << where(type, numel, device);
        EXPECT_EQ(sum.scalar_type(), type);
        EXPECT_EQ(sum.device(), device);
        if (!c10::isFloatingType(type)) continue;  // a mean is for gradients and losses
        auto mean = mine(type, numel, device);
        comm_->allreduce_mean(mean);
        EXPECT_EQ(count_wrong(mean, expected(Reduction::mean, world, numel), tolerance(Reduction::mean, type)), "")
            << "mean, " << where(type, numel, device);
      }
}

TEST_F(Collectives, BroadcastFromEveryRoot) {
  for (const auto& device : devices())
    for (const auto type : {torch::kFloat32, torch::kBFloat16, torch::kInt64, torch::kUInt8})
      for (int root = 0; root < comm_->world(); ++root) {
        auto t = mine(type, 1001, device);
        comm_->broadcast(t, root);
        EXPECT_EQ(count_wrong(t, contribution(root, 1001).to(torch::kFloat64), 0.0), "")
            << "broadcast from " << root << ", " << where(type, 1001, device);
      }
}

// A view that is not contiguous (a transposed bucket, a slice) is reduced into the view itself.
TEST_F(Collectives, NonContiguousTensorsAreReducedInPlace) {
  for (const auto& device : devices()) {
    auto storage = mine(torch::kFloat32, 64 * 33, device).reshape({64, 33});
    auto view = storage.t();
    ASSERT_FALSE(view.is_contiguous());
    comm_->allreduce_sum(view);
    EXPECT_EQ(count_wrong(storage, expected(Reduction::sum, comm_->world(), 64 * 33), 0.0), "")
        << "transposed view, " << where(torch::kFloat32, 64 * 33, device);
  }
}

// See Note [overlapped all-reduce]: started all-reduces complete in the order they were started, each
// with the mean, whatever their sizes.
TEST_F(Collectives, StartedMeansCompleteInOrder) {
  const std::vector<std::int64_t> sizes = {(1 << 20) + 3, 5, 70000};
  std::vector<torch::Tensor> tensors;
  std::vector<std::unique_ptr<dist::PendingCollective>> pending;
  for (const auto numel : sizes) {
    tensors.push_back(mine(torch::kFloat32, numel, device_));
    pending.push_back(comm_->start_allreduce_mean(tensors.back()));
  }
  for (auto& p : pending) p->wait();
  for (size_t k = 0; k < sizes.size(); ++k)
    EXPECT_EQ(count_wrong(tensors[k], expected(Reduction::mean, comm_->world(), sizes[k]), 1e-6), "")
        << "started mean " << k << ", " << where(torch::kFloat32, sizes[k], device_);
}

TEST_F(Collectives, HostValuesAndBarrier) {
  const int rank = comm_->rank(), world = comm_->world();
  EXPECT_DOUBLE_EQ(comm_->allreduce_sum(static_cast<double>(rank + 1)), world * (world + 1) / 2.0);
  EXPECT_DOUBLE_EQ(comm_->allreduce_mean(static_cast<double>(rank)), (world - 1) / 2.0);
  EXPECT_TRUE(comm_->any(rank == world - 1));
  EXPECT_FALSE(comm_->any(false));
  EXPECT_EQ(comm_->broadcast_string(rank == 0 ? "from rank 0" : "", 0), "from rank 0");
  comm_->barrier();
}
