// Checkpoints: everything needed to continue exactly (networks, both Adam states, loss scalers,
// epoch/step, early-stopping state, RNG), behind a magic/version header, written atomically.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pix2pix::train {

inline constexpr const char* kCheckpointMagic = "pix2pix-mpi-checkpoint";
inline constexpr std::int64_t kCheckpointVersion = 1;

struct TrainingState {
  std::int64_t epoch = -1;  // last completed epoch
  std::int64_t global_step = 0;
  std::string model_shape;  // options that shape the networks; must match on load
  std::string early_stopping;
  std::vector<double> scaler_g, scaler_d;
  torch::Tensor cpu_rng;      // at::Generator state of the CPU
  torch::Tensor device_rng;   // of the CUDA device (undefined on CPU)
  std::int64_t world = 1;     // the world size that wrote it
  std::int64_t global_batch = 1;
};

// Writes modules, optimizers and state to `path` through `path`.tmp, fsync and rename, so that a
// crash mid-write leaves any previous file at `path` intact.
void save_checkpoint(const std::string& path, torch::nn::Module& generator, torch::nn::Module& discriminator,
                     torch::optim::Optimizer& opt_g, torch::optim::Optimizer& opt_d, const TrainingState& state);

// Loads into existing modules/optimizers. Throws Error naming the file when it is missing,
// truncated or damaged, not a checkpoint, of another version, or of another model shape.
TrainingState load_checkpoint(const std::string& path, torch::nn::Module& generator,
                              torch::nn::Module& discriminator, torch::optim::Optimizer& opt_g,
                              torch::optim::Optimizer& opt_d, const std::string& expected_model_shape);

// Generator weights only (for inference), same atomic write.
void save_generator(const std::string& path, torch::nn::Module& generator, const std::string& model_shape);

// Writes through a temporary file in the same folder: `write(tmp)` then fsync, then rename.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

}  // namespace pix2pix::train
