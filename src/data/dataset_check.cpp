// Statistics and checks are computed in blocks of at most 256 pairs and about 64 MiB
// (pairs_per_read_block), so a file of any size and image size is inspected in bounded memory.
#include "pix2pix/data/dataset_check.hpp"

#include <torch/torch.h>

#include <algorithm>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/data/samples.hpp"

namespace pix2pix::data {
namespace {

constexpr std::int64_t kBlockPairs = 256;

struct Accumulator {
  double sum = 0, sum_sq = 0;
  std::int64_t count = 0;
  double min = 0, max = 0;
  // In pieces of 4 Mi values: widening a whole block to float64 would take 8x its bytes.
  void add(const torch::Tensor& pixels) {
    constexpr std::int64_t kPiece = 1 << 22;
    const auto flat = pixels.reshape({-1});
    for (std::int64_t first = 0; first < flat.numel(); first += kPiece) {
      const auto f = flat.narrow(0, first, std::min(kPiece, flat.numel() - first)).to(torch::kFloat64);
      sum += f.sum().item<double>();
      sum_sq += f.square().sum().item<double>();
    }
    if (pixels.numel() == 0) return;
    const double lowest = pixels.min().item<double>(), highest = pixels.max().item<double>();
    min = count == 0 ? lowest : std::min(min, lowest);
    max = count == 0 ? highest : std::max(max, highest);
    count += pixels.numel();
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

namespace {
// `n` indices spread evenly over [0, count), those of [first, last).
std::vector<std::int64_t> spread(std::int64_t count, std::int64_t n, std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> indices;
  for (std::int64_t i = first; i < last; ++i) indices.push_back(i * count / n);
  return indices;
}
}  // namespace

SplitStats compute_split_stats(const PairedDataset& dataset, const std::string& split, std::int64_t sample) {
  const SplitInfo& info = dataset.split(split);
  const auto sampled = [sample](std::int64_t count) { return (sample <= 0 || sample >= count) ? count : sample; };
  const std::int64_t block = pairs_per_read_block(info, kBlockPairs);
  Accumulator a, b;
  SplitStats stats;
  if (info.paired) {
    const std::int64_t n = sampled(info.count);
    for (std::int64_t first = 0; first < n; first += block) {
      const PairBatch batch = dataset.read(split, spread(info.count, n, first, std::min(n, first + block)));
      a.add(batch.a);
      b.add(batch.b);
      if (batch.labels.defined()) {
        const auto* labels = batch.labels.data_ptr<std::int32_t>();
        for (std::int64_t i = 0; i < batch.labels.numel(); ++i) ++stats.label_counts[labels[i]];
      }
    }
    stats.pairs_read = stats.images_b_read = n;
  } else {
    for (const Domain domain : {Domain::A, Domain::B}) {
      const std::int64_t count = info.images(domain), n = sampled(count);
      for (std::int64_t first = 0; first < n; first += block)
        (domain == Domain::A ? a : b)
            .add(dataset.read_images(split, domain, spread(count, n, first, std::min(n, first + block))));
      (domain == Domain::A ? stats.pairs_read : stats.images_b_read) = n;
    }
  }
  stats.a = a.stats();
  stats.b = b.stats();
  return stats;
}

namespace {
// Values of `images` (one domain's) outside its range; a problem when float values are not finite,
// naming the first one by its pair (or image) index in the split and its pixel. In pieces of 4 Mi
// values, as Accumulator: the masks would otherwise take a block's size again.
std::int64_t count_outside(const torch::Tensor& images, const DomainSamples& samples,
                           const std::vector<std::int64_t>& indices, const std::string& where, const std::string& unit,
                           std::vector<std::string>* problems) {
  // Integer data on its type's whole range cannot lie outside it (every 8-bit file).
  if (images.numel() == 0 || samples.range == natural_range(samples.type)) return 0;
  constexpr std::int64_t kPiece = 1 << 22;
  const auto flat = images.reshape({-1});
  std::int64_t outside = 0, non_finite = 0;
  for (std::int64_t first = 0; first < flat.numel(); first += kPiece) {
    const auto piece = flat.narrow(0, first, std::min(kPiece, flat.numel() - first));
    if (!is_integer(samples.type)) non_finite += (~torch::isfinite(piece)).sum().item<std::int64_t>();
    outside += piece.lt(samples.range.lo).logical_or_(piece.gt(samples.range.hi)).sum().item<std::int64_t>();
  }
  if (const auto bad = non_finite > 0 ? first_non_finite(images) : std::nullopt)
    problems->push_back(where + ": " + unit + " " + std::to_string(indices[static_cast<std::size_t>(bad->image)]) +
                        " holds " + bad->describe() + " (" + std::to_string(non_finite) +
                        " NaN or infinite values in these " + unit + "s " + std::to_string(indices.front()) + ".." +
                        std::to_string(indices.back()) + ")");
  return outside;
}
}  // namespace

std::vector<std::string> check_dataset(const PairedDataset& dataset, int part, int parts, ValuesOutside* outside) {
  if (parts < 1 || part < 0 || part >= parts)
    throw Error("check_dataset: part " + std::to_string(part) + " of " + std::to_string(parts));
  std::vector<std::string> problems;
  for (const std::string& split : dataset.split_names()) {
    const SplitInfo& info = dataset.split(split);
    if (!info.one_image_per_chunk && part == 0)
      problems.push_back("/" + split + ": A/B are not chunked one image per chunk [1, H, W, C]");
    const std::int64_t block = pairs_per_read_block(info, kBlockPairs);
    // A paired split is read pair by pair (labels and names with them); an unpaired one domain by domain.
    for (const Domain domain : {Domain::A, Domain::B}) {
      if (info.paired && domain == Domain::B) break;
      const std::int64_t count = info.images(domain);
      const std::string what = info.paired ? "pairs" : std::string(format::images_of(domain)) + " images";
      for (std::int64_t first = part * block; first < count; first += parts * block) {
        throw_if_interrupted("checking " + dataset.path());
        const std::int64_t last = std::min(count, first + block);
        const std::vector<std::int64_t> indices = spread(count, count, first, last);
        try {
          const auto count = [&](const torch::Tensor& images, Domain of) {
            const std::int64_t n =
                count_outside(images, info.samples(of), indices, "/" + split + "/" + format::images_of(of),
                              info.paired ? "pair" : "image", &problems);
            if (outside) (of == Domain::A ? outside->a : outside->b) += n;
          };
          if (info.paired) {
            const PairBatch batch = dataset.read(split, indices);
            count(batch.a, Domain::A);
            count(batch.b, Domain::B);
            if (batch.labels.defined()) {
              const auto lowest = batch.labels.min().item<std::int32_t>();
              const auto highest = batch.labels.max().item<std::int32_t>();
              if (lowest < 0)
                problems.push_back("/" + split + "/labels: negative label " + std::to_string(lowest) + " in pairs " +
                                   std::to_string(first) + ".." + std::to_string(last - 1));
              if (highest >= format::kMaxClasses)
                problems.push_back("/" + split + "/labels: label " + std::to_string(highest) + " in pairs " +
                                   std::to_string(first) + ".." + std::to_string(last - 1) +
                                   " is beyond the format's limit of " + std::to_string(format::kMaxClasses) +
                                   " classes");
            }
          } else {
            count(dataset.read_images(split, domain, indices), domain);
          }
          dataset.read_names(split, indices, domain);
        } catch (const Error& e) {
          problems.push_back("/" + split + ": " + what + " " + std::to_string(first) + ".." + std::to_string(last - 1) +
                             " unreadable: " + e.what());
          return problems;
        }
      }
    }
  }
  return problems;
}

}  // namespace pix2pix::data
