// `translate`: a trained generator applied to images, each written to its own output file.
// Ranks take chunks of --batch-size inputs in turn (chunk k on rank k mod N); every output is
// written by exactly one rank, whole (temporary name, renamed), and N ranks write exactly what
// one process writes (in train mode too: a chunk's dropout is seeded from (seed, k)).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/common/progress.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/infer/image_fit.hpp"
#include "pix2pix/infer/tiled_translation.hpp"
#include "pix2pix/infer/translation_inputs.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/val_mode.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::infer {

struct TranslateOptions {
  std::string output_dir;
  std::int64_t batch_size = 8;  // inputs per chunk; a chunk's images of one size go as one batch
  ResizeMode resize = ResizeMode::model;
  // tiles.tile > 0: each image at its own size, tile by tile (resize does not apply), one image a
  // chunk, tiles.batch tiles a forward pass.
  TileOptions tiles;
  ModelGeometry geometry;
  int channels = 0;  // convert every input to this many channels first (0: take them as they are)
  // The values the generator was trained to read and to write (checkpoint::TrainedOn, A and B, or
  // B and A for --direction BtoA): inputs must be of the first's type, outputs are of the second's.
  // 8-bit on [0, 255] reads every image file as 8-bit, as translate always did.
  data::DomainSamples input_samples, output_samples;
  bool aligned = false;  // files are A|B side by side: the left half is A
  bool b_side = false;   // translate B images (--direction BtoA): a dataset's B, the right half of an aligned file
  torch::Device device{torch::kCPU};
  optim::Precision precision = optim::Precision::fp32;
  nets::ValMode mode = nets::ValMode::eval;
  std::uint64_t seed = 0;
  std::optional<ProgressStyle> progress;
};

struct TranslationCounts {
  std::int64_t written = 0;       // over all ranks
  std::int64_t skipped = 0;       // inputs that could not be decoded, over all ranks
  std::int64_t unwritten = 0;     // outputs whose write failed, over all ranks
  std::string first_write_error;  // the lowest failing rank's first ("" when none failed)
};

// `dataset`: the file the inputs' indices refer to (null for image files) and its `split`.
// Inputs that cannot be decoded are skipped with a warning naming them; an input whose channel
// count the generator does not take (after --channels) is an Error naming it. An output that
// cannot be written (full disk, read-only folder) leaves no file and is counted; the others are
// still tried, and the caller reports the count and the first error. Collective over `comm`.
TranslationCounts translate_inputs(nets::Generator& generator, const std::vector<TranslationInput>& inputs,
                                   const data::PairedDataset* dataset, const std::string& split,
                                   const TranslateOptions& options, dist::Communicator& comm);

// Error naming the first output under `output_dir` that exists already, and how many do.
void refuse_existing_outputs(const std::vector<TranslationInput>& inputs, const std::string& output_dir);

}  // namespace pix2pix::infer
