#include "pix2pix/metrics/generator_scores.hpp"

#include <algorithm>

#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/metrics/image_metrics.hpp"

namespace pix2pix::metrics {

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

torch::Tensor display_pixels(const torch::Tensor& nhwc, const data::DomainSamples& samples) {
  if (samples.is_byte_default()) return nhwc.permute({0, 3, 1, 2}).to(torch::kFloat32);
  return to_pixels(data::to_model_input(nhwc, samples.range));
}

PairScores score_pairs(nets::Generator& generator, const torch::Tensor& a, const torch::Tensor& b,
                       const torch::Device& device, optim::Precision precision, const data::DomainSamples& samples_a,
                       const data::DomainSamples& samples_b) {
  torch::NoGradGuard no_grad;
  const auto a_in = data::to_model_input(a, samples_a.range), b_in = data::to_model_input(b, samples_b.range);
  torch::Tensor fake;
  {
    optim::AutocastGuard autocast(device, precision);
    fake = generator->forward(a_in);
  }
  fake = fake.to(torch::kFloat32);
  PairScores scores;
  // For 8-bit data the values are the pixels: to_samples of [0, 255] is to_pixels.
  const auto fake_values = data::to_samples(fake, samples_b);
  const auto real_values = data::to_samples(b_in, samples_b);
  scores.fake_pixels = samples_b.is_byte_default() ? fake_values : to_pixels(fake);
  const auto cpu64 = [](const torch::Tensor& t) { return t.to(torch::kCPU, torch::kFloat64); };
  const double peak = samples_b.range.peak();
  scores.psnr = cpu64(psnr_per_image(fake_values, real_values, peak));
  scores.ssim = cpu64(ssim_per_image(fake_values, real_values, peak));
  scores.l1 = cpu64((fake - b_in).abs().mean({1, 2, 3}));
  return scores;
}

CycleScores score_cycle(nets::Generator& there, nets::Generator& back, const torch::Tensor& images,
                        const torch::Device& device, optim::Precision precision, const data::DomainSamples& samples) {
  torch::NoGradGuard no_grad;
  const auto input = data::to_model_input(images, samples.range);
  torch::Tensor translated, reconstructed;
  {
    optim::AutocastGuard autocast(device, precision);
    translated = there->forward(input);
    reconstructed = back->forward(translated);
  }
  CycleScores scores;
  scores.there_pixels = to_pixels(translated.to(torch::kFloat32));
  const auto back_values = data::to_samples(reconstructed.to(torch::kFloat32), samples);
  scores.back_pixels = samples.is_byte_default() ? back_values : to_pixels(reconstructed.to(torch::kFloat32));
  scores.psnr = psnr_per_image(back_values, data::to_samples(input, samples), samples.range.peak())
                    .to(torch::kCPU, torch::kFloat64);
  return scores;
}

}  // namespace pix2pix::metrics
