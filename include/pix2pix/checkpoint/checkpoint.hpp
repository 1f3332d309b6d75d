// Checkpoints: everything needed to continue exactly (networks, both Adam states, loss scalers,
// epoch/step and the position inside an interrupted epoch, early-stopping state, every rank's image
// pools), behind a magic/version header, written atomically and sealed with a checksum (checkpoint_seal.hpp).
// RNG state is not stored: every random draw is seeded from (seed, step, rank), see trainer.cpp (the run loop).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "pix2pix/data/sample_types.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/val_mode.hpp"

namespace pix2pix::checkpoint {

inline constexpr const char* kCheckpointMagic = "pix2pix-mpi-checkpoint";
inline constexpr std::int64_t kCheckpointVersion = 2;  // 1: unsealed, RNG state, no mid-epoch position

// What inference needs to know of how a generator was trained. Files written before these were
// stored read as zeros (unknown size) and eval.
struct TrainedOn {
  std::int64_t height = 0, width = 0;            // the image size the generator was trained on (after cropping)
  nets::ValMode val_mode = nets::ValMode::eval;  // how its run validated (translate's and evaluate's default)
  // The values its A and B were: sample type and the range that maps to [-1, 1] (files written
  // before they were recorded: uint8 on [0, 255], all there was).
  data::DomainSamples samples_a, samples_b;
};

struct TrainingState {
  std::int64_t epoch = -1;  // last completed epoch
  std::int64_t global_step = 0;
  // A graceful stop mid-epoch: steps of epoch `epoch + 1` already taken, and that epoch's sums
  // so far (EpochSums: rank means of the losses in the model's loss order, total skipped
  // updates), so that the resumed epoch reports what an uninterrupted one would.
  std::int64_t step_in_epoch = 0;
  std::vector<double> epoch_losses;
  std::int64_t epoch_skipped = 0;
  std::string model_shape;  // options that shape the networks; must match on load
  std::string early_stopping;
  std::string es_metric = "psnr";  // what early_stopping watched (checked on resume)
  // Each update group's loss scaler (LossScaler::state), by the group's checkpoint key ("g", "d").
  std::vector<std::pair<std::string, std::vector<double>>> scalers;
  std::int64_t world = 1;  // the world size that wrote it
  std::int64_t global_batch = 1;
  // The run's clocks when it was written, over all its sessions (metrics::RunClock), NaN in
  // checkpoints written before they were kept: See Note [time to quality]
  double train_seconds = std::numeric_limits<double>::quiet_NaN();
  double wall_seconds = std::numeric_limits<double>::quiet_NaN();
  TrainedOn trained_on;
  // --aux-classifier: RecognitionLoss::identity() ("" without; checked on resume) and G(A)'s
  // recognition accuracy at the best epoch so far (NaN without or before one).
  std::string recognition;
  double best_recognition = std::numeric_limits<double>::quiet_NaN();
  // The model's image pools (GanModel::pools) by key: rank r's images [n, C, H, W] at r (an
  // undefined tensor for an empty pool), on the CPU. Absent from checkpoints of models without
  // pools and from those written before pools were kept.
  std::vector<std::pair<std::string, std::vector<torch::Tensor>>> pools;
  // load_checkpoint: the keys of CheckpointParts::optional_networks the file does not hold.
  std::vector<std::string> absent_networks;
  // The run's resolved options and data fingerprint (See Note [options a resume may change]); "" in
  // checkpoints written before they were kept.
  std::string options;
};

// The networks and optimisers of a model, as a checkpoint names them: a network's archive is its
// key ("generator"), an optimiser's is optimizer_<key> and its loss scaler's scaler_<key> ("g").
struct CheckpointParts {
  std::vector<std::pair<std::string, torch::nn::Module*>> networks;
  std::vector<std::pair<std::string, torch::optim::Optimizer*>> optimizers;
  std::vector<std::string> pools;  // the keys of the model's image pools (archives pool_<key>)
  // Saved like `networks`; a file without one loads (it keeps its values) and names it in
  // TrainingState::absent_networks: the generators' weight averages (--ema-decay), which a run
  // may start keeping on resume.
  std::vector<std::pair<std::string, torch::nn::Module*>> optional_networks{};
};

// Writes modules, optimizers and state to `path` through `path`.tmp (sealed, fsync, rename), so
// that a crash or a full disk mid-write leaves any previous file at `path` intact.
void save_checkpoint(const std::string& path, const CheckpointParts& parts, const TrainingState& state);

// Loads into existing modules/optimizers, and returns the pools of `parts.pools` that the file
// holds in TrainingState::pools. Throws Error naming the file when it is missing,
// truncated or damaged (seal), not a checkpoint, of another version, or of another model shape.
// A scaler for each optimiser of `parts`.
TrainingState load_checkpoint(const std::string& path, const CheckpointParts& parts,
                              const std::string& expected_model_shape);

// `last.pt` → `last.prev.pt`: the name the previous checkpoint keeps when a new one replaces it.
std::string previous_checkpoint_path(const std::string& path);
// Before `path` is replaced: its current contents stay reachable as previous_checkpoint_path
// (a hard link, a copy where links are not supported). Nothing happens when `path` is absent.
void keep_previous_checkpoint(const std::string& path);
// What `--resume auto` tries in a checkpoints folder, newest first: last.pt, last.prev.pt,
// then epoch_NNNN.pt by decreasing epoch. Only existing files.
std::vector<std::string> resume_candidates(const std::string& checkpoints_dir);

// Writes through a temporary file in the same folder: `write(tmp)` then fsync, then rename.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

}  // namespace pix2pix::checkpoint
