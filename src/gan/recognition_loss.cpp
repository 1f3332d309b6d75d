#include "pix2pix/gan/recognition_loss.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"

namespace pix2pix::gan {
namespace {

constexpr const char* kOption = "--aux-classifier";

}  // namespace

RecognitionLoss::RecognitionLoss(const std::string& path, double weight, const data::PairedDataset& dataset,
                                 std::int64_t height, std::int64_t width, const torch::Device& device)
    : saved_(checkpoint::load_classifier(path, device)), weight_(weight), device_(device) {
  const std::int32_t high = std::max(checkpoint::largest_label(dataset, data::format::kTrain, kOption),
                                     checkpoint::largest_label(dataset, data::format::kVal, kOption));
  const auto& train = dataset.split(data::format::kTrain);
  const auto& val = dataset.split(data::format::kVal);
  checkpoint::check_classifier_fits(saved_, {train.channels_b, height, width, high}, kOption);
  checkpoint::check_classifier_fits(saved_, {val.channels_b, val.height, val.width, high},
                                    std::string(kOption) + " (val split)");

  char text[160];
  std::snprintf(text, sizeof(text), " epoch=%lld val_accuracy=%.17g checksum=%016" PRIx64 " lambda_aux=%.17g",
                static_cast<long long>(saved_.record.epoch), saved_.record.val_accuracy, saved_.checksum, weight_);
  identity_ = nets::describe(saved_.network->options()) + text;
}

// The classifier's logits for `images` in fp32 (it runs under autocast for `precision`).
torch::Tensor classifier_logits(nets::Classifier& classifier, const torch::Tensor& images, const torch::Device& device,
                                optim::Precision precision) {
  torch::Tensor out;
  {
    optim::AutocastGuard autocast(device, precision);
    out = classifier->forward(images);
  }
  return out.to(torch::kFloat32);  // the loss in fp32 whatever the network ran in
}

torch::Tensor RecognitionLoss::operator()(const torch::Tensor& images, const torch::Tensor& labels,
                                          optim::Precision precision) {
  // See Note [recognition loss over the global batch]
  return weight_ *
         torch::nn::functional::cross_entropy(classifier_logits(saved_.network, images, device_, precision), labels);
}

torch::Tensor RecognitionLoss::correct(const torch::Tensor& images, const torch::Tensor& labels,
                                       optim::Precision precision) {
  return recognised_per_image(saved_.network, images, labels, device_, precision).sum();
}

torch::Tensor recognised_per_image(nets::Classifier& classifier, const torch::Tensor& images,
                                   const torch::Tensor& labels, const torch::Device& device,
                                   optim::Precision precision) {
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = classifier_logits(classifier, images, device, precision);
  return logits.argmax(1).eq(labels.to(logits.device(), torch::kInt64));
}

}  // namespace pix2pix::gan
