#include "pix2pix/metrics/run_report.hpp"

#include <cstdio>
#include <utility>

#include "pix2pix/metrics/curves.hpp"
#include "pix2pix/metrics/metrics_table.hpp"

namespace pix2pix::metrics {

RunReport::RunReport(ReportOptions options, std::vector<std::string> columns)
    : options_(std::move(options)), dir_(options_.run_dir, options_.resumed_epoch, std::move(columns)) {
  dir_.write_config(options_.config);
  if (options_.tensorboard)
    tensorboard_ = std::make_unique<TensorBoardEvents>(dir_.path() + "/tensorboard",
                                                       options_.resumed_epoch >= 0 ? options_.resumed_epoch + 1 : -1);
}

RunReport::~RunReport() = default;

void RunReport::epoch(const EpochMetrics& m) {
  dir_.append_metrics(m);
  if (tensorboard_) tensorboard_->epoch(m);
  const std::string line = epoch_line(m);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  dir_.log(line);
}

void RunReport::failed_epoch(const EpochMetrics& m, const std::string& message) {
  dir_.append_metrics(m);
  dir_.log(message);
}

void RunReport::samples(std::int64_t epoch, const torch::Tensor& grid) {
  dir_.write_sample(epoch, grid);
  if (tensorboard_) tensorboard_->image(epoch, "samples", grid);
}

void RunReport::curves(std::int64_t best_epoch, std::int64_t stop_epoch) {
  const std::string problem = draw_curves(dir_.path(), {best_epoch, stop_epoch});
  if (problem.empty() || curves_failed_) return;
  curves_failed_ = true;
  const std::string line = "no curves.png: " + problem + " (training goes on; `pix2pix report` draws it later)";
  std::fprintf(stderr, "warning: %s\n", line.c_str());
  dir_.log(line);
}

std::string RunReport::epoch_line(const EpochMetrics& m) const {
  std::string text = "epoch " + std::to_string(m.epoch) + ":";
  const auto append = [&](const char* format, auto... values) {
    char part[128];
    std::snprintf(part, sizeof(part), format, values...);
    text += part;
  };
  // The smoothed value beside the one early stopping watches, in that value's precision.
  const auto smoothed = [&](const std::string& column, const char* format, double value) {
    if (options_.watched == column + "_smoothed") append(format, value);
  };
  for (const auto& [name, value] : m.losses) append(" %s %.4f", name.c_str(), value);
  const std::string content_column = "val_" + m.content + "_psnr";
  if (options_.unpaired_val) {
    append(" | val %s PSNR %.3f", m.content.c_str(), m.val_content_psnr);
    smoothed(content_column, " (smoothed %.3f)", m.val_content_psnr_smoothed);
  } else {
    append(" | val PSNR %.3f", m.val_psnr);
    smoothed("val_psnr", " (smoothed %.3f)", m.val_psnr_smoothed);
    append(" SSIM %.4f", m.val_ssim);
    if (!m.content.empty()) append(" %s PSNR %.3f", m.content.c_str(), m.val_content_psnr);
  }
  if (options_.recognition) append(" recognition %.4f", m.val_recognition);
  smoothed("val_recognition", " (smoothed %.4f)", m.val_recognition_smoothed);
  if (m.fid) append(" FID %.4f", m.val_fid);
  smoothed("val_fid", " (smoothed %.4f)", m.val_fid_smoothed);
  if (m.kid) append(" KID %.5f", m.val_kid);
  smoothed("val_kid", " (smoothed %.5f)", m.val_kid_smoothed);
  append(" | %.0f img/s", m.images_per_s);
  return text;
}

std::string RunReport::time_to_quality_json(std::int64_t best_epoch, const RunClock& clock) const {
  const MetricsTable table = read_metrics_table(dir_.path());
  const auto clocks = [](const QualityReached& r) {
    return "\"epoch\": " + (r.epoch < 0 ? std::string("null") : std::to_string(r.epoch)) +
           ", \"train_s\": " + json_number(r.train_s) + ", \"wall_s\": " + json_number(r.wall_s);
  };
  std::string json = "{\"column\": " + json_string(options_.watched) +
                     ", \"lower_is_better\": " + (options_.lower_is_better ? "true" : "false") +
                     ", \"train_s\": " + json_number(clock.train_seconds()) +
                     ", \"wall_s\": " + json_number(clock.wall_seconds()) + ", \"best\": {" +
                     clocks(at_epoch(table, best_epoch)) + "}, \"targets\": [";
  const auto reached = first_reached(table, options_.watched, options_.quality_targets, options_.lower_is_better);
  for (std::size_t i = 0; i < reached.size(); ++i)
    json +=
        std::string(i ? ", " : "") + "{\"target\": " + json_number(reached[i].target) + ", " + clocks(reached[i]) + "}";
  return json + "]}";
}

void RunReport::summary(const std::string& members, std::int64_t best_epoch, const RunClock& clock,
                        const std::string& stop_reason) {
  dir_.write_summary("{\n  " + members + ",\n  \"time_to_quality\": " + time_to_quality_json(best_epoch, clock) +
                     "\n}");
  dir_.log("stopped: " + stop_reason);
}

}  // namespace pix2pix::metrics
