// Validation on rank 0: the generator on the whole val split, PSNR/SSIM on [0, 255], L1 on
// [-1, 1], and a sample grid (rows A | G(A) | B) for the run directory; with the model's content
// score (gan/content_score.hpp) also that, which is what an unpaired val split has instead.
#pragma once

#include <torch/torch.h>

#include <limits>
#include <memory>

#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/gan/content_score.hpp"
#include "pix2pix/gan/recognition_loss.hpp"
#include "pix2pix/metrics/feature_network.hpp"
#include "pix2pix/metrics/generator_scores.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/optim/precision.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::train {

struct ValidationResult {
  double psnr = 0;  // mean over images of the per-image PSNR of G(A) against B (capped for identical images)
  double ssim = 0;  // psnr, ssim, l1: NaN when the val split is unpaired
  double l1 = 0;
  // The model's content score (its ContentScore::name says which); NaN without one.
  double content_psnr = std::numeric_limits<double>::quiet_NaN();
  double recognition = std::numeric_limits<double>::quiet_NaN();  // top-1 on G(A), with a classifier
  // With measure_features: FID and KID (its mean) of every G(A) against every val B image.
  double fid = std::numeric_limits<double>::quiet_NaN(), kid = std::numeric_limits<double>::quiet_NaN();
  std::int64_t images = 0;
  torch::Tensor sample_grid;  // a labelled sheet of rows (metrics::sample_sheet) on the CPU
};

class Validator {
 public:
  // Reads the whole val split once onto `device` (it is small next to train); with a
  // `recognition` classifier (--aux-classifier; it must outlive this) its labels too, and every
  // run also reports the classifier's accuracy on G(A). An unpaired val split (format version 3)
  // is validated by the model's content score only.
  Validator(const data::PairedDataset& dataset, std::int64_t batch_size, std::int64_t sample_count,
            torch::Device device, optim::Precision precision, gan::RecognitionLoss* recognition = nullptr);
  // `mode` eval: norm layers use running statistics and dropout is off. train: as during
  // training (common in pix2pix practice); norm buffers are restored afterwards, so validating
  // never changes the model.
  // `back` (may be null): the generator B → A, run in `mode` too and handed to `content`. An
  // unpaired split needs `content` (Error without), whose rows are then its samples.
  ValidationResult run(nets::Generator& generator, nets::Generator* back, nets::ValMode mode,
                       const gan::ContentScore* content = nullptr);
  std::int64_t size() const { return a_.size(0); }  // pairs, or A images when unpaired
  std::int64_t size_b() const { return b_.size(0); }
  bool paired() const { return paired_; }
  // PSNR of the trivial baseline that predicts `mean_b` (float [C, H, W] of B's stored values) for
  // every val pair: what a model must beat to have learned anything about A.
  double baseline_psnr(const torch::Tensor& mean_b) const;
  // The classifier's accuracy on the real B images: the ceiling for G(A)'s (needs `recognition`).
  double real_recognition() const;
  // From now on each run also gives the FID and KID of G(A) against the B images, measured with
  // `network` (it must outlive this); the B images' features are computed here, once. KID's
  // subsets are drawn from `seed`, the same at every run.
  void measure_features(metrics::FeatureNetwork& network, std::int64_t kid_subsets, std::int64_t kid_subset_size,
                        std::uint64_t seed);

 private:
  torch::Tensor a_, b_;  // stored values NHWC on the device (unpaired: A's and B's images, in their own numbers)
  data::DomainSamples samples_a_, samples_b_;
  bool paired_ = true;
  torch::Tensor labels_;  // int64 [n] on the device, with a classifier
  std::int64_t batch_size_, sample_count_;
  torch::Device device_;
  optim::Precision precision_;
  gan::RecognitionLoss* recognition_;
  metrics::FeatureNetwork* features_ = nullptr;
  torch::Tensor real_features_;  // float32 [B images, D] on the CPU
  std::int64_t kid_subsets_ = 0, kid_subset_size_ = 0;
  std::uint64_t kid_seed_ = 0;
};

}  // namespace pix2pix::train
