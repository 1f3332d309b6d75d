// A trainer's Pix2Pix networks, for tests that compare or edit them.
#pragma once

#include "pix2pix/train/pix2pix_model.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::fixtures {

inline pix2pix::train::Pix2PixModel& pix2pix_model(pix2pix::train::Trainer& trainer) {
  return dynamic_cast<pix2pix::train::Pix2PixModel&>(trainer.model());
}

}  // namespace pix2pix::fixtures
