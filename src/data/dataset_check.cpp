// Statistics and checks are computed in blocks so a file of any size is inspected in bounded memory.
#include "pix2pix/data/dataset_check.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "pix2pix/common/error.hpp"

namespace pix2pix::data {
namespace {

constexpr std::int64_t kBlockPairs = 256;

struct Accumulator {
  double sum = 0, sum_sq = 0;
  std::int64_t count = 0;
  int min = 255, max = 0;
  void add(const torch::Tensor& pixels) {
    const auto f = pixels.to(torch::kFloat64);
    sum += f.sum().item<double>();
    sum_sq += f.square().sum().item<double>();
    count += pixels.numel();
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
  std::vector<std::int64_t> indices(static_cast<size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) indices[static_cast<size_t>(i)] = i * info.count / n;
  Accumulator a, b;
  SplitStats stats;
  for (std::int64_t first = 0; first < n; first += kBlockPairs) {
    const std::int64_t last = std::min(n, first + kBlockPairs);
    const PairBatch batch =
        dataset.read(split, std::vector<std::int64_t>(indices.begin() + first, indices.begin() + last));
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
    for (std::int64_t first = part * kBlockPairs; first < info.count; first += parts * kBlockPairs) {
      const std::int64_t last = std::min(info.count, first + kBlockPairs);
      std::vector<std::int64_t> block(static_cast<size_t>(last - first));
      for (std::int64_t i = first; i < last; ++i) block[static_cast<size_t>(i - first)] = i;
      try {
        const PairBatch batch = dataset.read(split, block);
        if (batch.labels.defined()) {
          const auto lowest = batch.labels.min().item<std::int32_t>();
          if (lowest < 0)
            problems.push_back("/" + split + "/labels: negative label " + std::to_string(lowest) + " in pairs " +
                               std::to_string(first) + ".." + std::to_string(last - 1));
        }
        dataset.read_names(split, block);
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
