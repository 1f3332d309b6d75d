#include "pix2pix/infer/evaluation.hpp"

#include <cmath>
#include <numeric>
#include <tuple>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/gan/recognition_loss.hpp"
#include "pix2pix/metrics/generator_scores.hpp"
#include "pix2pix/metrics/image_metrics.hpp"
#include "pix2pix/metrics/sample_sheet.hpp"

namespace pix2pix::infer {

std::string default_split(const data::PairedDataset& dataset) {
  return dataset.has_split(data::format::kTest) ? data::format::kTest : data::format::kVal;
}

void check_generator_fits(const nets::GeneratorOptions& g, const data::PairedDataset& dataset, const std::string& split,
                          bool b_to_a) {
  const std::string where = dataset.path() + ": ";
  if (!dataset.has_split(split)) {
    std::string present;
    for (const auto& name : dataset.split_names()) present += (present.empty() ? "" : ", ") + name;
    throw Error(where + "has no " + split + " split (it has " + present + ")");
  }
  const auto& info = dataset.split(split);
  if (info.count == 0) throw Error(where + "/" + split + " has no pairs");
  if (!info.paired)
    throw Error(where + "/" + split +
                " is unpaired (its A and B images are not pairs): evaluate scores G(A) against the B of each pair; "
                "give a paired split (--split), or translate the split's images with `pix2pix translate`");
  const std::int64_t from = b_to_a ? info.channels_b : info.channels_a, to = b_to_a ? info.channels_a : info.channels_b;
  if (from != g.in_channels || to != g.out_channels)
    throw Error(where + "/" + split + " pairs have " + std::to_string(from) + " -> " + std::to_string(to) +
                " channels" + (b_to_a ? " (B -> A)" : "") + "; the generator takes " + std::to_string(g.in_channels) +
                " -> " + std::to_string(g.out_channels));
  nets::check_generator_input(g, info.height, info.width, where + "/" + split + " images");
}

void check_trained_values(const checkpoint::TrainedOn& trained_on, const std::string& generator_path,
                          const data::PairedDataset& dataset) {
  const data::SplitInfo& info = dataset.split(data::format::kTrain);
  for (const auto& [name, then, here] :
       {std::tuple{"A", trained_on.samples_a, info.samples_a}, std::tuple{"B", trained_on.samples_b, info.samples_b}})
    if (then != here)
      throw Error(dataset.path() + ": its " + name + " holds " + data::to_string(here) + ", but the generator of " +
                  generator_path + " was trained on " + name + " values " + data::to_string(then) +
                  ": the same value would be another input to it");
}

void check_classifier_fits_split(const checkpoint::SavedClassifier& classifier, const data::PairedDataset& dataset,
                                 const std::string& split) {
  const auto& info = dataset.split(split);
  const std::int32_t high = checkpoint::largest_label(dataset, split, "--aux-classifier");
  checkpoint::check_classifier_fits(classifier, {info.channels_b, info.height, info.width, high}, "--aux-classifier");
}

Evaluation evaluate(nets::Generator& generator, const data::PairedDataset& dataset, const torch::Tensor& mean_b,
                    const EvaluationOptions& options, dist::Communicator& comm) {
  Evaluation result = evaluate_share(generator, dataset, mean_b, options, comm.rank(), comm.world());
  // Every row is written by exactly one rank and is zero elsewhere, so the sum is exact.
  comm.allreduce_sum(result.scores);
  for (auto* features : {&result.generated_features, &result.real_features})
    if (features->defined()) comm.allreduce_sum(*features);
  // See Note [non-finite values stop a run]: a NaN score is no result. Every rank holds every
  // score, so every rank refuses alike.
  const auto scored = result.scores.narrow(1, kPsnr, kL1 - kPsnr + 1);
  if (scored.numel() > 0 && !torch::isfinite(scored).all().item<bool>()) {
    const auto first = (~torch::isfinite(scored)).nonzero()[0];
    const std::int64_t image = first[0].item<std::int64_t>(), column = first[1].item<std::int64_t>();
    const double value = scored[image][column].item<double>();
    throw Error("evaluate: image " + std::to_string(image) + " of /" + result.split + ": its " +
                (column == 0   ? "PSNR"
                 : column == 1 ? "SSIM"
                               : "L1") +
                " is " +
                (std::isnan(value) ? "NaN"
                 : value > 0       ? "+inf"
                                   : "-inf") +
                ": the generator's output is not finite there (NaN or infinite values); nothing is written");
  }
  return result;
}

Evaluation evaluate_share(nets::Generator& generator, const data::PairedDataset& dataset, const torch::Tensor& mean_b,
                          const EvaluationOptions& options, int rank_, int world_) {
  if (options.batch_size < 1) throw Error("--batch-size must be at least 1");
  Evaluation result;
  result.split = options.split.empty() ? default_split(dataset) : options.split;
  check_generator_fits(generator->options(), dataset, result.split, options.b_to_a);
  if (options.classifier && options.b_to_a)
    throw UsageError("--aux-classifier judges B-domain images; --direction BtoA makes A-domain ones");
  if (options.classifier) check_classifier_fits_split(*options.classifier, dataset, result.split);
  const std::int64_t n = dataset.split(result.split).count;
  const std::int64_t batches = (n + options.batch_size - 1) / options.batch_size;
  const std::int64_t rank = rank_, world = world_;
  // Rank 0 also runs the first batches when another rank owns them, for its sample grid.
  const std::int64_t sample_batches =
      rank == 0 ? (std::min(options.sample_count, n) + options.batch_size - 1) / options.batch_size : 0;

  generator->train(options.mode == nets::ValMode::train);
  // What the generator translates from and is scored on (swapped for BtoA).
  const data::SplitInfo& info = dataset.split(result.split);
  const data::DomainSamples& from = options.b_to_a ? info.samples_b : info.samples_a;
  const data::DomainSamples& to = options.b_to_a ? info.samples_a : info.samples_b;
  auto guess = mean_b.to(torch::kFloat32);
  if (data::is_integer(to.type)) guess = guess.round();
  guess = guess.unsqueeze(0);
  result.scores = torch::zeros({n, kScoreColumns}, torch::kFloat64);
  if (options.features) {
    if (n < 2)
      throw Error(dataset.path() + ": /" + result.split + " has " + std::to_string(n) +
                  " image; FID and KID need at least 2 (--features)");
    // Every rank learns the feature width from the first target image, so that a rank without a
    // batch still holds rows of zeros of the right shape for the sum.
    const auto first = dataset.read(result.split, std::vector<std::int64_t>{0});
    const auto probe = options.features->features(metrics::display_pixels(options.b_to_a ? first.a : first.b, to));
    result.generated_features = torch::zeros({n, probe.size(1)}, torch::kFloat32);
    if (!options.real_features_known) result.real_features = torch::zeros({n, probe.size(1)}, torch::kFloat32);
  }
  std::vector<torch::Tensor> rows;
  std::int64_t own = 0;
  for (std::int64_t k = rank; k < batches; k += world) own += std::min(options.batch_size, n - k * options.batch_size);
  std::optional<Progress> progress;
  if (rank == 0) progress.emplace("evaluate", own * world, stderr, options.progress);
  for (std::int64_t k = 0; k < batches; ++k) {
    const bool owned = k % world == rank, for_samples = k < sample_batches;
    if (!owned && !for_samples) continue;
    throw_if_interrupted("evaluating");
    const std::int64_t first = k * options.batch_size, count = std::min(options.batch_size, n - first);
    std::vector<std::int64_t> indices(static_cast<size_t>(count));
    std::iota(indices.begin(), indices.end(), first);
    const auto pairs = dataset.read(result.split, indices);
    // `a` is what the generator translates, `b` what it is scored against (swapped for BtoA).
    const auto a = (options.b_to_a ? pairs.b : pairs.a).to(options.device);
    const auto b = (options.b_to_a ? pairs.a : pairs.b).to(options.device);
    // Train mode draws dropout masks: the same ones for batch k on any rank and any world size.
    if (options.mode == nets::ValMode::train)
      torch::manual_seed(options.seed * 1000003 + static_cast<std::uint64_t>(k));
    const metrics::PairScores s = metrics::score_pairs(generator, a, b, options.device, options.precision, from, to);
    const auto real = b.permute({0, 3, 1, 2}).to(torch::kFloat32);  // stored values
    if (owned) {
      auto block = result.scores.narrow(0, first, count);
      block.select(1, kPsnr).copy_(s.psnr);
      block.select(1, kSsim).copy_(s.ssim);
      block.select(1, kL1).copy_(s.l1);
      block.select(1, kBaselinePsnr)
          .copy_(metrics::psnr_per_image(guess.to(real.device()).expand_as(real), real, to.range.peak()));
      if (options.classifier) {
        // G(A) as an image file holds it (rounded pixels), as validation scores it.
        const auto recognised = [&](const torch::Tensor& images) {
          return gan::recognised_per_image(options.classifier->network, images, pairs.labels, options.device,
                                           options.precision)
              .to(torch::kCPU, torch::kFloat64);
        };
        block.select(1, kRecognised).copy_(recognised(s.fake_pixels / 127.5 - 1.0));
        block.select(1, kRealRecognised).copy_(recognised(data::to_model_input(b, to.range)));
      }
      if (options.features) {
        result.generated_features.narrow(0, first, count).copy_(options.features->features(s.fake_pixels));
        if (result.real_features.defined())
          result.real_features.narrow(0, first, count)
              .copy_(options.features->features(metrics::display_pixels(b, to)));
      }
      if (progress) progress->advance(count * world);
    }
    if (for_samples) {
      const std::int64_t take = std::min(count, options.sample_count - first);
      rows.push_back(metrics::sample_rows(metrics::display_pixels(a.narrow(0, 0, take), from),
                                          s.fake_pixels.narrow(0, 0, take),
                                          metrics::display_pixels(b.narrow(0, 0, take), to)));
    }
  }
  if (progress) progress->finish();
  if (!rows.empty())
    result.sample_grid =
        metrics::sample_sheet(rows, options.b_to_a ? metrics::SampleLabels{"input B", "output G_B(B)", "target A"}
                                                   : metrics::SampleLabels{"input A", "output G(A)", "target B"});
  return result;
}

Statistics summarise(const torch::Tensor& values) {
  const auto v = values.to(torch::kFloat64).contiguous();
  if (v.numel() < 1) throw Error("no values to summarise");
  Statistics s;
  s.mean = v.mean().item<double>();
  s.std = v.std(/*unbiased=*/false).item<double>();
  const auto sorted = std::get<0>(v.sort());
  const std::int64_t n = sorted.numel();
  s.median = n % 2 == 1 ? sorted[n / 2].item<double>()
                        : (sorted[n / 2 - 1].item<double>() + sorted[n / 2].item<double>()) / 2.0;
  s.min = sorted[0].item<double>();
  s.max = sorted[n - 1].item<double>();
  return s;
}

}  // namespace pix2pix::infer
