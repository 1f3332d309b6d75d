// Seeded byte corruptions of a tiny dataset and a tiny checkpoint, hundreds of variants: no
// variant may crash or hang a reader, and a damaged file is reported unusable, never read as if
// it held the data written (format 2 checksums every metadata object and every chunk; checkpoints
// carry a seal). Each variant runs in a forked child, so a crash is a test failure, not the end of
// the test binary. The end of the file also runs through `pix2pix inspect --check` and `train`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/dataset_check.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/metrics/generator_scores.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/train/validator.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using fixtures::TempDir;

namespace {

constexpr int kDatasetVariants = 300;
constexpr int kCheckpointVariants = 200;
constexpr int kCliVariants = 6;

// Outcomes a child reports.
constexpr int kUsable = 0;      // opened, checked, and every byte read is what was written
constexpr int kRefused = 1;     // an Error naming the problem
constexpr int kWrongData = 3;   // accepted, but the contents differ: damage went unnoticed
constexpr int kOtherThrow = 4;  // an exception that is not pix2pix::Error

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// 1-4 damaged places of 1-8 bytes each; every damaged byte really changes.
std::string corrupt(const std::string& original, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::string bytes = original;
  const int places = 1 + static_cast<int>(rng() % 4);
  for (int p = 0; p < places; ++p) {
    const size_t at = rng() % bytes.size();
    const size_t length = std::min<size_t>(1 + rng() % 8, bytes.size() - at);
    for (size_t i = 0; i < length; ++i) bytes[at + i] = static_cast<char>(bytes[at + i] ^ (1 + rng() % 255));
  }
  return bytes;
}

struct Contents {
  data::FileAttributes attributes;
  std::map<std::string, data::PairBatch> pairs;
  std::map<std::string, std::vector<std::string>> names;
};

Contents read_everything(const data::PairedDataset& ds) {
  Contents c;
  c.attributes = ds.attributes();
  for (const std::string& split : ds.split_names()) {
    std::vector<std::int64_t> all(static_cast<size_t>(ds.split(split).count));
    std::iota(all.begin(), all.end(), 0);
    c.pairs[split] = ds.read(split, all);
    c.names[split] = ds.read_names(split, all);
  }
  return c;
}

bool same(const Contents& x, const Contents& y) {
  if (x.attributes.format != y.attributes.format || x.attributes.version != y.attributes.version ||
      x.attributes.source != y.attributes.source || x.attributes.pairing != y.attributes.pairing ||
      x.attributes.created_by != y.attributes.created_by || x.names != y.names || x.pairs.size() != y.pairs.size())
    return false;
  for (const auto& [split, p] : x.pairs) {
    const auto it = y.pairs.find(split);
    if (it == y.pairs.end() || !torch::equal(p.a, it->second.a) || !torch::equal(p.b, it->second.b) ||
        !torch::equal(p.labels, it->second.labels))
      return false;
  }
  return true;
}

// What `inspect --check` does with a dataset; a file it passes must read back as written.
int inspect_dataset(const std::string& path, const Contents& original) {
  try {
    const auto ds = data::PairedDataset::open(path);
    if (!data::check_dataset(*ds, 0, 1).empty()) return kRefused;
    for (const std::string& split : ds->split_names()) data::compute_split_stats(*ds, split, 0);
    return same(read_everything(*ds), original) ? kUsable : kWrongData;
  } catch (const Error&) {
    return kRefused;
  } catch (...) {
    return kOtherThrow;
  }
}

// The file side of `train`: open, cache the train split and walk an epoch, the val split and the
// mean training image (names are not read: a damaged names chunk does not stop training).
int train_on_dataset(const std::string& path) {
  try {
    const auto ds = data::PairedDataset::open(path);
    data::LoaderOptions lo;
    lo.batch_size = 4;
    data::BatchLoader loader(ds, lo, torch::kCPU);
    loader.start_epoch(0);
    while (loader.next()) {
    }
    train::Validator validator(*ds, 8, 2, torch::kCPU, optim::Precision::fp32);
    metrics::mean_target_image(*ds, "train", 10000);
    return kUsable;
  } catch (const Error&) {
    return kRefused;
  } catch (...) {
    return kOtherThrow;
  }
}

}  // namespace

TEST(Fuzz, DamagedDatasetsAreRefusedNeverCrashOrHang) {
  TempDir dir;
  const std::string pristine = dir / "pristine.h5";
  fixtures::make_pattern_dataset(pristine, 24, 8, 32, 3, 1, /*labels=*/true);
  const Contents original = read_everything(*data::PairedDataset::open(pristine));
  const std::string bytes = fixtures::read_file(pristine);
  std::map<int, int> outcomes;
  for (int v = 0; v < kDatasetVariants; ++v) {
    const std::string path = dir / ("v" + std::to_string(v) + ".h5");
    write_bytes(path, corrupt(bytes, static_cast<std::uint32_t>(v)));
    const auto inspected = fixtures::run_in_child([&] { return inspect_dataset(path, original); }, 60);
    ASSERT_TRUE(inspected.exited) << "inspect, variant " << v << " (seed " << v << "): " << inspected.describe();
    EXPECT_TRUE(inspected.code == kUsable || inspected.code == kRefused)
        << "variant " << v << ": " << (inspected.code == kWrongData ? "damage went unnoticed" : inspected.describe());
    const auto trained = fixtures::run_in_child([&] { return train_on_dataset(path); }, 60);
    ASSERT_TRUE(trained.exited) << "train, variant " << v << ": " << trained.describe();
    EXPECT_TRUE(trained.code == kUsable || trained.code == kRefused)
        << "train, variant " << v << ": " << trained.describe();
    // What inspect --check passes, training reads as well.
    if (inspected.code == kUsable) {
      EXPECT_EQ(trained.code, kUsable) << "variant " << v;
    }
    ++outcomes[inspected.code];
    std::filesystem::remove(path);
  }
  // Almost every byte of such a file is checksummed: nearly every variant must be refused.
  EXPECT_GT(outcomes[kRefused], kDatasetVariants * 9 / 10)
      << "refused " << outcomes[kRefused] << " of " << kDatasetVariants;
  std::printf("%d damaged datasets: %d refused, %d unaffected (damage in unused bytes)\n", kDatasetVariants,
              outcomes[kRefused], outcomes[kUsable]);
}

TEST(Fuzz, DamagedCheckpointsAreAlwaysRefused) {
  TempDir dir;
  const nets::GeneratorOptions go{1, 1, 5, 2, nets::Norm::batch, true};
  const nets::DiscriminatorOptions dopt{2, 2, 1, nets::Norm::batch};
  nets::UnetGenerator g(go);
  nets::PatchDiscriminator d(dopt);
  torch::optim::Adam og(g->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam od(d->parameters(), torch::optim::AdamOptions(1e-3));
  checkpoint::TrainingState state;
  state.epoch = 3;
  state.model_shape = "tiny";
  state.early_stopping = "1 100 0 ";
  state.scalers = {{"g", {1, 0, 0}}, {"d", {1, 0, 0}}};
  state.epoch_losses = {0, 0, 0};
  const checkpoint::CheckpointParts parts{
      {{"generator", g.get()}, {"discriminator", d.get()}}, {{"g", &og}, {"d", &od}}, {}};
  const std::string pristine = dir / "last.pt";
  checkpoint::save_checkpoint(pristine, parts, state);
  ASSERT_NO_THROW(checkpoint::load_checkpoint(pristine, parts, "tiny"));
  const std::string bytes = fixtures::read_file(pristine);
  for (int v = 0; v < kCheckpointVariants; ++v) {
    const std::string path = dir / "damaged.pt";
    // Half the variants flip bytes, the other half also cut the file short.
    std::string damaged = corrupt(bytes, 7000 + static_cast<std::uint32_t>(v));
    if (v % 2 == 1) damaged.resize(damaged.size() * static_cast<size_t>(v % 97 + 1) / 100);
    write_bytes(path, damaged);
    const auto outcome = fixtures::run_in_child(
        [&] {
          try {
            checkpoint::load_checkpoint(path, parts, "tiny");
            return kUsable;
          } catch (const Error& e) {
            return std::string(e.what()).find(path) != std::string::npos ? kRefused : kOtherThrow;
          } catch (...) {
            return kOtherThrow;
          }
        },
        60);
    EXPECT_TRUE(outcome.exited && outcome.code == kRefused)
        << "checkpoint variant " << v << ": " << (outcome.code == kUsable ? "loaded" : outcome.describe());
  }
}

TEST(Fuzz, TheCommandsThemselvesExitCleanlyOnDamagedData) {
  TempDir dir;
  const std::string pristine = dir / "pristine.h5";
  fixtures::make_pattern_dataset(pristine, 24, 8, 32, 1, 1);
  const Contents original = read_everything(*data::PairedDataset::open(pristine));
  const std::string bytes = fixtures::read_file(pristine);
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  for (int v = 0; v < kCliVariants; ++v) {
    const std::string path = dir / ("cli" + std::to_string(v) + ".h5");
    write_bytes(path, corrupt(bytes, 9000 + static_cast<std::uint32_t>(v)));
    const int inspected = fixtures::run_in_child([&] { return inspect_dataset(path, original); }, 60).code;
    const int trained = fixtures::run_in_child([&] { return train_on_dataset(path); }, 60).code;
    ASSERT_TRUE(inspected == kUsable || inspected == kRefused) << "variant " << v;
    const auto check = fixtures::run_shell("timeout 60 " + fixtures::pix2pix_bin() + " inspect " + path + " --check");
    EXPECT_EQ(check.status, inspected) << "inspect --check, variant " << v << ":\n" << check.output;
    const auto train =
        fixtures::run_shell("timeout 120 " + fixtures::pix2pix_bin() + " train --config " + smoke +
                            " --max-epochs 1 --data " + path + " --run-dir " + (dir / "run") + std::to_string(v));
    EXPECT_EQ(train.status, trained) << "train, variant " << v << ":\n" << train.output;
  }
}
