#include "pix2pix/train/recognition_loss.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"

namespace pix2pix::train {
namespace {

constexpr const char* kOption = "--aux-classifier";

}  // namespace

RecognitionLoss::RecognitionLoss(const std::string& path, double weight, const data::PairedDataset& dataset,
                                 std::int64_t height, std::int64_t width, const torch::Device& device)
    : saved_(load_classifier(path, device)), weight_(weight), device_(device) {
  std::int32_t low = 0, high = 0;
  for (const char* split : {data::format::kTrain, data::format::kVal}) {
    if (!dataset.split(split).has_labels)
      throw UsageError(std::string(kOption) + " needs labels, and the " + split + " split of " + dataset.path() +
                       " has no labels (pix2pix prepare --labels adds them)");
    const auto [split_low, split_high] = dataset.label_range(split);
    low = std::min(low, split_low);
    high = std::max(high, split_high);
  }
  if (low < 0) throw Error(dataset.path() + ": negative label " + std::to_string(low));
  const auto& train = dataset.split(data::format::kTrain);
  const auto& val = dataset.split(data::format::kVal);
  check_classifier_fits(saved_, {train.channels_b, height, width, high}, kOption);
  check_classifier_fits(saved_, {val.channels_b, val.height, val.width, high}, std::string(kOption) + " (val split)");

  char text[160];
  std::snprintf(text, sizeof(text), " epoch=%lld val_accuracy=%.17g checksum=%016" PRIx64 " lambda_aux=%.17g",
                static_cast<long long>(saved_.record.epoch), saved_.record.val_accuracy, saved_.checksum, weight_);
  identity_ = model::describe(saved_.network->options()) + text;
}

torch::Tensor RecognitionLoss::logits(const torch::Tensor& images, Precision precision) {
  torch::Tensor out;
  {
    AutocastGuard autocast(device_, precision);
    out = saved_.network->forward(images);
  }
  return out.to(torch::kFloat32);  // the loss in fp32 whatever the network ran in
}

torch::Tensor RecognitionLoss::operator()(const torch::Tensor& images, const torch::Tensor& labels,
                                          Precision precision) {
  // Note [recognition loss over the global batch]
  return weight_ * torch::nn::functional::cross_entropy(logits(images, precision), labels);
}

torch::Tensor RecognitionLoss::correct(const torch::Tensor& images, const torch::Tensor& labels, Precision precision) {
  return recognised_per_image(saved_.network, images, labels, device_, precision).sum();
}

torch::Tensor recognised_per_image(model::Classifier& classifier, const torch::Tensor& images,
                                   const torch::Tensor& labels, const torch::Device& device, Precision precision) {
  torch::NoGradGuard no_grad;
  torch::Tensor logits;
  {
    AutocastGuard autocast(device, precision);
    logits = classifier->forward(images);
  }
  return logits.argmax(1).eq(labels.to(logits.device(), torch::kInt64));
}

}  // namespace pix2pix::train
