// The auxiliary recognition loss of Lupión et al. (2022, Fig. 9): a frozen classifier trained by
// `train-classifier` looks at G(A), and the generator's objective gains
// W · CE(C(G(A)), label). The classifier is in eval mode and its parameters take no gradients;
// gradients flow through it into G.
//
// Note [recognition loss over the global batch]: the paper sums the cross-entropy over a rank's
// images and divides by the global batch. Each rank here takes the mean over its own B images,
// and the gradient average over N ranks divides by N again: sum / (N·B), the paper's loss, so that
// N ranks of batch B train exactly as one process of batch N·B (distributed_equivalence_test).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::gan {

// The logits of `classifier` for `images` ([n, C, H, W] in [-1, 1]) in fp32, computed under
// autocast for `precision`: what the loss and the accuracy both start from.
torch::Tensor classifier_logits(nets::Classifier& classifier, const torch::Tensor& images, const torch::Device& device,
                                optim::Precision precision);

// Whether `classifier` assigns each of `images` ([n, C, H, W] in [-1, 1]) its label: bool [n] on
// the device, no gradients, under autocast for `precision`. What validation and `evaluate` count.
torch::Tensor recognised_per_image(nets::Classifier& classifier, const torch::Tensor& images,
                                   const torch::Tensor& labels, const torch::Device& device,
                                   optim::Precision precision);

class RecognitionLoss {
 public:
  // Loads `path` frozen onto `device` and checks it against the data on this rank: labels in the
  // train and val splits, every label within the classifier's classes, and images of the
  // classifier's channels at the size G produces in training (`height` x `width`) and in
  // validation (the val split's). UsageError naming --aux-classifier and the file otherwise.
  RecognitionLoss(const std::string& path, double weight, const data::PairedDataset& dataset, std::int64_t height,
                  std::int64_t width, const torch::Device& device);

  // W · mean over the batch of CE(C(images), labels): a scalar float32 tensor with gradients
  // into `images` ([n, C, H, W] in [-1, 1], G's output). Runs C under autocast for `precision`.
  torch::Tensor operator()(const torch::Tensor& images, const torch::Tensor& labels, optim::Precision precision);
  // How many of `images` C classifies as `labels` (no gradients): an int64 scalar on the device.
  torch::Tensor correct(const torch::Tensor& images, const torch::Tensor& labels, optim::Precision precision);

  double weight() const { return weight_; }
  // What a checkpoint records so that a resumed run uses the same classifier and weight: the
  // network's shape, its epoch and accuracy, a checksum of the file and W.
  const std::string& identity() const { return identity_; }
  const checkpoint::SavedClassifier& classifier() const { return saved_; }

 private:
  checkpoint::SavedClassifier saved_;
  double weight_;
  torch::Device device_;
  std::string identity_;
};

}  // namespace pix2pix::gan
