// BatchLoader on CPU: values, shapes, A/B alignment under augmentation, determinism, epoch
// order, the three cache modes giving the same batches, and steps per epoch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "support/child_process.hpp"
#include "support/cpu_device.hpp"
#include "support/epoch_batches.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;

namespace {

// A dataset whose A and B are the same image: every augmentation must keep them equal.
void make_identical_pairs(const std::string& path, int count, int size, int channels) {
  data::PairedFileWriter writer(path, 0);
  writer.write_root_attributes("tests", "A == B", "tests");
  for (const char* split : {"train", "val"}) {
    writer.begin_split(split, {size, size, channels, channels, true, true, 16});
    for (int i = 0; i < count; ++i) {
      const cv::Mat m = fixtures::pattern_image(size, size, channels, i);
      writer.append(m.data, m.data, i, "p" + std::to_string(i));
    }
    writer.end_split();
  }
  writer.close();
}

using pix2pix::fixtures::epoch_batches;

using pix2pix::fixtures::kCpu;

}  // namespace

TEST(BatchLoader, BatchesAreFloatNchwInRangeAndAlignedUnderAugmentation) {
  TempDir dir;
  make_identical_pairs(dir / "d.h5", 32, 16, 3);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.batch_size = 4;
  o.seed = 3;
  data::BatchLoader loader(ds, o, kCpu);
  EXPECT_EQ(loader.augment().crop_size, 16);
  EXPECT_EQ(loader.augment().load_size, 18);  // 16 * 286 / 256, rounded
  const auto batches = epoch_batches(loader, 0);
  ASSERT_EQ(batches.size(), 8u);
  for (const auto& b : batches) {
    EXPECT_EQ(b.a.sizes(), (std::vector<std::int64_t>{4, 3, 16, 16}));
    EXPECT_EQ(b.a.scalar_type(), torch::kFloat32);
    EXPECT_LE(b.a.max().item<float>(), 1.0f);
    EXPECT_GE(b.a.min().item<float>(), -1.0f);
    EXPECT_TRUE(torch::equal(b.a, b.b)) << "A and B were cropped or flipped differently";
    ASSERT_TRUE(b.labels.defined());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.labels[i].item<std::int64_t>(), b.indices[static_cast<size_t>(i)]);
  }
}

TEST(BatchLoader, PreprocessNoneGivesTheStoredPixelsExactly) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 10, 2, 8, 3, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.batch_size = 5;
  o.shuffle = false;
  o.augment.preprocess = data::Preprocess::none;
  data::BatchLoader loader(ds, o, kCpu);
  const auto batches = epoch_batches(loader, 0);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].indices, (std::vector<std::int64_t>{5, 6, 7, 8, 9}));
  const auto stored = ds->read("train", batches[1].indices);
  const auto expected_b = stored.b.permute({0, 3, 1, 2}).to(torch::kFloat32) / 127.5 - 1.0;
  EXPECT_TRUE(torch::allclose(batches[1].b, expected_b, 0, 1e-6));
  EXPECT_EQ(batches[1].b.size(1), 1);
  EXPECT_EQ(batches[1].a.size(1), 3);
  EXPECT_FLOAT_EQ(((batches[1].a + 1) * 127.5)
                      .round()
                      .sub(stored.a.permute({0, 3, 1, 2}).to(torch::kFloat32))
                      .abs()
                      .max()
                      .item<float>(),
                  0.0f);
}

TEST(BatchLoader, SameSeedSameBatchesOtherSeedOtherBatches) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 40, 2, 12, 3, 3);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.batch_size = 8;
  o.seed = 11;
  data::BatchLoader first(ds, o, kCpu), second(ds, o, kCpu);
  o.seed = 12;
  data::BatchLoader other(ds, o, kCpu);
  const auto a = epoch_batches(first, 2), b = epoch_batches(second, 2), c = epoch_batches(other, 2);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].indices, b[i].indices);
    EXPECT_TRUE(torch::equal(a[i].a, b[i].a));
    EXPECT_TRUE(torch::equal(a[i].b, b[i].b));
  }
  EXPECT_NE(a[0].indices, c[0].indices);
}

// See Note [channels-last parameters]: where the parameters are NHWC the batches are too, dense,
// with the values (and crops and flips) of the NCHW batches; 3 channels for A and 1 for B, whose
// NHWC and NCHW strides coincide.
TEST(BatchLoader, AChannelsLastLoaderGivesTheSameBatchesDenseInNhwc) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 24, 2, 12, 3, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.batch_size = 4;
  o.seed = 7;
  data::BatchLoader nchw(ds, o, kCpu);
  o.memory_format = torch::MemoryFormat::ChannelsLast;
  data::BatchLoader nhwc(ds, o, kCpu);
  const auto expected = epoch_batches(nchw, 1), got = epoch_batches(nhwc, 1);
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(expected[i].a.is_contiguous());
    EXPECT_FALSE(got[i].a.is_contiguous()) << "batch " << i << ": A is NCHW";
    EXPECT_TRUE(got[i].a.is_contiguous(torch::MemoryFormat::ChannelsLast)) << "batch " << i;
    EXPECT_TRUE(got[i].b.is_contiguous(torch::MemoryFormat::ChannelsLast)) << "batch " << i;
    EXPECT_EQ(got[i].indices, expected[i].indices);
    EXPECT_TRUE(torch::equal(got[i].a, expected[i].a)) << "batch " << i;
    EXPECT_TRUE(torch::equal(got[i].b, expected[i].b)) << "batch " << i;
  }
}

TEST(BatchLoader, EachEpochVisitsTheShardOnceInANewOrder) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 50, 2, 4, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.batch_size = 5;
  o.world = 2;
  o.rank = 1;
  data::BatchLoader loader(ds, o, kCpu);
  EXPECT_EQ(loader.steps_per_epoch(), 5);
  std::vector<std::int64_t> orders[2];
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const auto& b : epoch_batches(loader, epoch))
      orders[epoch].insert(orders[epoch].end(), b.indices.begin(), b.indices.end());
    std::vector<std::int64_t> sorted(orders[epoch]), shard(loader.shard().indices);
    std::sort(sorted.begin(), sorted.end());
    std::sort(shard.begin(), shard.end());
    EXPECT_EQ(sorted, shard) << "epoch " << epoch << " did not visit the shard exactly once";
  }
  EXPECT_NE(orders[0], orders[1]);
}

TEST(BatchLoader, StepsPerEpochDropTheRemainderAndAreEqualOnEveryRank) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 23, 2, 4, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  for (int rank = 0; rank < 3; ++rank) {
    data::LoaderOptions o;
    o.batch_size = 3;
    o.world = 3;
    o.rank = rank;
    data::BatchLoader loader(ds, o, kCpu);
    EXPECT_EQ(loader.steps_per_epoch(), 2);  // floor(floor(23 / 3) / 3)
    EXPECT_EQ(epoch_batches(loader, 0).size(), 2u);
  }
  data::LoaderOptions too_big;
  too_big.batch_size = 8;
  too_big.world = 3;
  EXPECT_THROW(data::BatchLoader(ds, too_big, kCpu), Error);
}

TEST(BatchLoader, CacheModesProduceIdenticalBatches) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 30, 2, 10, 3, 1, true);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.batch_size = 4;
  o.seed = 5;
  o.cache = data::CacheMode::device;
  data::BatchLoader device_cache(ds, o, kCpu);
  o.cache = data::CacheMode::none;
  o.prefetch_batches = 2;
  data::BatchLoader streamed(ds, o, kCpu);
  o.cache = data::CacheMode::host;
  data::BatchLoader host_cache(ds, o, kCpu);
  EXPECT_EQ(host_cache.cache_mode(), data::CacheMode::host);
  EXPECT_EQ(streamed.cache_bytes(), 0);
  EXPECT_EQ(device_cache.cache_bytes(), 30 * 10 * 10 * (3 + 1));  // the whole shard, A and B
  for (int epoch = 0; epoch < 2; ++epoch) {
    const auto a = epoch_batches(device_cache, epoch), b = epoch_batches(streamed, epoch),
               c = epoch_batches(host_cache, epoch);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].indices, b[i].indices);
      EXPECT_TRUE(torch::equal(a[i].a, b[i].a) && torch::equal(a[i].b, b[i].b)) << "epoch " << epoch << " step " << i;
      EXPECT_TRUE(torch::equal(a[i].labels, b[i].labels));
      EXPECT_TRUE(torch::equal(a[i].a, c[i].a));
    }
  }
}

TEST(BatchLoader, CacheModesRespectTheMemoryBudget) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 30, 2, 10, 3, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  const std::int64_t shard = 30 * 10 * 10 * (3 + 1);
  data::LoaderOptions o;
  o.batch_size = 4;
  // auto takes half of what is free: a shard that does not fit streams instead.
  o.device_memory_bytes = o.host_memory_bytes = 2 * shard - 1;
  data::BatchLoader streams(ds, o, kCpu);
  EXPECT_EQ(streams.cache_mode(), data::CacheMode::none);
  o.device_memory_bytes = o.host_memory_bytes = 2 * shard;
  EXPECT_EQ(data::BatchLoader(ds, o, kCpu).cache_mode(), data::CacheMode::device);
  // An explicit mode may take all that is free, and no more: refused before allocating.
  o.device_memory_bytes = o.host_memory_bytes = shard - 1;
  for (auto mode : {data::CacheMode::device, data::CacheMode::host}) {
    o.cache = mode;
    try {
      data::BatchLoader loader(ds, o, kCpu);
      ADD_FAILURE() << "--cache " << data::to_string(mode) << " accepted a shard larger than the memory";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--cache none"), std::string::npos) << e.what();
    }
  }
}

namespace {
// The child's part of the next test, in a fresh process whose address space may grow by 40 MiB.
int cache_allocation_failure_outcome(const std::string& path) {
  const auto ds = data::PairedDataset::open(path);
  fixtures::limit_address_space(40LL << 20);
  data::LoaderOptions o;
  o.batch_size = 2;  // budgets unknown (-1): only the allocation itself can fail
  data::BatchLoader automatic(ds, o, kCpu);
  if (automatic.cache_mode() != data::CacheMode::none) return 11;
  automatic.start_epoch(0);
  if (!automatic.next()) return 12;
  o.cache = data::CacheMode::device;
  try {
    data::BatchLoader explicit_cache(ds, o, kCpu);
    return 13;
  } catch (const Error& e) {
    return std::string(e.what()).find("out of memory allocating 64 MiB for the cache") != std::string::npos ? 10 : 14;
  }
}
}  // namespace

TEST(BatchLoader, AFailedCacheAllocationStreamsInAutoModeAndIsAnErrorOtherwise) {
  if (const char* path = fixtures::fresh_process_argument()) std::_Exit(cache_allocation_failure_outcome(path));
  TempDir dir;
  // 128 pairs of 512x512 grey A and B: a 64 MiB shard.
  {
    data::PairedFileWriter writer(dir / "d.h5", 0);
    writer.write_root_attributes("tests", "big", "tests");
    const cv::Mat m = fixtures::pattern_image(512, 512, 1, 0);
    for (const char* split : {"train", "val"}) {
      writer.begin_split(split, {512, 512, 1, 1, false, false, 1});
      for (int i = 0; i < 128; ++i) writer.append(m.data, m.data, 0, "");
      writer.end_split();
    }
    writer.close();
  }
  const auto outcome = fixtures::run_test_in_fresh_process(
      "BatchLoader.AFailedCacheAllocationStreamsInAutoModeAndIsAnErrorOtherwise", dir / "d.h5");
  EXPECT_TRUE(outcome.exited && outcome.code == 10) << outcome.describe();
}

TEST(BatchLoader, StreamingStopsCleanlyMidEpoch) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 64, 2, 8, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.cache = data::CacheMode::none;
  o.batch_size = 2;
  data::BatchLoader loader(ds, o, kCpu);
  loader.start_epoch(0);
  ASSERT_TRUE(loader.next().has_value());
  loader.start_epoch(1);  // abandons epoch 0: the reader thread must stop, not deadlock
  EXPECT_EQ(epoch_batches(loader, 1).size(), 32u);
  loader.start_epoch(2);
  ASSERT_TRUE(loader.next().has_value());
}  // destructor joins a reader that is blocked on a full queue

TEST(BatchLoader, RejectsBadAugmentationSettings) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 8, 2, 8, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  data::LoaderOptions o;
  o.augment.preprocess = data::Preprocess::none;
  o.augment.crop_size = 6;
  EXPECT_THROW(data::BatchLoader(ds, o, kCpu), Error);
  o.augment.preprocess = data::Preprocess::crop;
  o.augment.crop_size = 9;
  EXPECT_THROW(data::BatchLoader(ds, o, kCpu), Error);
  o.augment.crop_size = 6;
  EXPECT_NO_THROW(data::BatchLoader(ds, o, kCpu));
  o.batch_size = 0;
  EXPECT_THROW(data::BatchLoader(ds, o, kCpu), Error);
  EXPECT_THROW(data::parse_cache_mode("gpu"), Error);
}

TEST(BatchLoader, AnEpochStartedMidwayGivesTheRemainingBatchesOfAFullOne) {
  TempDir dir;
  make_identical_pairs(dir / "d.h5", 40, 16, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  for (auto cache : {data::CacheMode::host, data::CacheMode::none}) {
    data::LoaderOptions o;
    o.batch_size = 4;
    o.seed = 11;
    o.cache = cache;
    data::BatchLoader loader(ds, o, kCpu);
    const auto full = epoch_batches(loader, 3);
    loader.start_epoch(3, 6);
    std::vector<data::Batch> rest;
    while (auto batch = loader.next()) rest.push_back(std::move(*batch));
    ASSERT_EQ(rest.size(), full.size() - 6) << data::to_string(cache);
    for (size_t i = 0; i < rest.size(); ++i) {
      EXPECT_EQ(rest[i].indices, full[i + 6].indices) << data::to_string(cache) << " batch " << i;
      EXPECT_TRUE(torch::equal(rest[i].a, full[i + 6].a)) << "augmentation of batch " << i << " differs";
    }
    EXPECT_THROW(loader.start_epoch(3, loader.steps_per_epoch() + 1), Error);
  }
}
