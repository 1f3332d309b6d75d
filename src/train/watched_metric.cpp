// What early stopping watches: --es-metric, its options, and each validation's value of it.
#include "pix2pix/train/watched_metric.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::train {
namespace {
const Choices<EsMetric> kEsMetricChoices = {
    {"psnr", EsMetric::psnr}, {"accuracy", EsMetric::accuracy}, {"fid", EsMetric::fid}, {"kid", EsMetric::kid}};
}  // namespace

EarlyStoppingOptions watched(const LoopOptions& o, const gan::ContentScore* content) {
  EarlyStoppingOptions e = o.early_stopping;
  if (o.es_metric == EsMetric::accuracy) {
    e.metric = "recognition accuracy of G(A)";
    e.unit = "";
  } else if (o.es_metric == EsMetric::fid || o.es_metric == EsMetric::kid) {
    e.metric = o.es_metric == EsMetric::fid ? "validation FID" : "validation KID";
    e.unit = "";
    e.lower_is_better = true;
  } else if (content != nullptr) {
    e.metric = "validation " + content->metric;
  }
  return e;
}

EsMetric parse_es_metric(const std::string& text) {
  return parse_choice(text, "--es-metric", kEsMetricChoices);
}
std::string to_string(EsMetric value) {
  return choice_name(value, kEsMetricChoices);
}

void check_feature_options(const LoopOptions& o) {
  const bool any = o.val_fid || o.val_kid;
  if (any && o.val_features.file.empty())
    throw UsageError(
        "--val-metrics fid and kid need the feature network they are measured with: --val-features FILE.pt");
  if (!any && !o.val_features.file.empty())
    throw UsageError("--val-features is given but --val-metrics has neither fid nor kid");
  if ((o.es_metric == EsMetric::fid && !o.val_fid) || (o.es_metric == EsMetric::kid && !o.val_kid))
    throw UsageError("--es-metric " + to_string(o.es_metric) + " watches the " + to_string(o.es_metric) +
                     " of each validation: give --val-features FILE.pt (and " + to_string(o.es_metric) +
                     " in --val-metrics)");
}

WatchedValue watched_value(EsMetric metric, bool content, const ValidationResult& v, metrics::EpochMetrics& m) {
  switch (metric) {
    case EsMetric::accuracy:
      return {v.recognition, &m.val_recognition_smoothed};
    case EsMetric::fid:
      return {v.fid, &m.val_fid_smoothed};
    case EsMetric::kid:
      return {v.kid, &m.val_kid_smoothed};
    case EsMetric::psnr:
      break;
  }
  if (content) return {m.val_content_psnr, &m.val_content_psnr_smoothed};
  return {v.psnr, &m.val_psnr_smoothed};
}

}  // namespace pix2pix::train
