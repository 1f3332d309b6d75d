// `evaluate`: a trained generator scored image by image on one split of a dataset. Ranks take
// whole batches in turn and the scores are gathered, so N ranks give exactly what one process
// gives (batch composition, and with it train-mode batch statistics, does not change).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/metrics/feature_network.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/val_mode.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::infer {

struct EvaluationOptions {
  std::string split;              // the split scored (default_split when empty)
  std::int64_t batch_size = 16;   // images per forward pass
  std::int64_t sample_count = 8;  // rows A | G(A) | B of the sample grid
  torch::Device device{torch::kCPU};
  optim::Precision precision = optim::Precision::fp32;
  nets::ValMode mode = nets::ValMode::eval;  // eval: running statistics, no dropout
  std::uint64_t seed = 0;                    // train mode: dropout of batch k is seeded from (seed, k)
  std::optional<ProgressStyle> progress;
  // --aux-classifier (loaded frozen; must outlive the evaluation): each image also scored by
  // whether the classifier recognises G(A) and B as their label (kRecognised, kRealRecognised).
  checkpoint::SavedClassifier* classifier = nullptr;
  // --direction BtoA: the generator (a CycleGAN's G_B) translates each pair's B and is scored
  // against its A; the baseline is then the mean A image. No classifier (it judges B images).
  bool b_to_a = false;
  // --features (must outlive the evaluation): the features of every G(A) and, unless
  // `real_features_known` (read from the cache), of every target image, for FID and KID.
  metrics::FeatureNetwork* features = nullptr;
  bool real_features_known = false;
};

// The columns of Evaluation::scores.
// kRecognised, kRealRecognised: 1 or 0 with a classifier, 0 without.
enum ScoreColumn : std::int64_t { kPsnr = 0, kSsim, kL1, kBaselinePsnr, kRecognised, kRealRecognised, kScoreColumns };

struct Evaluation {
  std::string split;
  torch::Tensor scores;       // float64 [n, kScoreColumns] on the CPU, complete on every rank
  torch::Tensor sample_grid;  // a labelled sheet (metrics::sample_sheet) on the CPU (rank 0; undefined elsewhere)
  // With options.features: float32 [n, D] on the CPU, complete on every rank, row i of image i
  // (generated: of G(A) as its image file holds it; real: of the target, undefined when known).
  torch::Tensor generated_features, real_features;
};

// test when the dataset has one, else val.
std::string default_split(const data::PairedDataset& dataset);

// UsageError naming --aux-classifier when `split` has no labels or `classifier` does not fit its
// images or labels (checkpoint::check_classifier_fits).
void check_classifier_fits_split(const checkpoint::SavedClassifier& classifier, const data::PairedDataset& dataset,
                                 const std::string& split);

// Error naming the dataset when `split` is absent, empty, unpaired, or its images do not fit the
// generator (channel counts of A and B, of B and A when `b_to_a`; sides not a multiple of
// 2^num_downs).
void check_generator_fits(const nets::GeneratorOptions& generator, const data::PairedDataset& dataset,
                          const std::string& split, bool b_to_a = false);

// Error naming the generator file and the dataset when the values the generator was trained on
// (sample type and range of A and B: checkpoint::TrainedOn) are not those `dataset` stores: the
// same stored value would then mean another network input.
void check_trained_values(const checkpoint::TrainedOn& trained_on, const std::string& generator_path,
                          const data::PairedDataset& dataset);

// Scores every pair of `options.split`. `mean_b`: the mean training image of the target domain
// (B; A with b_to_a) as float [C, H, W] on [0, 255], the trivial baseline's constant prediction. Collective over
// `comm`: evaluate_share on every rank, then the shares summed.
Evaluation evaluate(nets::Generator& generator, const data::PairedDataset& dataset, const torch::Tensor& mean_b,
                    const EvaluationOptions& options, dist::Communicator& comm);

// What rank `rank` of `world` scores: batches rank, rank + world, ...; the other rows of `scores`
// are zero (so that a sum over ranks is exact). Rank 0 also makes the sample grid.
Evaluation evaluate_share(nets::Generator& generator, const data::PairedDataset& dataset, const torch::Tensor& mean_b,
                          const EvaluationOptions& options, int rank, int world);

struct Statistics {
  double mean = 0, std = 0, median = 0, min = 0, max = 0;  // std: of the population (divides by n)
};
// Of float64 values [n], n >= 1.
Statistics summarise(const torch::Tensor& values);

}  // namespace pix2pix::infer
