// `export --format onnx`: the U-Net generator as an ONNX graph in eval mode (running statistics,
// no dropout), built node by node with ONNX's own protobuf classes and validated by its checker.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pix2pix/nets/networks.hpp"

namespace pix2pix::interop {

// The opset the graph is written for: every operator it uses (Conv, ConvTranspose,
// BatchNormalization, InstanceNormalization, LeakyRelu, Relu, Tanh, Concat; for ResNet generators
// Pad in reflect mode, with its pads as an input, and Add) is defined there.
inline constexpr std::int64_t kOnnxOpset = 13;
inline constexpr const char* kOnnxInput = "A";
inline constexpr const char* kOnnxOutput = "fake_B";

// The graph of `generator` (its weights as initializers, named as its parameters are): input A
// [batch, in, height, width] in [-1, 1], output fake_B [batch, out, height, width] in [-1, 1];
// batch, height and width are dynamic (height and width must be multiples of
// model::side_multiple: 2^num_downs for a U-Net, 4 for a ResNet generator).
// `metadata` becomes the model's metadata_props. Throws Error when the checker refuses it.
onnx::ModelProto generator_to_onnx(const nets::Generator& generator,
                                   const std::vector<std::pair<std::string, std::string>>& metadata);

// Serialises `model` to `path` through a temporary file (fsync, rename): whole or not at all.
void write_onnx_model(const std::string& path, const onnx::ModelProto& model);

}  // namespace pix2pix::interop
