// What the run loop concludes of non-finite losses and validation values (trainer_guards.cpp):
// pure, so that its policy is tested without a run that would have to be made to diverge.
// See Note [non-finite values stop a run].
#pragma once

#include <cstdint>
#include <string>

#include "pix2pix/metrics/run_directory.hpp"

namespace pix2pix::train {

// "" when the epoch may stand; else why the run stops: a loss of the epoch (its mean over steps
// and ranks) that is NaN or infinite, unless the loss scaler skipped steps of this epoch
// (`scaler_skipped`: fp16's calibration may leave an infinite loss behind), or, that failing, a
// validation whose `watched` value was not finite (`val_not_finite`).
std::string non_finite_problem(std::int64_t epoch, const metrics::NamedValues& losses, bool scaler_skipped,
                               bool val_not_finite, const std::string& watched);

}  // namespace pix2pix::train
