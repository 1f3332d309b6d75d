// A trainer's networks, for tests that compare or edit them.
#pragma once

#include "pix2pix/gan/pix2pix_model.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::fixtures {

inline pix2pix::gan::Pix2PixModel& pix2pix_model(pix2pix::train::Trainer& trainer) {
  return dynamic_cast<pix2pix::gan::Pix2PixModel&>(trainer.model());
}

// Copies of every parameter of every network of the trainer's model, in networks() order.
inline std::vector<torch::Tensor> weights(pix2pix::train::Trainer& trainer) {
  std::vector<torch::Tensor> out;
  for (const auto& network : trainer.model().networks())
    for (const auto& p : network.module->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace pix2pix::fixtures
