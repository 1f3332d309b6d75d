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
// What validation scores an unpaired val split by, and reports beside the PSNR of G(A) against B
// on a paired one: CycleGAN the cycle-reconstruction PSNR (with its G_B), onesided the deviation
// PSNR of G(B) against B (it has no generator back); Pix2Pix none (it learns from pairs only).
enum class ContentScore { none, cycle, deviation };
ContentScore content_score(ModelKind kind);
std::string to_string(ContentScore score);  // "cycle", "deviation" ("" for none): metrics.csv's val_<it>_psnr

// `recognition` (--aux-classifier; may be null) must outlive the model; only Pix2Pix takes one.
std::unique_ptr<GanModel> make_gan_model(const TrainOptions& options, const ModelInputs& inputs,
                                         const torch::Device& device, dist::Communicator& comm,
                                         RecognitionLoss* recognition);

}  // namespace pix2pix::train
