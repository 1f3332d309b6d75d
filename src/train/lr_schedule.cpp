// The linear policy is the reference's LambdaLR rule: during epoch e (from 0) the factor is
// 1 - max(0, e + 1 - epochs) / (epochs_decay + 1).
#include "pix2pix/train/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "pix2pix/common/error.hpp"

namespace pix2pix::train {

LrPolicy parse_lr_policy(const std::string& text) {
  if (text == "constant") return LrPolicy::constant;
  if (text == "linear") return LrPolicy::linear;
  throw Error("--lr-policy must be constant or linear; got '" + text + "'");
}

LrScaling parse_lr_scaling(const std::string& text) {
  if (text == "none") return LrScaling::none;
  if (text == "sqrt") return LrScaling::sqrt;
  if (text == "linear") return LrScaling::linear;
  throw Error("--lr-scaling must be none, sqrt or linear; got '" + text + "'");
}

std::string to_string(LrPolicy policy) { return policy == LrPolicy::constant ? "constant" : "linear"; }

std::string to_string(LrScaling scaling) {
  switch (scaling) {
    case LrScaling::none: return "none";
    case LrScaling::sqrt: return "sqrt";
    case LrScaling::linear: return "linear";
  }
  return "?";
}

void LrSchedule::validate() const {
  if (!(lr > 0)) throw Error("--lr must be > 0");
  if (epochs < 0 || epochs_decay < 0) throw Error("--epochs and --epochs-decay must be >= 0");
  if (base_batch < 1) throw Error("--base-batch must be at least 1");
  if (global_batch < 1) throw Error("the global batch must be at least 1");
  if (warmup_epochs < 0) throw Error("--warmup-epochs must be >= 0");
}

double LrSchedule::scaled_lr() const {
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(base_batch);
  switch (scaling) {
    case LrScaling::none: return lr;
    case LrScaling::sqrt: return lr * std::sqrt(ratio);
    case LrScaling::linear: return lr * ratio;
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

}  // namespace pix2pix::train
