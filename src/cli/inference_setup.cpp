#include "pix2pix/cli/inference_setup.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/dist/communicator_factory.hpp"
#include "pix2pix/dist/convolution_settings.hpp"
#include "pix2pix/dist/device.hpp"

namespace pix2pix::cli {
namespace {

// The only collectives of translate and evaluate come after each rank's share of the work,
// which is within a batch of the others': a rank that does not arrive in 10 minutes is lost.
constexpr double kCollectiveTimeoutSeconds = 600.0;

}  // namespace

OptionGroup generator_run_options(GeneratorRun& run) {
  OptionGroup g("Model and devices");
  g.optional_text("checkpoint", run.checkpoint,
                  "a run directory (its checkpoints/best_generator.pt), best_generator.pt, best.pt, last.pt, "
                  "epoch_NNNN.pt, or a reference PyTorch state dict FILE.pth")
      .value_name("PATH");
  g.choice("weights", run.weights, "auto", checkpoint::parse_weights, kWeightsHelp);
  g.count("batch-size", run.batch_size, 1, 1 << 20, "images per forward pass (per rank)");
  g.choice(
      "mode", run.mode, "",
      [](const std::string& text, const char* option) -> std::optional<nets::ValMode> {
        if (text.empty()) return std::nullopt;
        return parse_choice<nets::ValMode>(text, option,
                                           {{"eval", nets::ValMode::eval}, {"train", nets::ValMode::train}});
      },
      "eval | train: norm statistics and dropout as in validation (default: what the run validated with)");
  g.value("seed", run.seed, "dropout seed in --mode train");
  g.text("device", run.device, "auto | cpu | cuda").rank_local();
  g.choice("precision", run.precision, "fp32", optim::parse_precision, "fp32 | bf16 | fp16 (autocast)");
  g.choice("progress", run.progress, "auto", parse_progress_style, "auto | bar | lines | none").rank_local();
  return g;
}

void require_checkpoint(const GeneratorRun& run) {
  if (run.checkpoint.empty()) throw UsageError("missing --checkpoint");
}

InferenceJob make_inference_job(const GeneratorRun& run, const dist::MpiSession& mpi) {
  InferenceJob job;
  job.device = dist::choose_device(run.device, mpi.local_rank(), mpi.local_size());
  job.kernels = dist::apply_inference_convolution_settings(job.device);
  optim::check_precision_supported(run.precision, job.device);
  job.comm = dist::make_host_communicator(mpi, kCollectiveTimeoutSeconds);
  job.saved = checkpoint::load_generator(run.checkpoint, job.device, run.direction, run.weights);
  job.mode = run.mode.value_or(job.saved.trained_on.val_mode);
  return job;
}

}  // namespace pix2pix::cli
