#include "pix2pix/infer/pytorch_export.hpp"

#include "pix2pix/common/error.hpp"
#include "pix2pix/model/reference_state_dict.hpp"
#include "pix2pix/train/checkpoint.hpp"

namespace pix2pix::infer {

void require_reference_form(model::Norm norm) {
  if (norm == model::Norm::none)
    throw Error(
        "a model trained with --norm none has no reference form: the reference builds that architecture without "
        "convolution biases, this one has them (export --format onnx works for it)");
}

c10::Dict<std::string, torch::Tensor> reference_state_dict(const torch::nn::Module& network) {
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& [name, tensor] : model::named_tensors(network))
    state.insert(name, tensor.detach().to(torch::kCPU).clone());
  return state;
}

void write_state_dict(const std::string& path, const torch::nn::Module& network) {
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(reference_state_dict(network)));
  train::write_bytes_atomically(path, bytes.data(), bytes.size());
}

}  // namespace pix2pix::infer
