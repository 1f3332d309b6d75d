#include "pix2pix/train/validator.hpp"

#include <numeric>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/metrics/image_metrics.hpp"

namespace pix2pix::train {
namespace {

// [n, C, H, W] pixels → [n, H, W, channels] uint8, grey replicated to RGB when needed.
torch::Tensor to_rows(const torch::Tensor& pixels, std::int64_t channels) {
  auto t = pixels;
  if (t.size(1) != channels) t = t.expand({t.size(0), channels, t.size(2), t.size(3)});
  return t.permute({0, 2, 3, 1}).to(torch::kUInt8);
}

}  // namespace

torch::Tensor mean_target_image(const data::PairedDataset& dataset, const std::string& split, std::int64_t max_pairs,
                                data::Domain domain) {
  const auto& info = dataset.split(split);
  const std::int64_t count = info.images(domain);
  const std::int64_t n = std::min(count, max_pairs);
  torch::Tensor sum;
  const std::int64_t block = data::pairs_per_read_block(info, 1024);
  for (std::int64_t first = 0; first < n; first += block) {
    std::vector<std::int64_t> indices;
    for (std::int64_t i = first; i < std::min(n, first + block); ++i) indices.push_back(i * count / n);
    const auto b = dataset.read_images(split, domain, indices).to(torch::kFloat64).sum(0);
    sum = sum.defined() ? sum + b : b;
    throw_if_interrupted("computing the mean training image");
  }
  return (sum / static_cast<double>(n)).permute({2, 0, 1}).to(torch::kFloat32);
}

double Validator::baseline_psnr(const torch::Tensor& mean_b) const {
  const auto real = b_.permute({0, 3, 1, 2}).to(torch::kFloat32);
  const auto guess = mean_b.to(real.device()).round().unsqueeze(0).expand_as(real);
  return metrics::psnr_per_image(guess, real).mean().item<double>();
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
  const auto u8 = torch::TensorOptions(torch::kUInt8).device(device);
  allocating(bytes, what, [&] {
    a_ = torch::empty({info.count, info.height, info.width, info.channels_a}, u8);
    b_ = torch::empty({info.count_b, info.height, info.width, info.channels_b}, u8);
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
    correct +=
        recognition_
            ->correct(data::to_model_input(b_.narrow(0, first, count)), labels_.narrow(0, first, count), precision_)
            .item<std::int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

PairScores score_pairs(nets::Generator& generator, const torch::Tensor& a, const torch::Tensor& b,
                       const torch::Device& device, optim::Precision precision) {
  torch::NoGradGuard no_grad;
  const auto a_in = data::to_model_input(a), b_in = data::to_model_input(b);
  torch::Tensor fake;
  {
    optim::AutocastGuard autocast(device, precision);
    fake = generator->forward(a_in);
  }
  fake = fake.to(torch::kFloat32);
  PairScores scores;
  scores.fake_pixels = metrics::to_pixels(fake);
  const auto real_px = metrics::to_pixels(b_in);
  const auto cpu64 = [](const torch::Tensor& t) { return t.to(torch::kCPU, torch::kFloat64); };
  scores.psnr = cpu64(metrics::psnr_per_image(scores.fake_pixels, real_px));
  scores.ssim = cpu64(metrics::ssim_per_image(scores.fake_pixels, real_px));
  scores.l1 = cpu64((fake - b_in).abs().mean({1, 2, 3}));
  return scores;
}

CycleScores score_cycle(nets::Generator& there, nets::Generator& back, const torch::Tensor& images,
                        const torch::Device& device, optim::Precision precision) {
  torch::NoGradGuard no_grad;
  const auto input = data::to_model_input(images);
  torch::Tensor translated, reconstructed;
  {
    optim::AutocastGuard autocast(device, precision);
    translated = there->forward(input);
    reconstructed = back->forward(translated);
  }
  CycleScores scores;
  scores.there_pixels = metrics::to_pixels(translated.to(torch::kFloat32));
  scores.back_pixels = metrics::to_pixels(reconstructed.to(torch::kFloat32));
  scores.psnr = metrics::psnr_per_image(scores.back_pixels, metrics::to_pixels(input)).to(torch::kCPU, torch::kFloat64);
  return scores;
}

torch::Tensor sample_rows(const torch::Tensor& a_pixels, const torch::Tensor& fake_pixels,
                          const torch::Tensor& real_pixels) {
  const std::int64_t channels = std::max({a_pixels.size(1), fake_pixels.size(1), real_pixels.size(1)});
  return torch::cat({to_rows(a_pixels, channels), to_rows(fake_pixels, channels), to_rows(real_pixels, channels)},
                    /*dim=*/2);
}

torch::Tensor stack_rows(const std::vector<torch::Tensor>& rows) {
  const auto all_rows = torch::cat(rows, 0);  // [k, H, 3W, C]
  return all_rows.reshape({all_rows.size(0) * all_rows.size(1), all_rows.size(2), all_rows.size(3)}).cpu();
}

ValidationResult Validator::run(nets::Generator& generator, nets::Generator* back, nets::ValMode mode, bool deviation) {
  if (!paired_ && back == nullptr && !deviation)
    throw Error(
        "the val split is unpaired: validating it needs a generator back (B to A) for the cycle PSNR, "
        "or the deviation PSNR");
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
  const auto pixels = [](const torch::Tensor& u8, std::int64_t take) {
    return u8.narrow(0, 0, take).permute({0, 3, 1, 2}).to(torch::kFloat32);
  };

  ValidationResult result;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  result.psnr = result.ssim = result.l1 = kNaN;
  std::vector<torch::Tensor> rows;
  if (paired_) {
    double psnr_sum = 0, ssim_sum = 0, l1_sum = 0;
    std::int64_t correct = 0;
    const std::int64_t n = a_.size(0);
    for (std::int64_t first = 0; first < n; first += batch_size_) {
      const std::int64_t count = std::min(batch_size_, n - first);
      const auto a = a_.narrow(0, first, count), b = b_.narrow(0, first, count);
      const PairScores scores = score_pairs(generator, a, b, device_, precision_);
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
        rows.push_back(sample_rows(pixels(a, take), scores.fake_pixels.narrow(0, 0, take), pixels(b, take)));
      }
    }
    result.psnr = psnr_sum / static_cast<double>(n);
    result.ssim = ssim_sum / static_cast<double>(n);
    result.l1 = l1_sum / static_cast<double>(n);
    if (recognition_) result.recognition = static_cast<double>(correct) / static_cast<double>(n);
  }
  if (back != nullptr) {
    // A → B → A over A's images, B → A → B over B's; an unpaired split's samples are A | G(A) | back(G(A)).
    double cycle_sum = 0;
    for (const bool from_a : {true, false}) {
      const torch::Tensor& images = from_a ? a_ : b_;
      for (std::int64_t first = 0; first < images.size(0); first += batch_size_) {
        const std::int64_t count = std::min(batch_size_, images.size(0) - first);
        const auto x = images.narrow(0, first, count);
        const CycleScores scores = from_a ? score_cycle(generator, *back, x, device_, precision_)
                                          : score_cycle(*back, generator, x, device_, precision_);
        cycle_sum += scores.psnr.sum().item<double>();
        if (!paired_ && from_a && first < sample_count_) {
          const std::int64_t take = std::min(count, sample_count_ - first);
          rows.push_back(sample_rows(pixels(x, take), scores.there_pixels.narrow(0, 0, take),
                                     scores.back_pixels.narrow(0, 0, take)));
        }
      }
    }
    result.cycle_psnr = cycle_sum / static_cast<double>(a_.size(0) + b_.size(0));
  }
  if (deviation) {
    // G(B) against B over B's images (score_pairs of B with itself); an unpaired split without a
    // generator back shows A | G(A) | a B image.
    double deviation_sum = 0;
    for (std::int64_t first = 0; first < b_.size(0); first += batch_size_) {
      const auto b = b_.narrow(0, first, std::min(batch_size_, b_.size(0) - first));
      deviation_sum += score_pairs(generator, b, b, device_, precision_).psnr.sum().item<double>();
    }
    result.deviation_psnr = deviation_sum / static_cast<double>(b_.size(0));
    const std::int64_t take = std::min({sample_count_, a_.size(0), b_.size(0)});
    if (!paired_ && back == nullptr && take > 0) {
      const auto a = a_.narrow(0, 0, take);
      rows.push_back(sample_rows(pixels(a, take), score_pairs(generator, a, a, device_, precision_).fake_pixels,
                                 pixels(b_, take)));
    }
  }
  result.images = a_.size(0) + (paired_ ? 0 : b_.size(0));
  if (!rows.empty()) result.sample_grid = stack_rows(rows);

  for (size_t g = 0; g < generators.size(); ++g) {
    const auto buffers = (*generators[g])->buffers();
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved_buffers[g][i]);
    (*generators[g])->train(was_training[g]);
  }
  return result;
}

}  // namespace pix2pix::train
