// Tensors and state dicts through files, as the export and import tests exchange them with PyTorch.
#pragma once

#include <torch/torch.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::fixtures {

// What train::load_generator says of `checkpoint`: its Error's message, or "loaded".
inline std::string load_generator_error(const std::string& checkpoint) {
  try {
    checkpoint::load_generator(checkpoint, torch::kCPU);
  } catch (const Error& e) {
    return e.what();
  }
  return "loaded";
}

inline std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// torch::pickle_save of `t`: what Python's torch.load reads.
inline void save_tensor(const std::string& path, const torch::Tensor& t) {
  const auto bytes = torch::pickle_save(c10::IValue(t));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// What Python's torch.save(tensor) wrote.
inline torch::Tensor load_tensor(const std::string& path) {
  return torch::pickle_load(file_bytes(path)).toTensor();
}

}  // namespace pix2pix::fixtures
