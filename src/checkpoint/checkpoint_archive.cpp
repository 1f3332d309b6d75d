#include "pix2pix/checkpoint/checkpoint_archive.hpp"

#include <map>
#include <utility>
#include <vector>

#include "pix2pix/checkpoint/checkpoint_seal.hpp"
#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/interop/reference_state_dict.hpp"

namespace pix2pix::checkpoint {

std::string read_string(torch::serialize::InputArchive& in, const std::string& key) {
  c10::IValue v;
  if (!in.try_read(key, v) || !v.isString()) throw Error("missing entry '" + key + "'");
  return v.toStringRef();
}

std::int64_t read_int(torch::serialize::InputArchive& in, const std::string& key) {
  c10::IValue v;
  if (!in.try_read(key, v) || !v.isInt()) throw Error("missing entry '" + key + "'");
  return v.toInt();
}

double read_double(torch::serialize::InputArchive& in, const std::string& key) {
  c10::IValue v;
  if (!in.try_read(key, v) || !v.isDouble()) throw Error("missing entry '" + key + "'");
  return v.toDouble();
}

torch::Tensor read_tensor(torch::serialize::InputArchive& in, const std::string& key) {
  torch::Tensor t;
  if (!in.try_read(key, t)) throw Error("missing entry '" + key + "'");
  return t;
}

void open_sealed(const std::string& path, torch::serialize::InputArchive& in, const torch::Device& device,
                 const std::string& what) {
  require_readable_file(path, what);
  if (const auto damage = check_seal(path)) throw Error(what + " " + path + " is damaged: " + *damage);
  try {
    in.load_from(path, device);
  } catch (const c10::Error&) {
    throw Error(what + " " + path + " is truncated or damaged (cannot be opened as a torch archive)");
  }
}

void load_checked(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& what) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected;
  for (const auto& [name, tensor] : interop::named_tensors(module)) expected.emplace_back(name, tensor.sizes().vec());
  module.load(archive);
  const interop::StateDict tensors = interop::named_tensors(module);
  const std::map<std::string, torch::Tensor> loaded(tensors.begin(), tensors.end());
  for (const auto& [name, sizes] : expected)
    if (loaded.at(name).sizes().vec() != sizes)
      throw Error(what + " " + name + " is " + c10::str(loaded.at(name).sizes()) + ", the model shape needs " +
                  c10::str(c10::IntArrayRef(sizes)));
}

void save_sealed(torch::serialize::OutputArchive& archive, const std::string& path) {
  SealedFileWriter file(path);
  archive.save_to([&file](const void* data, size_t n) { return file.write(data, n); });
  file.finish();
}

bool check_magic_and_version(torch::serialize::InputArchive& in, bool generator_file_too) {
  c10::IValue magic;
  const std::string full = kCheckpointMagic, generator_only = full + "-generator";
  const std::string found = in.try_read("magic", magic) && magic.isString() ? magic.toStringRef() : "";
  // The files of ours that are not what was asked for say what they are and what to give instead.
  if (found == generator_only && !generator_file_too)
    throw Error(
        "a generator file (G's weights only, as best_generator.pt), not a full checkpoint: --resume "
        "needs last.pt, best.pt or epoch_NNNN.pt of the run");
  if (found == kClassifierMagic)
    throw Error("a recognition network (pix2pix train-classifier), not a pix2pix-mpi checkpoint");
  if (found != full && !(generator_file_too && found == generator_only)) throw Error("not a pix2pix-mpi checkpoint");
  const std::int64_t version = read_int(in, "version");
  if (version != kCheckpointVersion)
    throw Error("checkpoint version " + std::to_string(version) + ", this build reads " +
                std::to_string(kCheckpointVersion));
  return found == generator_only;
}

void write_trained_on(torch::serialize::OutputArchive& out, const TrainedOn& t) {
  out.write("trained_height", c10::IValue(t.height));
  out.write("trained_width", c10::IValue(t.width));
  out.write("val_mode", c10::IValue(to_string(t.val_mode)));
  for (const auto& [key, samples] : {std::pair{"a", &t.samples_a}, std::pair{"b", &t.samples_b}}) {
    out.write(std::string("samples_") + key + "_type", c10::IValue(data::to_string(samples->type)));
    out.write(std::string("samples_") + key + "_lo", c10::IValue(samples->range.lo));
    out.write(std::string("samples_") + key + "_hi", c10::IValue(samples->range.hi));
  }
}

TrainedOn read_trained_on(torch::serialize::InputArchive& in) {
  TrainedOn t;
  c10::IValue v;
  if (in.try_read("trained_height", v) && v.isInt()) t.height = v.toInt();
  if (in.try_read("trained_width", v) && v.isInt()) t.width = v.toInt();
  if (in.try_read("val_mode", v) && v.isString()) t.val_mode = nets::parse_val_mode(v.toStringRef());
  for (const auto& [key, samples] : {std::pair{"a", &t.samples_a}, std::pair{"b", &t.samples_b}}) {
    const std::string prefix = std::string("samples_") + key;
    if (in.try_read(prefix + "_type", v) && v.isString()) samples->type = data::parse_sample_type(v.toStringRef());
    if (in.try_read(prefix + "_lo", v) && v.isDouble()) samples->range.lo = v.toDouble();
    if (in.try_read(prefix + "_hi", v) && v.isDouble()) samples->range.hi = v.toDouble();
    data::check_range(samples->range, "the recorded range of " + std::string(key == std::string("a") ? "A" : "B"));
  }
  return t;
}

}  // namespace pix2pix::checkpoint
