// The linear policy is the reference's LambdaLR rule: during epoch e (from 0) the factor is
// 1 - max(0, e + 1 - epochs) / (epochs_decay + 1).
#include "pix2pix/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::optim {

namespace {
const Choices<LrPolicy> kLrPolicyChoices = {{"constant", LrPolicy::constant}, {"linear", LrPolicy::linear}};
}  // namespace

LrPolicy parse_lr_policy(const std::string& text) {
  return parse_choice(text, "--lr-policy", kLrPolicyChoices);
}
std::string to_string(LrPolicy value) {
  return choice_name(value, kLrPolicyChoices);
}

namespace {
const Choices<LrScaling> kLrScalingChoices = {
    {"none", LrScaling::none}, {"sqrt", LrScaling::sqrt}, {"linear", LrScaling::linear}};
}  // namespace

LrScaling parse_lr_scaling(const std::string& text) {
  return parse_choice(text, "--lr-scaling", kLrScalingChoices);
}
std::string to_string(LrScaling value) {
  return choice_name(value, kLrScalingChoices);
}

void LrSchedule::validate() const {
  if (!(lr > 0 && std::isfinite(lr))) throw UsageError("--lr must be > 0");
  if (epochs < 0 || epochs_decay < 0) throw UsageError("--epochs and --epochs-decay must be >= 0");
  if (base_batch < 1) throw UsageError("--base-batch must be at least 1");
  if (global_batch < 1) throw UsageError("the global batch must be at least 1");
  if (warmup_epochs < 0) throw UsageError("--warmup-epochs must be >= 0");
}

double LrSchedule::scaled_lr() const {
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(base_batch);
  switch (scaling) {
    case LrScaling::none:
      return lr;
    case LrScaling::sqrt:
      return lr * std::sqrt(ratio);
    case LrScaling::linear:
      return lr * ratio;
  }
  return lr;
}

double LrSchedule::lr_at(std::int64_t epoch) const {
  double factor = 1.0;
  if (policy == LrPolicy::linear) {
    const double past = static_cast<double>(std::max<std::int64_t>(0, epoch + 1 - epochs));
    factor = std::max(0.0, 1.0 - past / static_cast<double>(epochs_decay + 1));
  }
  if (epoch < warmup_epochs) factor *= static_cast<double>(epoch + 1) / static_cast<double>(warmup_epochs);
  return scaled_lr() * factor;
}

}  // namespace pix2pix::optim
