// Note [state dicts without type tags]: torch::pickle_save wraps every dict in
// torch.jit._pickle.restore_type_tag (the key and value types TorchScript wants back), a global
// that torch.load refuses by default since PyTorch 2.6 (weights_only=True): a user's
// torch.load("latest_net_G.pth") would fail. The same archive written by a Pickler that does not
// tag aggregates is a plain dict of tensors, what torch.save of a state dict holds, and loads in
// every PyTorch version, weights_only or not (and in LibTorch's torch::pickle_load).
#include "pix2pix/interop/pytorch_export.hpp"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/interop/reference_state_dict.hpp"

namespace pix2pix::interop {

void require_reference_form(nets::Norm norm) {
  if (norm == nets::Norm::none)
    throw Error(
        "a model trained with --norm none has no reference form: the reference builds that architecture without "
        "convolution biases, this one has them (export --format onnx works for it)");
}

c10::Dict<std::string, torch::Tensor> reference_state_dict(const torch::nn::Module& network) {
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& [name, tensor] : interop::named_tensors(network))
    state.insert(name, tensor.detach().to(torch::kCPU).clone());
  return state;
}

namespace {

// torch::jit::pickle_save's archive with tag_aggregates off: See Note [state dicts without type tags].
std::vector<char> untagged_pickle_archive(const c10::IValue& value) {
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* bytes, size_t size) { pickle.insert(pickle.end(), bytes, bytes + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  std::vector<char> archive;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    const char* bytes = static_cast<const char*>(data);
    archive.insert(archive.end(), bytes, bytes + size);
    return size;
  });
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  return archive;
}

}  // namespace

void write_state_dict(const std::string& path, const torch::nn::Module& network) {
  const std::vector<char> bytes = untagged_pickle_archive(c10::IValue(reference_state_dict(network)));
  write_file_atomically(path, std::string_view(bytes.data(), bytes.size()), /*durable=*/true);
}

}  // namespace pix2pix::interop
