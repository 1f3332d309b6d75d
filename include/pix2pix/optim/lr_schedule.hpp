// Learning rate per epoch: the pix2pix policies (constant, or constant then linear decay to 0),
// an optional linear warm-up, and the batch-size scaling rules of the paper (none, sqrt, linear
// in the global batch relative to --base-batch). Pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace pix2pix::optim {

enum class LrPolicy { constant, linear };
enum class LrScaling { none, sqrt, linear };
LrPolicy parse_lr_policy(const std::string& text);    // Error naming --lr-policy otherwise
LrScaling parse_lr_scaling(const std::string& text);  // Error naming --lr-scaling otherwise
std::string to_string(LrPolicy policy);
std::string to_string(LrScaling scaling);

struct LrSchedule {
  double lr = 2e-4;  // at --base-batch
  LrPolicy policy = LrPolicy::linear;
  std::int64_t epochs = 100;        // at the full rate
  std::int64_t epochs_decay = 100;  // linear: then decay to 0 over this many
  LrScaling scaling = LrScaling::none;
  std::int64_t base_batch = 1;     // the batch `lr` was tuned for
  std::int64_t global_batch = 1;   // per-rank batch x ranks
  std::int64_t warmup_epochs = 0;  // linear ramp from lr/warmup to lr

  double scaled_lr() const;                // lr after the batch-size rule
  double lr_at(std::int64_t epoch) const;  // epoch counts from 0
  void validate() const;                   // Error naming the option
};

}  // namespace pix2pix::optim
