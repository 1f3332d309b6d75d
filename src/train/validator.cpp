#include "pix2pix/train/validator.hpp"

#include <numeric>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/metrics/feature_distance.hpp"
#include "pix2pix/metrics/image_metrics.hpp"
#include "pix2pix/metrics/sample_sheet.hpp"

namespace pix2pix::train {
double Validator::baseline_psnr(const torch::Tensor& mean_b) const {
  const auto real = b_.permute({0, 3, 1, 2}).to(torch::kFloat32);
  auto guess = mean_b.to(real.device());
  if (data::is_integer(samples_b_.type)) guess = guess.round();
  guess = guess.unsqueeze(0).expand_as(real);
  return metrics::psnr_per_image(guess, real, samples_b_.range.peak()).mean().item<double>();
}

Validator::Validator(const data::PairedDataset& dataset, std::int64_t batch_size, std::int64_t sample_count,
                     torch::Device device, optim::Precision precision, gan::RecognitionLoss* recognition)
    : batch_size_(batch_size),
      sample_count_(sample_count),
      device_(device),
      precision_(precision),
      recognition_(recognition) {
  if (batch_size < 1) throw Error("--val-batch-size must be at least 1");
  if (!dataset.has_split(data::format::kVal)) throw Error(dataset.path() + ": has no val split to validate on");
  // The whole val split stays on the device for every validation: it must fit, with room left
  // for the networks (half of what is free).
  const auto& info = dataset.split(data::format::kVal);
  paired_ = info.paired;
  const std::int64_t bytes = info.stored_bytes();
  const std::string what =
      dataset.path() + ": /val: its " +
      (paired_ ? std::to_string(info.count) + " pairs"
               : std::to_string(info.count) + " A and " + std::to_string(info.count_b) + " B images") +
      " (validation)";
  if (device.is_cuda()) {
    const std::int64_t free_bytes = dist::cache_memory(device, 1).device_bytes;
    if (free_bytes >= 0 && bytes > free_bytes / 2)
      throw Error(what + " need " + format_bytes(bytes) + ", more than half the GPU's free " +
                  format_bytes(free_bytes) + "; use a smaller val split");
  } else {
    require_memory(bytes, what, 0.5, "; use a smaller val split");
  }
  samples_a_ = info.samples_a;
  samples_b_ = info.samples_b;
  const auto stored = [&](const data::DomainSamples& samples) {
    return torch::TensorOptions(data::tensor_type(samples.type)).device(device);
  };
  allocating(bytes, what, [&] {
    a_ = torch::empty({info.count, info.height, info.width, info.channels_a}, stored(samples_a_));
    b_ = torch::empty({info.count_b, info.height, info.width, info.channels_b}, stored(samples_b_));
    return 0;
  });
  const std::int64_t block = data::pairs_per_read_block(info, 4096);
  for (const data::Domain domain : {data::Domain::A, data::Domain::B}) {
    torch::Tensor& images = domain == data::Domain::A ? a_ : b_;
    for (std::int64_t first = 0; first < images.size(0); first += block) {
      const std::int64_t n = std::min(block, images.size(0) - first);
      std::vector<std::int64_t> indices(static_cast<size_t>(n));
      std::iota(indices.begin(), indices.end(), first);
      images.narrow(0, first, n).copy_(dataset.read_images(data::format::kVal, domain, indices));
      throw_if_interrupted("reading the val split");
    }
  }
  if (recognition_) labels_ = dataset.read_labels(data::format::kVal).to(device_, torch::kInt64);
}

double Validator::real_recognition() const {
  if (!recognition_) throw Error("Validator::real_recognition: no classifier");
  std::int64_t correct = 0;
  const std::int64_t n = b_.size(0);
  for (std::int64_t first = 0; first < n; first += batch_size_) {
    const std::int64_t count = std::min(batch_size_, n - first);
    correct += recognition_
                   ->correct(data::to_model_input(b_.narrow(0, first, count), samples_b_.range),
                             labels_.narrow(0, first, count), precision_)
                   .item<std::int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

void Validator::measure_features(metrics::FeatureNetwork& network, std::int64_t kid_subsets,
                                 std::int64_t kid_subset_size, std::uint64_t seed) {
  if (b_.size(0) < 2)
    throw Error("--val-features: FID and KID need at least 2 val B images; the val split has " +
                std::to_string(b_.size(0)));
  features_ = &network;
  kid_subsets_ = kid_subsets, kid_subset_size_ = kid_subset_size, kid_seed_ = seed;
  std::vector<torch::Tensor> parts;
  for (std::int64_t first = 0; first < b_.size(0); first += batch_size_) {
    const auto b = b_.narrow(0, first, std::min(batch_size_, b_.size(0) - first));
    parts.push_back(network.features(metrics::display_pixels(b, samples_b_)));
    throw_if_interrupted("measuring the val B images' features");
  }
  real_features_ = torch::cat(parts, 0);
}

ValidationResult Validator::run(nets::Generator& generator, nets::Generator* back, nets::ValMode mode,
                                const gan::ContentScore* content) {
  if (!paired_ && content == nullptr)
    throw Error("the val split is unpaired: validating it needs the model's content score (no B pairs with an A)");
  torch::NoGradGuard no_grad;
  // Both generators run in `mode`; their norm buffers are restored afterwards.
  std::vector<nets::Generator*> generators = {&generator};
  if (back != nullptr) generators.push_back(back);
  std::vector<bool> was_training;
  std::vector<std::vector<torch::Tensor>> saved_buffers;
  for (nets::Generator* g : generators) {
    was_training.push_back((*g)->is_training());
    saved_buffers.emplace_back();
    for (const auto& b : (*g)->buffers()) saved_buffers.back().push_back(b.clone());
    (*g)->train(mode == nets::ValMode::train);
  }
  // The 8-bit view a sample grid shows of a domain's first `take` images.
  const auto pixels = [](const torch::Tensor& stored, std::int64_t take, const data::DomainSamples& samples) {
    return metrics::display_pixels(stored.narrow(0, 0, take), samples);
  };

  ValidationResult result;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  result.psnr = result.ssim = result.l1 = kNaN;
  std::vector<torch::Tensor> rows;
  metrics::SampleLabels labels;
  std::vector<torch::Tensor> generated;  // features of G(A), with measure_features
  if (paired_) {
    double psnr_sum = 0, ssim_sum = 0, l1_sum = 0;
    std::int64_t correct = 0;
    const std::int64_t n = a_.size(0);
    for (std::int64_t first = 0; first < n; first += batch_size_) {
      const std::int64_t count = std::min(batch_size_, n - first);
      const auto a = a_.narrow(0, first, count), b = b_.narrow(0, first, count);
      const metrics::PairScores scores =
          metrics::score_pairs(generator, a, b, device_, precision_, samples_a_, samples_b_);
      if (features_) generated.push_back(features_->features(scores.fake_pixels));
      psnr_sum += scores.psnr.sum().item<double>();
      ssim_sum += scores.ssim.sum().item<double>();
      l1_sum += scores.l1.sum().item<double>();
      if (recognition_) {
        // The classifier sees G(A) as an image file would hold it: rounded pixels, / 127.5 - 1.
        const auto fake_in = scores.fake_pixels / 127.5 - 1.0;
        correct += recognition_->correct(fake_in, labels_.narrow(0, first, count), precision_).item<std::int64_t>();
      }
      if (first < sample_count_) {
        const std::int64_t take = std::min(count, sample_count_ - first);
        rows.push_back(metrics::sample_rows(pixels(a, take, samples_a_), scores.fake_pixels.narrow(0, 0, take),
                                            pixels(b, take, samples_b_)));
        labels = {"input A", "output G(A)", "target B"};
      }
    }
    result.psnr = psnr_sum / static_cast<double>(n);
    result.ssim = ssim_sum / static_cast<double>(n);
    result.l1 = l1_sum / static_cast<double>(n);
    if (recognition_) result.recognition = static_cast<double>(correct) / static_cast<double>(n);
  }
  if (content != nullptr) {
    gan::ValImages images{a_,         b_,        samples_a_,  samples_b_,
                          &generator, back,      batch_size_, paired_ ? 0 : sample_count_,
                          device_,    precision_};
    gan::ContentResult scored = content->score(images);
    result.content_psnr = scored.psnr;
    if (!paired_) rows = std::move(scored.rows), labels = scored.labels;
  }
  if (features_) {
    // An unpaired split has not translated A yet (its content score may have, but keeps no features).
    if (generated.empty())
      for (std::int64_t first = 0; first < a_.size(0); first += batch_size_) {
        const auto a = a_.narrow(0, first, std::min(batch_size_, a_.size(0) - first));
        generated.push_back(features_->features(
            metrics::score_pairs(generator, a, a, device_, precision_, samples_a_, samples_b_).fake_pixels));
      }
    const auto fake = torch::cat(generated, 0);
    result.fid = metrics::frechet_distance(real_features_, fake);
    result.kid = metrics::kernel_distance(real_features_, fake, kid_subsets_, kid_subset_size_, kid_seed_).mean;
  }
  result.images = a_.size(0) + (paired_ ? 0 : b_.size(0));
  if (!rows.empty()) result.sample_grid = metrics::sample_sheet(rows, labels);

  for (size_t g = 0; g < generators.size(); ++g) {
    const auto buffers = (*generators[g])->buffers();
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved_buffers[g][i]);
    (*generators[g])->train(was_training[g]);
  }
  return result;
}

}  // namespace pix2pix::train
