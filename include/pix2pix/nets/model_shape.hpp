// The options that shape both networks, as one line of text ("in=3 out=3 num_downs=8 ngf=64
// dropout=1 ndf=64 n_layers_d=3 norm=batch"; a ResNet generator has "net_g=resnet n_blocks=9"
// instead of num_downs): checkpoints store it, a resume must match it, and inference rebuilds the
// generator from it alone.
#pragma once

#include <string>

#include "pix2pix/nets/networks.hpp"

namespace pix2pix::nets {

struct ModelShape {
  // "model=NAME": an unpaired model's (gan/model_registry.hpp), with the shapes of its generator A
  // to B and of a discriminator that judges B-domain images alone. "": a paired model's line,
  // whose discriminator judges (A, B) pairs.
  std::string model;
  GeneratorOptions generator;
  DiscriminatorOptions discriminator;
};

std::string describe_model_shape(const GeneratorOptions& generator, const DiscriminatorOptions& discriminator);
// An unpaired model's: "model=NAME " and the shape of its generator A to B and of the
// discriminator of B-domain images.
std::string describe_unpaired_shape(const std::string& model, const GeneratorOptions& g_a,
                                    const DiscriminatorOptions& d_a);

// The inverse of describe_model_shape. Throws Error naming the first missing, unknown or
// malformed field (a damaged or foreign file must not build a network of some other shape).
ModelShape parse_model_shape(const std::string& text);

}  // namespace pix2pix::nets
