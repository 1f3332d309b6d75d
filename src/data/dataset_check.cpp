// Statistics and checks are computed in blocks of at most 256 pairs and about 64 MiB
// (pairs_per_read_block), so a file of any size and image size is inspected in bounded memory.
#include "pix2pix/data/dataset_check.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"

namespace pix2pix::data {
namespace {

constexpr std::int64_t kBlockPairs = 256;

struct Accumulator {
  double sum = 0, sum_sq = 0;
  std::int64_t count = 0;
  int min = 255, max = 0;
  // In pieces of 4 Mi values: widening a whole block to float64 would take 8x its bytes.
  void add(const torch::Tensor& pixels) {
    constexpr std::int64_t kPiece = 1 << 22;
    const auto flat = pixels.reshape({-1});
    for (std::int64_t first = 0; first < flat.numel(); first += kPiece) {
      const auto f = flat.narrow(0, first, std::min(kPiece, flat.numel() - first)).to(torch::kFloat64);
      sum += f.sum().item<double>();
      sum_sq += f.square().sum().item<double>();
    }
    count += pixels.numel();
    if (pixels.numel() == 0) return;
    min = std::min(min, static_cast<int>(pixels.min().item<std::uint8_t>()));
    max = std::max(max, static_cast<int>(pixels.max().item<std::uint8_t>()));
  }
  PixelStats stats() const {
    PixelStats s;
    if (count == 0) return s;
    s.mean = sum / static_cast<double>(count);
    s.std = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(count) - s.mean * s.mean));
    s.min = min;
    s.max = max;
    return s;
  }
};

}  // namespace

SplitStats compute_split_stats(const PairedDataset& dataset, const std::string& split, std::int64_t sample) {
  const SplitInfo& info = dataset.split(split);
  const std::int64_t n = (sample <= 0 || sample >= info.count) ? info.count : sample;
  const std::int64_t block = pairs_per_read_block(info, kBlockPairs);
  Accumulator a, b;
  SplitStats stats;
  for (std::int64_t first = 0; first < n; first += block) {
    const std::int64_t last = std::min(n, first + block);
    std::vector<std::int64_t> indices;  // n evenly spread pairs, a block at a time
    for (std::int64_t i = first; i < last; ++i) indices.push_back(i * info.count / n);
    const PairBatch batch = dataset.read(split, indices);
    a.add(batch.a);
    b.add(batch.b);
    if (batch.labels.defined()) {
      const auto* labels = batch.labels.data_ptr<std::int32_t>();
      for (std::int64_t i = 0; i < batch.labels.numel(); ++i) ++stats.label_counts[labels[i]];
    }
  }
  stats.pairs_read = n;
  stats.a = a.stats();
  stats.b = b.stats();
  return stats;
}

std::vector<std::string> check_dataset(const PairedDataset& dataset, int part, int parts) {
  if (parts < 1 || part < 0 || part >= parts)
    throw Error("check_dataset: part " + std::to_string(part) + " of " + std::to_string(parts));
  std::vector<std::string> problems;
  for (const std::string& split : dataset.split_names()) {
    const SplitInfo& info = dataset.split(split);
    if (!info.one_image_per_chunk && part == 0)
      problems.push_back("/" + split + ": A/B are not chunked one image per chunk [1, H, W, C]");
    const std::int64_t block = pairs_per_read_block(info, kBlockPairs);
    for (std::int64_t first = part * block; first < info.count; first += parts * block) {
      throw_if_interrupted("checking " + dataset.path());
      const std::int64_t last = std::min(info.count, first + block);
      std::vector<std::int64_t> indices(static_cast<size_t>(last - first));
      for (std::int64_t i = first; i < last; ++i) indices[static_cast<size_t>(i - first)] = i;
      try {
        const PairBatch batch = dataset.read(split, indices);
        if (batch.labels.defined()) {
          const auto lowest = batch.labels.min().item<std::int32_t>();
          if (lowest < 0)
            problems.push_back("/" + split + "/labels: negative label " + std::to_string(lowest) + " in pairs " +
                               std::to_string(first) + ".." + std::to_string(last - 1));
        }
        dataset.read_names(split, indices);
      } catch (const Error& e) {
        problems.push_back("/" + split + ": pairs " + std::to_string(first) + ".." + std::to_string(last - 1) +
                           " unreadable: " + e.what());
        return problems;
      }
    }
  }
  return problems;
}

}  // namespace pix2pix::data
