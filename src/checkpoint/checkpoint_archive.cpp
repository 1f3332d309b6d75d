#include "pix2pix/checkpoint/checkpoint_archive.hpp"

#include <map>
#include <utility>
#include <vector>

#include "pix2pix/checkpoint/checkpoint_seal.hpp"
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

}  // namespace pix2pix::checkpoint
