// `pix2pix evaluate`: a trained generator scored on one split of a dataset (per-image PSNR, SSIM
// and L1 with the validator's functions), sharded over the ranks of an mpirun/srun job.
#include <chrono>
#include <cstdio>
#include <optional>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/feature_options.hpp"
#include "pix2pix/cli/inference_setup.hpp"
#include "pix2pix/cli/rank_agreement.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/npy_file.hpp"
#include "pix2pix/infer/evaluation_files.hpp"
#include "pix2pix/infer/feature_cache.hpp"
#include "pix2pix/metrics/generator_scores.hpp"

namespace pix2pix::cli {
namespace {

// The options, bound to where their values go (See Note [an option is declared once]).
struct EvaluateCommandLine {
  GeneratorRun run;
  infer::EvaluationOptions evaluation;
  std::string data, out, aux_classifier;
  bool overwrite = false;
  FeatureCommandLine features;
  long threads = 0;
  po::options_description options;

  EvaluateCommandLine() {
    run.batch_size = 16;
    OptionGroup d("Data and output");
    d.optional_text("data", data, "the dataset (pix2pix-h5)").value_name("FILE.h5").input_file();
    d.text("split", evaluation.split, "test | val | train (default: test if present, else val)");
    d.optional_text("out", out, "folder for evaluation.csv, evaluation.json and samples.png (created)")
        .value_name("DIR")
        .rank_local();  // rank 0 writes it
    d.flag("overwrite", overwrite, "replace those files when they exist");
    d.count("samples", evaluation.sample_count, 0, 1024, "rows A | G(A) | B in samples.png (0: none)");
    d.choice("direction", run.direction, "AtoB", checkpoint::parse_direction,
             "AtoB | BtoA: BtoA scores a CycleGAN run's G_B (from a full checkpoint or run directory) on each "
             "pair's B against its A");
    d.optional_text("aux-classifier", aux_classifier,
                    "also the recognition accuracy of G(A) and of B by this classifier (train-classifier); needs "
                    "labels")
        .value_name("FILE.pt")
        .input_file();
    options.add(generator_run_options(run).description())
        .add(d.description())
        .add(features.description())
        .add(thread_options(threads).description());
  }
};

void print_summary(const infer::Evaluation& evaluation, const std::string& dataset, const infer::EvaluationFacts& facts,
                   int world, double seconds, const std::string& out) {
  const std::int64_t n = evaluation.scores.size(0);
  const auto psnr = infer::summarise(evaluation.scores.select(1, infer::kPsnr));
  const auto ssim = infer::summarise(evaluation.scores.select(1, infer::kSsim));
  const auto l1 = infer::summarise(evaluation.scores.select(1, infer::kL1));
  const double baseline = evaluation.scores.select(1, infer::kBaselinePsnr).mean().item<double>();
  std::printf("evaluated %lld %s images of %s with %s (%s weights, %s mode) on %d rank%s in %.1f s (%.1f images/s)\n",
              static_cast<long long>(n), evaluation.split.c_str(), dataset.c_str(), facts.checkpoint.c_str(),
              facts.weights.c_str(), facts.mode.c_str(), world, world == 1 ? "" : "s", seconds,
              static_cast<double>(n) / std::max(seconds, 1e-9));
  if (facts.direction == "BtoA") std::printf("  direction BtoA: G_B translated each pair's B, scored against its A\n");
  std::printf("  PSNR %.3f dB (std %.3f, median %.3f; mean-image baseline %.3f dB)\n", psnr.mean, psnr.std, psnr.median,
              baseline);
  std::printf("  SSIM %.4f (std %.4f)   L1 %.4f (std %.4f)\n", ssim.mean, ssim.std, l1.mean, l1.std);
  if (!facts.classifier.empty())
    std::printf("  recognition of G(A) %.4f (of the real B images %.4f) by %s\n",
                evaluation.scores.select(1, infer::kRecognised).mean().item<double>(),
                evaluation.scores.select(1, infer::kRealRecognised).mean().item<double>(), facts.classifier.c_str());
  if (facts.features) {
    const auto& f = *facts.features;
    std::printf("  FID %.4f   KID %.6f (std %.6f; %lld subsets of %lld) with %s (%s, %lld-D, sha256 %.12s)\n", f.fid,
                f.kid.mean, f.kid.std, static_cast<long long>(f.kid.subsets), static_cast<long long>(f.kid.subset_size),
                f.network.file.c_str(), f.network.kind.c_str(), static_cast<long long>(f.dimensions),
                f.network.sha256.c_str());
  }
  std::printf("  wrote %s/evaluation.csv, evaluation.json%s\n", out.c_str(),
              evaluation.sample_grid.defined() ? ", samples.png" : "");
}

}  // namespace

int run_evaluate(int argc, char** argv) {
  const CommandSpec spec{
      "evaluate", "pix2pix evaluate --checkpoint PATH --data FILE.h5 [--split test] --out DIR [options]",
      "Scores a trained generator on one split: per-image PSNR and SSIM (on [0, 255]) and L1 (on [-1, 1]) in\n"
      "DIR/evaluation.csv; mean, std, median, min and max of each and the mean-image baseline PSNR in\n"
      "DIR/evaluation.json; rows A | G(A) | B in DIR/samples.png. With --aux-classifier FILE, also whether that\n"
      "recognition network (train-classifier) recognises G(A) and B as their label, and both accuracies.\n"
      "With --features FILE, also FID and KID of the G(A) set against the B set, measured with that feature\n"
      "network (recorded with its SHA-256).\n"
      "The metrics are the validator's: on the val split it reproduces the PSNR (and recognition) training\n"
      "logged for that checkpoint. Under mpirun/srun the ranks share\n"
      "the split and the files are identical to one process's."};
  const EvaluateCommandLine command_line;
  const auto parsed = parse_command(spec, command_line.options, po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const GeneratorRun& run = command_line.run;
  require_checkpoint(run);
  if (command_line.data.empty()) throw UsageError("missing --data");
  if (command_line.out.empty()) throw UsageError("missing --out");
  infer::EvaluationOptions options = command_line.evaluation;
  if (!options.split.empty() && options.split != data::format::kTest && options.split != data::format::kVal &&
      options.split != data::format::kTrain)
    throw UsageError("--split must be one of test, val, train; got '" + options.split + "'");
  options.batch_size = run.batch_size;
  options.seed = run.seed;
  options.precision = run.precision;
  options.progress = run.progress;
  options.b_to_a = run.direction == checkpoint::Direction::b_to_a;
  if (options.b_to_a && !command_line.aux_classifier.empty())
    throw UsageError("--aux-classifier judges B-domain images; --direction BtoA makes A-domain ones");
  const std::string& out = command_line.out;
  const std::optional<FeatureRun> feature_run = command_line.features.run(vm);

  dist::MpiSession mpi(&argc, &argv);
  install_interrupt_handlers();
  try {
    const auto start = std::chrono::steady_clock::now();
    InferenceJob job = make_inference_job(run, mpi);
    // See Note [ranks that agree]: the same options, generator file and dataset on every rank.
    // The cache and the dump are rank 0's alone (a default cache folder may differ between hosts).
    AgreedFields agreed = options_to_agree(vm, command_line.options);
    add_file(agreed, "the generator " + job.saved.path, job.saved.path);
    InputFiles read({job.saved.path});
    for (const auto& [option, path] : input_files(vm, command_line.options)) {
      add_file(agreed, option, path);
      read.add(path);
    }
    require_agreement(mpi, agreed);
    settle_threads(command_line.threads, &mpi);
    if (mpi.rank() == 0) {
      if (!config_file(vm).empty()) read.add(config_file(vm));
      infer::claim_evaluation_dir(out, command_line.overwrite, read);
      if (feature_run && !feature_run->dump_dir.empty())
        infer::claim_feature_dump_dir(feature_run->dump_dir, command_line.overwrite, read);
    }
    options.device = job.device;
    options.mode = job.mode;
    const auto dataset = data::PairedDataset::open(command_line.data);
    infer::check_trained_values(job.saved.trained_on, job.saved.path, *dataset);
    // The baseline's mean training image: read once (up to 10,000 train images), not on every rank.
    const auto& train_info = dataset->split(data::format::kTrain);
    const data::Domain target = options.b_to_a ? data::Domain::A : data::Domain::B;
    torch::Tensor mean_b = mpi.rank() == 0
                               ? metrics::mean_target_image(*dataset, data::format::kTrain, 10000, target)
                               : torch::empty({train_info.channels(target), train_info.height, train_info.width});
    job.comm->broadcast(mean_b, 0);
    // Every rank loads and checks the classifier, so that every rank refuses one that does not fit.
    std::optional<checkpoint::SavedClassifier> classifier;
    if (!command_line.aux_classifier.empty()) {
      classifier = checkpoint::load_classifier(command_line.aux_classifier, options.device);
      options.classifier = &*classifier;
    }
    // Every rank loads the feature network too: each runs it on its share of the images.
    std::optional<metrics::FeatureNetwork> features;
    std::optional<torch::Tensor> cached_real;
    std::string cache_key;
    if (feature_run) {
      features.emplace(feature_run->network, options.device);
      options.features = &*features;
      const std::string split = options.split.empty() ? infer::default_split(*dataset) : options.split;
      infer::check_generator_fits(job.saved.generator->options(), *dataset, split, options.b_to_a);
      cache_key = infer::real_feature_key(dataset->path(), split, options.b_to_a ? "A" : "B", features->facts());
      auto known = torch::zeros({1}, torch::kFloat32);
      if (mpi.rank() == 0 && !feature_run->cache_dir.empty()) {
        // The network's width, from two blank images: an entry of another width is damaged.
        const std::int64_t width =
            features->features(torch::zeros({2, train_info.channels(target), train_info.height, train_info.width}))
                .size(1);
        cached_real =
            infer::read_cached_features(feature_run->cache_dir, cache_key, dataset->split(split).count, width);
        if (cached_real) known.fill_(1);
      }
      job.comm->broadcast(known, 0);
      options.real_features_known = known.item<float>() == 1;
    }
    const infer::Evaluation evaluation = infer::evaluate(job.saved.generator, *dataset, mean_b, options, *job.comm);
    if (mpi.rank() != 0) return 0;

    const std::int64_t n = evaluation.scores.size(0);
    std::vector<std::int64_t> all(static_cast<size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
    infer::EvaluationFacts facts;
    facts.checkpoint = job.saved.path;
    facts.epoch = job.saved.epoch;
    facts.weights = checkpoint::weights_name(job.saved);
    facts.model_shape = job.saved.model_shape;
    facts.dataset = dataset->path();
    facts.mode = to_string(options.mode);
    facts.precision = to_string(options.precision);
    facts.batch_size = options.batch_size;
    facts.direction = to_string(run.direction);
    if (classifier) facts.classifier = classifier->path;
    std::string real_features_note;
    if (features) {
      const torch::Tensor real = cached_real ? *cached_real : evaluation.real_features;
      infer::FeatureScores scores;
      scores.network = features->facts();
      scores.dimensions = real.size(1);
      // A stop request ends these too (exit 128+n): 20,000 KID subsets take minutes.
      const auto poll = [] { throw_if_interrupted("computing FID and KID (nothing was written)"); };
      scores.fid = metrics::frechet_distance(real, evaluation.generated_features, poll);
      scores.kid_seed = run.seed;
      scores.kid = metrics::kernel_distance(real, evaluation.generated_features, feature_run->kid_subsets,
                                            feature_run->kid_subset_size, run.seed, poll);
      facts.features = scores;
      if (!cached_real && !feature_run->cache_dir.empty())
        infer::write_cached_features(feature_run->cache_dir, cache_key, real);
      if (!feature_run->dump_dir.empty()) {
        data::write_npy(feature_run->dump_dir + "/real.npy", real);
        data::write_npy(feature_run->dump_dir + "/generated.npy", evaluation.generated_features);
      }
      real_features_note = cached_real                      ? "read from the cache " + feature_run->cache_dir
                           : feature_run->cache_dir.empty() ? "computed (no cache)"
                                                            : "computed, and kept in " + feature_run->cache_dir;
    }
    infer::write_evaluation_files(out, evaluation, dataset->read_names(evaluation.split, all), facts);
    const double seconds = seconds_since(start);
    print_summary(evaluation, dataset->path(), facts, mpi.world(), seconds, out);
    if (features) std::printf("  real features: %s\n", real_features_note.c_str());
    if (features && !feature_run->dump_dir.empty())
      std::printf("  wrote %s/real.npy, generated.npy\n", feature_run->dump_dir.c_str());
    if (!job.kernels.empty()) std::printf("  %s\n", job.kernels.c_str());
    return 0;
  } catch (const std::exception& e) {
    // An error that only some ranks see must not leave the others waiting in a collective.
    if (mpi.world() > 1) end_job_on_error("evaluate", e);
    throw;
  }
}

}  // namespace pix2pix::cli
