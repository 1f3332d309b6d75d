// The pieces every file of ours that holds a torch archive shares (training checkpoints, generator
// files, classifier files): typed reads that name a missing entry, the sealed write and the
// sealed, shape-checked read; and the header checkpoints and generator files share.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::checkpoint {

// Entries of an archive; Error "missing entry 'KEY'" when absent or of another type.
std::string read_string(torch::serialize::InputArchive& in, const std::string& key);
std::int64_t read_int(torch::serialize::InputArchive& in, const std::string& key);
double read_double(torch::serialize::InputArchive& in, const std::string& key);
torch::Tensor read_tensor(torch::serialize::InputArchive& in, const std::string& key);

// Refuses a missing, truncated or damaged file (its seal, checkpoint_seal.hpp) before torch reads
// any of it, then opens it onto `device`. Errors name the file as `what` ("checkpoint", "classifier file").
void open_sealed(const std::string& path, torch::serialize::InputArchive& in, const torch::Device& device,
                 const std::string& what = "checkpoint");

// torch's Module::load replaces each tensor with what the archive holds, whatever its shape
// (Tensor::set_): a foreign or hand-edited file would load "successfully" and fail, or worse,
// later. The shapes are compared with the module's own; Error naming `what`, the tensor and both
// shapes.
void load_checked(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& what);

// The archive, then its seal, into `path` (call it inside write_atomically: checkpoint.hpp).
void save_sealed(torch::serialize::OutputArchive& archive, const std::string& path);

// The header of training checkpoints (checkpoint.hpp) and generator files (generator_file.hpp).
// Refuses what is not a full checkpoint of this build's version (or, with `generator_file_too`, a
// generator file either), saying what a file of ours is when it is not what was asked for. True
// when it is a generator file.
bool check_magic_and_version(torch::serialize::InputArchive& in, bool generator_file_too);

// Runs `read` (what reads an opened file) so that what it throws names the file: `file` ("checkpoint
// PATH") and ": " before our Errors, `file` and `when_unfit` (": its generator does not fit its
// model shape: ") before LibTorch's, which say that a tensor does not fit. A UsageError stays one.
template <class Read>
void naming_the_file(const std::string& file, const std::string& when_unfit, Read&& read) {
  try {
    read();
  } catch (const UsageError& e) {  // an option asks for what the file does not hold
    throw UsageError(file + ": " + e.what());
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  } catch (const c10::Error& e) {
    throw Error(file + when_unfit + e.what_without_backtrace());
  }
}
// What a generator was trained on; files written before inference needed it read as unknown size, eval.
void write_trained_on(torch::serialize::OutputArchive& out, const TrainedOn& trained_on);
TrainedOn read_trained_on(torch::serialize::InputArchive& in);

}  // namespace pix2pix::checkpoint
