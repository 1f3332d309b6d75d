// Generator files and what inference reads: a trained generator saved alone (best_generator.pt),
// and read back with its shape and what it was trained on from such a file, a full checkpoint
// (checkpoint.hpp) or a reference state dict; a full checkpoint's discriminator (export).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/nets/networks.hpp"

namespace pix2pix::checkpoint {

// Which of a generator's weights inference loads (--weights): its exponential moving average
// where the run kept one (--ema-decay; `automatic`), the average (`ema`: Error for a file without
// one), or the weights the optimiser trained (`raw`).
enum class Weights { automatic, ema, raw };
Weights parse_weights(const std::string& text);  // UsageError naming --weights otherwise
std::string to_string(Weights weights);
// The checkpoint archive of the moving average of the network archived as `key`: "generator_ema".
std::string ema_key(const std::string& key);

// Generator weights only (for inference), same atomic write. `epoch`: the epoch they are from;
// `ema`: they are a moving average (recorded as weights = "ema", else "raw").
void save_generator(const std::string& path, torch::nn::Module& generator, const std::string& model_shape,
                    const TrainedOn& trained_on, std::int64_t epoch, bool ema = false);

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
  bool ema = false;  // the weights are the run's moving average (--ema-decay), not the optimiser's
};
// "EMA" or "raw": what start-up lines, evaluation.json and export metadata say was loaded.
inline std::string weights_name(const SavedGenerator& saved) {
  return saved.ema ? "ema" : "raw";
}

// The file `checkpoint` names for inference: a run directory (its checkpoints/best_generator.pt;
// checkpoints/best.pt for Direction::b_to_a), a checkpoints folder (the same file in it), or a
// file. Error naming what is missing. With Weights::raw a run directory means checkpoints/best.pt,
// which holds both weights of the best epoch (best_generator.pt holds the average alone when the
// run kept one).
std::string resolve_generator_path(const std::string& checkpoint, Direction direction = Direction::a_to_b,
                                   Weights weights = Weights::automatic);

// Rebuilds the generator from the stored model shape and loads its weights onto `device`, from
// a generator file (best_generator.pt) or a full checkpoint (best.pt, last.pt, epoch_NNNN.pt);
// a `.pth` file is a reference-format state dict (torch.save in Python; model/reference_state_dict).
// The generator is in eval mode. Error naming the file when it is missing, truncated, damaged,
// not ours, or of another version.
// With Direction::b_to_a: a CycleGAN run's G_B from a full checkpoint (a run directory means its
// checkpoints/best.pt); Error naming the file for any other.
// `weights`: see Weights; Error naming the file and --weights when it does not hold those asked for.
SavedGenerator load_generator(const std::string& checkpoint, const torch::Device& device,
                              Direction direction = Direction::a_to_b, Weights weights = Weights::automatic);

// The discriminator of a full checkpoint (best.pt, last.pt, epoch_NNNN.pt), rebuilt from its model
// shape, in eval mode. Error naming the file for a generator-only file and as load_generator.
nets::PatchDiscriminator load_discriminator(const std::string& path, const torch::Device& device);

}  // namespace pix2pix::checkpoint
