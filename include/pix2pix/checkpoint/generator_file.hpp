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

}  // namespace pix2pix::checkpoint
