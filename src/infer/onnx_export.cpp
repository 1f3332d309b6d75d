// The graph mirrors networks.cpp block by block: the same nesting, the same parameter names (which
// are the reference implementation's), eval-mode norms and no dropout.
#include "pix2pix/infer/onnx_export.hpp"

#include <onnx/checker.h>

#include <map>
#include <set>

#include "pix2pix/build_info.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/model/reference_state_dict.hpp"
#include "pix2pix/train/checkpoint.hpp"

namespace pix2pix::infer {
namespace {

// torch's default, which every norm layer of networks.cpp keeps.
constexpr float kNormEpsilon = 1e-5f;

void add_ints(onnx::NodeProto& node, const char* name, const std::vector<std::int64_t>& values) {
  auto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (const auto v : values) attribute->add_ints(v);
}

void add_float(onnx::NodeProto& node, const char* name, float value) {
  auto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::FLOAT);
  attribute->set_f(value);
}

void add_int(onnx::NodeProto& node, const char* name, std::int64_t value) {
  auto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

// Writes the U-Net's nodes into one graph; tensors are added as initializers when first used.
class UnetGraphWriter {
 public:
  UnetGraphWriter(onnx::GraphProto& graph, const model::UnetGenerator& generator)
      : graph_(graph), norm_(generator->options().norm), levels_(generator->options().num_downs) {
    for (const auto& [name, tensor] : model::named_tensors(*generator)) tensors_[name] = tensor;
  }

  // Block `level` (0: outermost) with parameter names under `prefix`, applied to `x`.
  std::string block(const std::string& x, const std::string& prefix, std::int64_t level) {
    if (level == 0) {
      const std::string down = conv("Conv", x, prefix + "0");
      const std::string inner = block(down, prefix + "1.model.", 1);
      return node("Tanh", {conv("ConvTranspose", node("Relu", {inner}), prefix + "3")});
    }
    onnx::NodeProto* leaky = nullptr;
    const std::string activated = node("LeakyRelu", {x}, &leaky);
    add_float(*leaky, "alpha", 0.2f);
    std::string h = conv("Conv", activated, prefix + "1");
    if (level == levels_ - 1) {
      h = norm(conv("ConvTranspose", node("Relu", {h}), prefix + "3"), prefix + "4");
    } else {
      h = block(norm(h, prefix + "2"), prefix + "3.model.", level + 1);
      h = norm(conv("ConvTranspose", node("Relu", {h}), prefix + "5"), prefix + "6");
    }
    onnx::NodeProto* concat = nullptr;
    const std::string out = node("Concat", {x, h}, &concat);
    add_int(*concat, "axis", 1);
    return out;
  }

  void rename_last_output(const std::string& name) { graph_.mutable_node(graph_.node_size() - 1)->set_output(0, name); }

 private:
  std::string node(const std::string& op, const std::vector<std::string>& inputs, onnx::NodeProto** made = nullptr) {
    auto* n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(graph_.node_size()));
    for (const auto& input : inputs) n->add_input(input);
    n->add_output(n->name());
    if (made) *made = n;
    return n->name();
  }

  const torch::Tensor& tensor(const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) throw Error("the generator has no tensor " + name + " (not a U-Net of networks.cpp?)");
    return it->second;
  }

  std::string initializer(const std::string& name, const torch::Tensor& value) {
    if (!added_.insert(name).second) return name;
    const torch::Tensor t = value.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    auto* init = graph_.add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    for (const auto size : t.sizes()) init->add_dims(size);
    // raw_data is little-endian, as the x86-64 and ARM machines this builds for are.
    init->set_raw_data(std::string(static_cast<const char*>(t.data_ptr()), t.numel() * sizeof(float)));
    return name;
  }

  // Conv / ConvTranspose with networks.cpp's geometry (4x4, stride 2, padding 1).
  std::string conv(const std::string& op, const std::string& x, const std::string& name) {
    std::vector<std::string> inputs = {x, initializer(name + ".weight", tensor(name + ".weight"))};
    if (tensors_.count(name + ".bias")) inputs.push_back(initializer(name + ".bias", tensor(name + ".bias")));
    onnx::NodeProto* made = nullptr;
    const std::string out = node(op, inputs, &made);
    add_ints(*made, "kernel_shape", {4, 4});
    add_ints(*made, "strides", {2, 2});
    add_ints(*made, "pads", {1, 1, 1, 1});
    last_channels_ = tensor(name + ".weight").size(op == "Conv" ? 0 : 1);
    return out;
  }

  // The norm after the last convolution (whose output channels it takes).
  std::string norm(const std::string& x, const std::string& name) {
    onnx::NodeProto* made = nullptr;
    std::string out;
    switch (norm_) {
      case model::Norm::none:
        return x;
      case model::Norm::batch:
        out = node("BatchNormalization",
                   {x, initializer(name + ".weight", tensor(name + ".weight")),
                    initializer(name + ".bias", tensor(name + ".bias")),
                    initializer(name + ".running_mean", tensor(name + ".running_mean")),
                    initializer(name + ".running_var", tensor(name + ".running_var"))},
                   &made);
        break;
      case model::Norm::instance:  // no affine parameters, no running statistics (as the reference's)
        out = node("InstanceNormalization",
                   {x, initializer(name + ".scale", torch::ones({last_channels_})),
                    initializer(name + ".shift", torch::zeros({last_channels_}))},
                   &made);
        break;
    }
    add_float(*made, "epsilon", kNormEpsilon);
    return out;
  }

  onnx::GraphProto& graph_;
  model::Norm norm_;
  std::int64_t levels_;
  std::map<std::string, torch::Tensor> tensors_;
  std::set<std::string> added_;
  std::int64_t last_channels_ = 0;
};

void describe_value(onnx::ValueInfoProto& value, const std::string& name, std::int64_t channels) {
  value.set_name(name);
  auto* type = value.mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = type->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_value(channels);
  shape->add_dim()->set_dim_param("height");
  shape->add_dim()->set_dim_param("width");
}

}  // namespace

onnx::ModelProto generator_to_onnx(const model::UnetGenerator& generator,
                                   const std::vector<std::pair<std::string, std::string>>& metadata) {
  const auto& options = generator->options();
  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name("pix2pix-mpi");
  model.set_producer_version(build_info::kVersion);
  model.set_model_version(1);
  model.set_doc_string(
      "Pix2Pix U-Net generator in eval mode (norm running statistics, no dropout). Input A: float NCHW in [-1, 1] "
      "(pixel / 127.5 - 1); output fake_B: float NCHW in [-1, 1] ((y + 1) * 127.5 gives pixels). Height and width "
      "must be multiples of 2^" +
      std::to_string(options.num_downs) + ".");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  for (const auto& [key, value] : metadata) {
    auto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  auto* graph = model.mutable_graph();
  graph->set_name("pix2pix_unet_generator");
  describe_value(*graph->add_input(), kOnnxInput, options.in_channels);
  describe_value(*graph->add_output(), kOnnxOutput, options.out_channels);
  UnetGraphWriter writer(*graph, generator);
  writer.block(kOnnxInput, "model.model.", 0);
  writer.rename_last_output(kOnnxOutput);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(std::string("the ONNX checker refuses the exported graph (a bug): ") + e.what());
  }
  return model;
}

void write_onnx_model(const std::string& path, const onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("cannot serialise the ONNX model for " + path);
  train::write_bytes_atomically(path, bytes.data(), bytes.size());
}

}  // namespace pix2pix::infer
