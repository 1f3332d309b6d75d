// The model --model names, built for the run loop.
#pragma once

#include <memory>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/train/gan_model.hpp"
#include "pix2pix/train/recognition_loss.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::train {

// `recognition` (--aux-classifier; may be null) must outlive the model; only Pix2Pix takes one.
std::unique_ptr<GanModel> make_gan_model(const TrainOptions& options, const ModelInputs& inputs,
                                         const torch::Device& device, dist::Communicator& comm,
                                         RecognitionLoss* recognition);

}  // namespace pix2pix::train
