#include "pix2pix/train/stop_protocol.hpp"

#include <exception>
#include <utility>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"

namespace pix2pix::train {
namespace {
const Choices<EsMetric> kEsMetricChoices = {
    {"psnr", EsMetric::psnr}, {"accuracy", EsMetric::accuracy}, {"fid", EsMetric::fid}, {"kid", EsMetric::kid}};
}  // namespace

// Note [one stop protocol]
// Every rank must leave the loop at the same step or epoch, or the next collective waits for ever.
// Two things end a run early. A signal (SIGINT, SIGTERM, SIGUSR1) may reach only some ranks, so
// every rank polls at the same points (between steps, between epochs) with one max all-reduce:
// a signal anywhere stops all, and each names it. The early-stopping rule is rank 0's (it alone
// validates), so its decision, the reason with it, is broadcast after each validation and every
// rank follows it. Both trainers go through StopProtocol; neither polls or decides otherwise.
StopProtocol::StopProtocol(dist::Communicator& comm, EarlyStoppingOptions rule)
    : comm_(&comm), rule_(std::move(rule)) {}

int StopProtocol::signal_of_any_rank() const {
  return static_cast<int>(comm_->allreduce_max(static_cast<double>(interrupt_signal())));
}

Decision StopProtocol::decide(std::int64_t epoch, double value) {
  Decision d;
  if (comm_->rank() == 0) d = rule_.update(epoch, value);
  if (comm_->world() == 1) return d;
  auto message = torch::tensor({d.stop ? 1.0 : 0.0, d.improved ? 1.0 : 0.0, static_cast<double>(d.best_epoch),
                                d.best_smoothed, d.non_finite ? 1.0 : 0.0},
                               torch::kFloat64);
  comm_->broadcast(message, 0);
  d.stop = message[0].item<double>() > 0;
  d.improved = message[1].item<double>() > 0;
  d.best_epoch = static_cast<std::int64_t>(message[2].item<double>());
  d.best_smoothed = message[3].item<double>();
  d.non_finite = message[4].item<double>() > 0;
  if (d.stop) d.reason = comm_->broadcast_string(d.reason, 0);
  return d;
}

// Note [a graceful stop ends together]
// A graceful stop exits 75 on every rank, and the launcher must see 75 to requeue the job. But
// the ranks do not exit at the same instant, and both srun --kill-on-bad-exit and mpirun take the
// first non-zero exit for a failure and SIGTERM the ranks still running. Two things went wrong
// (seen in CI as a Slurm preemption that exited 143 and was not requeued): a rank other than 0,
// having no file to write, could exit while rank 0 was still writing last.pt (then killed
// mid-write); and a rank still finishing took the launcher's SIGTERM as a second, insisting
// signal and exited 128+15. So the stop ends together: rank 0 writes, every rank learns that it
// succeeded (one all-reduce), settles the handler (settle_interrupt: a further SIGTERM now exits
// 75, the truth, since the checkpoint is written), and a barrier makes sure all have settled
// before any rank can exit.
void StopProtocol::end_gracefully(const std::function<void()>& save_on_rank0) const {
  std::exception_ptr failed;
  if (comm_->rank() == 0 && save_on_rank0) {
    try {
      save_on_rank0();
    } catch (...) {
      failed = std::current_exception();
    }
  }
  const bool saved = comm_->allreduce_max(failed ? 1.0 : 0.0) == 0.0;
  if (failed) std::rethrow_exception(failed);
  if (!saved)
    throw Error("stopping by signal: rank 0 could not write the checkpoint (its log says why); this rank stops too");
  settle_interrupt(kExitInterrupted);
  comm_->barrier();
}

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

std::string watched_name(EsMetric metric, const std::string& unpaired_content) {
  switch (metric) {
    case EsMetric::accuracy:
      return "recognition";
    case EsMetric::fid:
    case EsMetric::kid:
      return to_string(metric);
    case EsMetric::psnr:
      break;
  }
  return unpaired_content.empty() ? "psnr" : unpaired_content + "_psnr";
}

}  // namespace pix2pix::train
