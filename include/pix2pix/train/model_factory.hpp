// The model --model names, built for the run loop.
#pragma once

#include <memory>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/train/gan_model.hpp"
#include "pix2pix/train/recognition_loss.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::train {

// Whether the model learns from pairs (Pix2Pix), so that it cannot train or validate on an
// unpaired split; CycleGAN and onesided learn from unpaired images (and pairs, taken as two sets).
bool learns_from_pairs(ModelKind kind);
// Whether the model can validate an unpaired val split: it needs a generator back for the
// cycle-reconstruction PSNR (CycleGAN's G_B); onesided has none.
bool validates_unpaired_splits(ModelKind kind);

// `recognition` (--aux-classifier; may be null) must outlive the model; only Pix2Pix takes one.
std::unique_ptr<GanModel> make_gan_model(const TrainOptions& options, const ModelInputs& inputs,
                                         const torch::Device& device, dist::Communicator& comm,
                                         RecognitionLoss* recognition);

}  // namespace pix2pix::train
