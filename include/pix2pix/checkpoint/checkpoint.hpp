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
  TrainedOn trained_on;
  // --aux-classifier: RecognitionLoss::identity() ("" without; checked on resume) and G(A)'s
  // recognition accuracy at the best epoch so far (NaN without or before one).
  std::string recognition;
  double best_recognition = std::numeric_limits<double>::quiet_NaN();
  // The model's image pools (GanModel::pools) by key: rank r's images [n, C, H, W] at r (an
  // undefined tensor for an empty pool), on the CPU. Absent from checkpoints of models without
  // pools and from those written before pools were kept.
  std::vector<std::pair<std::string, std::vector<torch::Tensor>>> pools;
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

// Generator weights only (for inference), same atomic write. `epoch`: the epoch they are from.
void save_generator(const std::string& path, torch::nn::Module& generator, const std::string& model_shape,
                    const TrainedOn& trained_on, std::int64_t epoch);

// Which generator inference loads: A to B (every run's), or B to A (a CycleGAN's G_B, which only
// full checkpoints hold). The reference's --direction names.
enum class Direction { a_to_b, b_to_a };
Direction parse_direction(const std::string& text);  // UsageError naming --direction otherwise
std::string to_string(Direction direction);

// A generator read back for inference, with what its file says about it.
struct SavedGenerator {
  nets::Generator generator{nullptr};
  std::string path;         // the file it was read from
  std::string model_shape;  // as stored (nets/model_shape.hpp)
  TrainedOn trained_on;
  std::int64_t epoch = -1;  // the epoch of its weights (-1: not recorded)
  Direction direction = Direction::a_to_b;
};

// The file `checkpoint` names for inference: a run directory (its checkpoints/best_generator.pt;
// checkpoints/best.pt for Direction::b_to_a), a checkpoints folder (the same file in it), or a
// file. Error naming what is missing.
std::string resolve_generator_path(const std::string& checkpoint, Direction direction = Direction::a_to_b);

// Rebuilds the generator from the stored model shape and loads its weights onto `device`, from
// a generator file (best_generator.pt) or a full checkpoint (best.pt, last.pt, epoch_NNNN.pt);
// a `.pth` file is a reference-format state dict (torch.save in Python; model/reference_state_dict).
// The generator is in eval mode. Error naming the file when it is missing, truncated, damaged,
// not ours, or of another version.
// With Direction::b_to_a: a CycleGAN run's G_B from a full checkpoint (a run directory means its
// checkpoints/best.pt); Error naming the file for any other.
SavedGenerator load_generator(const std::string& checkpoint, const torch::Device& device,
                              Direction direction = Direction::a_to_b);

// The discriminator of a full checkpoint (best.pt, last.pt, epoch_NNNN.pt), rebuilt from its model
// shape, in eval mode. Error naming the file for a generator-only file and as load_generator.
nets::PatchDiscriminator load_discriminator(const std::string& path, const torch::Device& device);

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
