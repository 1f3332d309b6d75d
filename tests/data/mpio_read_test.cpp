// Under mpirun -np 2: every rank reads its own shard of one shared file, through the serial
// driver and through MPI-IO, and gets the same pixels; the shards of all ranks are disjoint
// and cover the file.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/prepare.hpp"
#include "support/fixtures.hpp"
#include "support/mpi_env.hpp"

using namespace pix2pix;

namespace {

// Rank 0 prepares a Fashion-MNIST subset in a folder every rank can see.
class SharedDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    if (fixtures::g_mpi->rank() == 0) {
      dir_ = std::make_unique<fixtures::TempDir>();
      path_ = *dir_ / "shared.h5";
      // 203 pairs: odd on purpose, so a 2-way shard drops one.
      fixtures::make_fashion_edges_dataset(path_, 203, 0, /*labels=*/true, /*compression=*/3);
    }
    path_ = fixtures::broadcast_string(path_);
  }
  void TearDown() override {
    fixtures::g_mpi->barrier();  // nobody removes the file while another rank still reads it
    dir_.reset();
  }
  std::unique_ptr<fixtures::TempDir> dir_;
  std::string path_;
};

}  // namespace

TEST_F(SharedDataset, SerialAndMpioReadsOfEachShardAreEqual) {
  const int rank = fixtures::g_mpi->rank(), world = fixtures::g_mpi->world();
  const auto serial = data::PairedDataset::open(path_, data::H5Driver::serial);
  const auto mpio = data::PairedDataset::open(path_, data::H5Driver::mpio);
  const auto& info = serial->split("train");
  EXPECT_EQ(mpio->split("train").count, info.count);
  const auto shard = data::plan_shard({info.count, world, rank, 9, 0, true});
  const auto a = serial->read("train", shard.indices), b = mpio->read("train", shard.indices);
  EXPECT_GT(a.a.size(0), 0);
  EXPECT_TRUE(torch::equal(a.a, b.a));
  EXPECT_TRUE(torch::equal(a.b, b.b));
  EXPECT_TRUE(torch::equal(a.labels, b.labels));
  EXPECT_EQ(serial->read_names("train", shard.indices), mpio->read_names("train", shard.indices));
}

TEST_F(SharedDataset, LoaderShardsAreDisjointCoveringAndEqualInSteps) {
  const int rank = fixtures::g_mpi->rank(), world = fixtures::g_mpi->world();
  for (const auto driver : {data::H5Driver::serial, data::H5Driver::mpio}) {
    for (const auto cache : {data::CacheMode::device, data::CacheMode::none}) {
      const auto ds = data::PairedDataset::open(path_, driver);
      data::LoaderOptions o;
      o.batch_size = 4;
      o.world = world;
      o.rank = rank;
      o.seed = 21;
      o.cache = cache;
      data::BatchLoader loader(ds, o, torch::Device(torch::kCPU));
      loader.start_epoch(1);
      std::vector<std::int64_t> mine;
      std::int64_t steps = 0;
      while (auto batch = loader.next()) {
        mine.insert(mine.end(), batch->indices.begin(), batch->indices.end());
        ++steps;
      }
      std::int64_t all_steps[64] = {};
      MPI_Allgather(&steps, 1, MPI_INT64_T, all_steps, 1, MPI_INT64_T, MPI_COMM_WORLD);
      for (int r = 0; r < world; ++r) EXPECT_EQ(all_steps[r], steps) << "rank " << r << " would run another step count";
      std::vector<std::int64_t> everyone(mine.size() * static_cast<size_t>(world));
      MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, everyone.data(),
                    static_cast<int>(mine.size()), MPI_INT64_T, MPI_COMM_WORLD);
      const std::set<std::int64_t> distinct(everyone.begin(), everyone.end());
      EXPECT_EQ(distinct.size(), everyone.size()) << "a sample was trained on by two ranks";
      const std::int64_t count = ds->split("train").count;
      EXPECT_EQ(static_cast<std::int64_t>(everyone.size()), (count / world) / 4 * 4 * world);
    }
  }
}
