// The options that shape both networks, as one line of text ("in=3 out=3 num_downs=8 ngf=64
// dropout=1 ndf=64 n_layers_d=3 norm=batch"; a ResNet generator has "net_g=resnet n_blocks=9"
// instead of num_downs): checkpoints store it, a resume must match it, and inference rebuilds the
// generator from it alone.
#pragma once

#include <string>

#include "pix2pix/model/networks.hpp"

namespace pix2pix::model {

struct ModelShape {
  bool cyclegan = false;  // "model=cyclegan": G_A and D_A, which judges B-domain images alone
  bool onesided = false;  // "model=onesided": G and a D that judges B-domain images alone
  GeneratorOptions generator;
  DiscriminatorOptions discriminator;
};

std::string describe_model_shape(const GeneratorOptions& generator, const DiscriminatorOptions& discriminator);
// An unpaired model's ("cyclegan", "onesided"): "model=NAME " and the shape of its generator A to
// B (CycleGAN's G_A) and of the discriminator of B-domain images (D_A).
std::string describe_unpaired_shape(const std::string& model, const GeneratorOptions& g_a,
                                    const DiscriminatorOptions& d_a);

// The inverse of describe_model_shape. Throws Error naming the first missing, unknown or
// malformed field (a damaged or foreign file must not build a network of some other shape).
ModelShape parse_model_shape(const std::string& text);

}  // namespace pix2pix::model
