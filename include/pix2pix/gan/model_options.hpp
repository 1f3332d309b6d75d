// What a model is built from: its networks' shape, its objective and what its update groups are
// told. A run's options (train::TrainOptions::model_options()) fill it, with the defaults and the
// command line's meaning kept there; gan/ sees nothing else of the run.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "pix2pix/gan/losses.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/optim/update_group.hpp"

namespace pix2pix::gan {

struct ModelOptions {
  std::string model;  // a name of model_registry.hpp
  std::string data;   // the pix2pix-h5 file, for messages about what it holds

  // Networks (--ngf, --ndf, --n-layers-d, --num-downs 0: from the crop size, --netG, --norm, dropout)
  std::int64_t ngf = 0, ndf = 0, n_layers_d = 0, num_downs = 0;
  nets::GeneratorArch net_g = nets::GeneratorArch::unet;
  std::int64_t n_blocks = 0;
  nets::Norm norm = nets::Norm::batch;
  bool dropout = false;
  std::string init_generator, init_discriminator;  // reference state dicts the networks start from

  // Objective: the GAN loss, and the model's own numbers by option name ("lambda-l1": its
  // registry entry's parameters; make_gan_model fills those not set with their defaults).
  GanMode gan_mode = GanMode::vanilla;
  std::map<std::string, double> parameters;

  optim::UpdateOptions update;  // what each update group is told, the precision among it
};

// The model's parameter `name` (Error naming it when it is not set: make_gan_model sets them all).
double parameter(const ModelOptions& options, const std::string& name);

}  // namespace pix2pix::gan
