// What early stopping watches (--es-metric) and where its value comes from: the options it is
// told (name, unit, which way is better), the value each validation gives it, and the column of
// metrics.csv its smoothed value goes to.
#pragma once

#include "pix2pix/gan/content_score.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/train/early_stopping.hpp"
#include "pix2pix/train/train_options.hpp"
#include "pix2pix/train/validator.hpp"

namespace pix2pix::train {

// The early-stopping options with the name and unit of what is watched: --es-metric's, and with
// psnr the model's content score when the val split is unpaired (`content`, else null).
EarlyStoppingOptions watched(const LoopOptions& options, const gan::ContentScore* content);

// The value early stopping is given from validation `v`, and where in `m` its smoothed value goes;
// `content`: the val split is unpaired and psnr means the model's content score.
struct WatchedValue {
  double value;
  double* smoothed;
};
WatchedValue watched_value(EsMetric metric, bool content, const ValidationResult& v, metrics::EpochMetrics& m);

}  // namespace pix2pix::train
