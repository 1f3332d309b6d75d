// The graph mirrors networks.cpp (U-Net) or resnet_generator.cpp (ResNet) layer by layer: the same
// nesting, the same parameter names (which are the reference implementation's), eval-mode norms
// and no dropout.
#include "pix2pix/interop/onnx_export.hpp"

#include <onnx/checker.h>

#include <map>
#include <set>

#include "pix2pix/build_info.hpp"
#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/interop/reference_state_dict.hpp"

namespace pix2pix::interop {
namespace {

// torch's default, which every norm layer of networks.cpp keeps.
constexpr float kNormEpsilon = 1e-5f;

void add_ints(onnx::NodeProto& node, const char* name, const std::vector<std::int64_t>& values) {
  auto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (const auto v : values) attribute->add_ints(v);
}

void add_string(onnx::NodeProto& node, const char* name, const std::string& value) {
  auto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::STRING);
  attribute->set_s(value);
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

// A convolution's geometry: networks.cpp's U-Net uses 4x4, stride 2, padding 1 throughout.
struct ConvGeometry {
  std::int64_t kernel = 4, stride = 2, pad = 1, output_padding = 0;
};

// Writes a generator's nodes into one graph; tensors are added as initializers when first used.
class GraphWriter {
 public:
  GraphWriter(onnx::GraphProto& graph, const nets::Generator& generator)
      : graph_(graph), norm_(generator->options().norm), levels_(generator->options().num_downs) {
    for (const auto& [name, tensor] : interop::named_tensors(*generator)) tensors_[name] = tensor;
  }

  // The ResNet generator applied to `x`, layer for layer as resnet_generator.cpp builds it (the
  // indices of its Sequential, without Dropout, which eval mode leaves out).
  std::string resnet(const std::string& x, std::int64_t n_blocks) {
    std::string h = node("Relu", {norm(conv("Conv", reflect(x, 3), "model.1", {7, 1, 0, 0}), "model.2")});
    h = node("Relu", {norm(conv("Conv", h, "model.4", {3, 2, 1, 0}), "model.5")});
    h = node("Relu", {norm(conv("Conv", h, "model.7", {3, 2, 1, 0}), "model.8")});
    std::int64_t index = 10;
    for (std::int64_t b = 0; b < n_blocks; ++b, ++index) {
      const std::string block = "model." + std::to_string(index) + ".conv_block.";
      // With dropout the second convolution and its norm sit one index on (block.4 is Dropout).
      const bool dropout = tensors_.count(block + "6.weight") > 0;
      std::string r = node("Relu", {norm(conv("Conv", reflect(h, 1), block + "1", {3, 1, 0, 0}), block + "2")});
      r = norm(conv("Conv", reflect(r, 1), block + (dropout ? "6" : "5"), {3, 1, 0, 0}), block + (dropout ? "7" : "6"));
      h = node("Add", {h, r});
    }
    for (int up = 0; up < 2; ++up, index += 3)
      h = node("Relu", {norm(conv("ConvTranspose", h, "model." + std::to_string(index), {3, 2, 1, 1}),
                             "model." + std::to_string(index + 1))});
    return node("Tanh", {conv("Conv", reflect(h, 3), "model." + std::to_string(index + 1), {7, 1, 0, 0})});
  }

  // U-Net block `level` (0: outermost) with parameter names under `prefix`, applied to `x`.
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
    if (it == tensors_.end()) throw Error("the generator has no tensor " + name + " (not a network of ours?)");
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

  // Reflection padding of `pad` pixels on each side of H and W (opset 11+: the pads are an input).
  std::string reflect(const std::string& x, std::int64_t pad) {
    const std::string pads = "reflect_pads_" + std::to_string(pad);
    if (added_.insert(pads).second) {
      auto* init = graph_.add_initializer();
      init->set_name(pads);
      init->set_data_type(onnx::TensorProto::INT64);
      init->add_dims(8);
      for (const std::int64_t v :
           {std::int64_t{0}, std::int64_t{0}, pad, pad, std::int64_t{0}, std::int64_t{0}, pad, pad})
        init->add_int64_data(v);
    }
    onnx::NodeProto* made = nullptr;
    const std::string out = node("Pad", {x, pads}, &made);
    add_string(*made, "mode", "reflect");
    return out;
  }

  // Conv / ConvTranspose of `geometry`.
  std::string conv(const std::string& op, const std::string& x, const std::string& name,
                   const ConvGeometry& geometry = {}) {
    std::vector<std::string> inputs = {x, initializer(name + ".weight", tensor(name + ".weight"))};
    if (tensors_.count(name + ".bias")) inputs.push_back(initializer(name + ".bias", tensor(name + ".bias")));
    onnx::NodeProto* made = nullptr;
    const std::string out = node(op, inputs, &made);
    const std::int64_t k = geometry.kernel, s = geometry.stride, p = geometry.pad;
    add_ints(*made, "kernel_shape", {k, k});
    add_ints(*made, "strides", {s, s});
    add_ints(*made, "pads", {p, p, p, p});
    if (geometry.output_padding != 0)
      add_ints(*made, "output_padding", {geometry.output_padding, geometry.output_padding});
    last_channels_ = tensor(name + ".weight").size(op == "Conv" ? 0 : 1);
    return out;
  }

  // The norm after the last convolution (whose output channels it takes).
  std::string norm(const std::string& x, const std::string& name) {
    onnx::NodeProto* made = nullptr;
    std::string out;
    switch (norm_) {
      case nets::Norm::none:
        return x;
      case nets::Norm::batch:
        out = node("BatchNormalization",
                   {x, initializer(name + ".weight", tensor(name + ".weight")),
                    initializer(name + ".bias", tensor(name + ".bias")),
                    initializer(name + ".running_mean", tensor(name + ".running_mean")),
                    initializer(name + ".running_var", tensor(name + ".running_var"))},
                   &made);
        break;
      case nets::Norm::instance:  // no affine parameters, no running statistics (as the reference's)
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
  nets::Norm norm_;
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

onnx::ModelProto generator_to_onnx(const nets::Generator& generator,
                                   const std::vector<std::pair<std::string, std::string>>& metadata) {
  const auto& options = generator->options();
  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name("pix2pix-mpi");
  model.set_producer_version(build_info::kVersion);
  model.set_model_version(1);
  const bool resnet = options.arch == nets::GeneratorArch::resnet;
  model.set_doc_string(std::string(resnet ? "ResNet" : "U-Net") + " generator (" + nets::net_g_name(options) +
                       ") in eval mode (norm running statistics, no dropout). Input A: float NCHW in [-1, 1] "
                       "(pixel / 127.5 - 1); output fake_B: float NCHW in [-1, 1] ((y + 1) * 127.5 gives pixels). "
                       "Height and width must be multiples of " +
                       std::to_string(nets::side_multiple(options)) + ".");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  for (const auto& [key, value] : metadata) {
    auto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  auto* graph = model.mutable_graph();
  graph->set_name(resnet ? "pix2pix_resnet_generator" : "pix2pix_unet_generator");
  describe_value(*graph->add_input(), kOnnxInput, options.in_channels);
  describe_value(*graph->add_output(), kOnnxOutput, options.out_channels);
  GraphWriter writer(*graph, generator);
  if (resnet)
    writer.resnet(kOnnxInput, options.n_blocks);
  else
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
  write_file_atomically(path, std::string_view(bytes.data(), bytes.size()), /*durable=*/true);
}

}  // namespace pix2pix::interop
