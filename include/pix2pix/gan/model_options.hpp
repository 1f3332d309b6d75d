// What a model is built from: its networks' shape, its objective and what its update groups are
// told. A run's options (train::TrainOptions::model_options()) fill it, with the defaults and the
// command line's meaning kept there; gan/ sees nothing else of the run.
#pragma once

#include <cstdint>
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

  // Objective: the GAN loss, Pix2Pix's L1 weight, CycleGAN's cycle and identity weights, the image
  // pools' size (CycleGAN and onesided) and onesided's deviation weight.
  GanMode gan_mode = GanMode::vanilla;
  double lambda_l1 = 0, lambda_a = 0, lambda_b = 0, lambda_identity = 0, lambda_deviation = 0;
  std::int64_t pool_size = 0;

  optim::UpdateOptions update;  // what each update group is told, the precision among it
};

}  // namespace pix2pix::gan
