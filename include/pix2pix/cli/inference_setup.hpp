// What `translate` and `evaluate` share: the options of running a trained generator, checked
// before MPI starts, and the set-up on every rank (device, communicator, the generator and the
// mode it runs in).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/mpi_session.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::cli {

// --weights' help, which export shares.
inline constexpr const char* kWeightsHelp =
    "auto | ema | raw: the moving average of the generator's weights where its run kept one (--ema-decay; auto), "
    "or the weights the optimiser trained (raw; a run directory then means its checkpoints/best.pt)";

struct GeneratorRun {
  std::string checkpoint;
  std::int64_t batch_size = 1;
  std::optional<nets::ValMode> mode;  // unset: what the checkpoint's run validated with
  std::uint64_t seed = 0;
  std::string device = "auto";  // auto | cpu | cuda
  optim::Precision precision = optim::Precision::fp32;
  std::optional<ProgressStyle> progress;
  checkpoint::Direction direction = checkpoint::Direction::a_to_b;  // translate --direction
  checkpoint::Weights weights = checkpoint::Weights::automatic;     // --weights
};
// --checkpoint, --weights, --batch-size, --mode, --seed, --device, --precision, --progress, bound to
// `run`, whose values are the defaults (See Note [an option is declared once]).
OptionGroup generator_run_options(GeneratorRun& run);
// UsageError for a missing --checkpoint.
void require_checkpoint(const GeneratorRun& run);

struct InferenceJob {
  torch::Device device{torch::kCPU};
  std::unique_ptr<dist::Communicator> comm;  // MPI between ranks (host tensors only), local alone
  checkpoint::SavedGenerator saved;
  nets::ValMode mode = nets::ValMode::eval;
  std::string kernels;  // what the command says of its GPU kernels ("" on a CPU)
};
// On every rank: the rank's device, the communicator, and the generator loaded onto the device.
// GPU convolutions are deterministic from here on: See Note [inference kernels are deterministic].
InferenceJob make_inference_job(const GeneratorRun& run, const dist::MpiSession& mpi);

}  // namespace pix2pix::cli
