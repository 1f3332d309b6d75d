#include "pix2pix/cli/inference_setup.hpp"

#include "pix2pix/dist/communicator_factory.hpp"
#include "pix2pix/dist/device.hpp"

namespace pix2pix::cli {
namespace {

// The only collectives of translate and evaluate come after each rank's share of the work,
// which is within a batch of the others': a rank that does not arrive in 10 minutes is lost.
constexpr double kCollectiveTimeoutSeconds = 600.0;

}  // namespace

po::options_description generator_run_options(long default_batch_size) {
  po::options_description options("Model and devices");
  options.add_options()("checkpoint", po::value<std::string>()->value_name("PATH"),
                        "a run directory (its checkpoints/best_generator.pt), best_generator.pt, best.pt, "
                        "last.pt, epoch_NNNN.pt, or a reference PyTorch state dict FILE.pth")(
      "weights", po::value<std::string>()->default_value("auto"), kWeightsHelp)(
      "batch-size", po::value<long>()->default_value(default_batch_size), "images per forward pass (per rank)")(
      "mode", po::value<std::string>()->default_value(""),
      "eval | train: norm statistics and dropout as in validation (default: what the run validated with)")(
      "seed", po::value<unsigned long>()->default_value(0), "dropout seed in --mode train")(
      "device", po::value<std::string>()->default_value("auto"), "auto | cpu | cuda")(
      "precision", po::value<std::string>()->default_value("fp32"), "fp32 | bf16 | fp16 (autocast)")(
      "progress", po::value<std::string>()->default_value("auto"), "auto | bar | lines | none");
  return options;
}

GeneratorRun generator_run_from(const po::variables_map& vm) {
  if (!vm.count("checkpoint")) throw UsageError("missing --checkpoint");
  GeneratorRun run;
  run.checkpoint = vm["checkpoint"].as<std::string>();
  run.weights = checkpoint::parse_weights(vm["weights"].as<std::string>());
  run.batch_size = integer_option(vm, "batch-size", 1, 1 << 20);
  const std::string mode = vm["mode"].as<std::string>();
  if (!mode.empty() && mode != "eval" && mode != "train")
    throw UsageError("--mode must be one of eval, train; got '" + mode + "'");
  if (!mode.empty()) run.mode = nets::parse_val_mode(mode);
  run.seed = vm["seed"].as<unsigned long>();
  run.device = vm["device"].as<std::string>();
  run.precision = optim::parse_precision(vm["precision"].as<std::string>());
  run.progress = parse_progress_style(vm["progress"].as<std::string>());
  return run;
}

InferenceJob make_inference_job(const GeneratorRun& run, const dist::MpiSession& mpi) {
  InferenceJob job;
  job.device = dist::choose_device(run.device, mpi.local_rank(), mpi.local_size());
  optim::check_precision_supported(run.precision, job.device);
  job.comm = dist::make_host_communicator(mpi, kCollectiveTimeoutSeconds);
  job.saved = checkpoint::load_generator(run.checkpoint, job.device, run.direction, run.weights);
  job.mode = run.mode.value_or(job.saved.trained_on.val_mode);
  return job;
}

}  // namespace pix2pix::cli
