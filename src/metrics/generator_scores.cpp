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
  scores.fake_pixels = to_pixels(fake);
  const auto real_px = to_pixels(b_in);
  const auto cpu64 = [](const torch::Tensor& t) { return t.to(torch::kCPU, torch::kFloat64); };
  scores.psnr = cpu64(psnr_per_image(scores.fake_pixels, real_px));
  scores.ssim = cpu64(ssim_per_image(scores.fake_pixels, real_px));
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
  scores.there_pixels = to_pixels(translated.to(torch::kFloat32));
  scores.back_pixels = to_pixels(reconstructed.to(torch::kFloat32));
  scores.psnr = psnr_per_image(scores.back_pixels, to_pixels(input)).to(torch::kCPU, torch::kFloat64);
  return scores;
}

}  // namespace pix2pix::metrics
