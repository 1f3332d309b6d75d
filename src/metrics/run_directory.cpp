// Rows are flushed as they are written: a job killed mid-run leaves readable metrics behind.
#include "pix2pix/metrics/run_directory.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/image_file.hpp"

namespace fs = std::filesystem;

namespace pix2pix::metrics {
namespace {

const char* const kColumns[] = {"epoch",
                                "step",
                                "lr",
                                "loss_D",
                                "loss_G_gan",
                                "loss_G_l1",
                                "val_psnr",
                                "val_psnr_smoothed",
                                "val_ssim",
                                "val_l1",
                                "images_per_s",
                                "data_s",
                                "compute_s",
                                "sync_s",
                                "scale_G",
                                "scale_D",
                                "skipped_steps",
                                "loss_G_aux",
                                "val_recognition",
                                "val_recognition_smoothed"};

std::vector<std::string> values_of(const EpochMetrics& m) {
  return {std::to_string(m.epoch),
          std::to_string(m.step),
          json_number(m.lr),
          json_number(m.loss_d),
          json_number(m.loss_g_gan),
          json_number(m.loss_g_l1),
          json_number(m.val_psnr),
          json_number(m.val_psnr_smoothed),
          json_number(m.val_ssim),
          json_number(m.val_l1),
          json_number(m.images_per_s),
          json_number(m.data_s),
          json_number(m.compute_s),
          json_number(m.sync_s),
          json_number(m.scale_g),
          json_number(m.scale_d),
          std::to_string(m.skipped_steps),
          json_number(m.loss_g_aux),
          json_number(m.val_recognition),
          json_number(m.val_recognition_smoothed)};
}

// Keeps the header and the rows whose first field (the epoch) is <= last_epoch.
void trim_rows(const std::string& path, std::int64_t last_epoch, bool has_header) {
  std::ifstream in(path);
  if (!in) return;
  std::vector<std::string> kept;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first && has_header) {
      kept.push_back(line);
      first = false;
      continue;
    }
    first = false;
    const auto digits = line.find_first_of("0123456789");
    if (digits == std::string::npos) continue;
    if (std::stoll(line.substr(digits)) <= last_epoch) kept.push_back(line);
  }
  in.close();
  std::ofstream out(path, std::ios::trunc);
  for (const auto& l : kept) out << l << "\n";
}

std::ofstream open_append(const std::string& path) {
  std::ofstream f(path, std::ios::app);
  if (!f) throw Error("cannot write " + path + " (is the run directory writable?)");
  return f;
}

}  // namespace

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  std::snprintf(text, sizeof(text), "%.10g", value);
  return text;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

RunDirectory::RunDirectory(std::string dir, std::int64_t resume_after_epoch) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(fs::path(dir_) / "checkpoints", ec);
  if (!ec) fs::create_directories(fs::path(dir_) / "samples", ec);
  if (ec) throw Error("--run-dir " + dir_ + ": cannot create: " + ec.message());
  const std::string csv = (fs::path(dir_) / "metrics.csv").string();
  const std::string jsonl = (fs::path(dir_) / "metrics.jsonl").string();
  if (resume_after_epoch >= 0) {
    trim_rows(csv, resume_after_epoch, true);
    trim_rows(jsonl, resume_after_epoch, false);
  } else {
    fs::remove(csv, ec);
    fs::remove(jsonl, ec);
  }
  const bool new_csv = !fs::exists(csv) || fs::file_size(csv) == 0;
  csv_ = open_append(csv);
  jsonl_ = open_append(jsonl);
  log_ = open_append((fs::path(dir_) / "train.log").string());
  if (new_csv) {
    for (size_t i = 0; i < std::size(kColumns); ++i) csv_ << (i ? "," : "") << kColumns[i];
    csv_ << "\n" << std::flush;
  }
}

std::string RunDirectory::checkpoint_path(const std::string& name) const {
  return (fs::path(dir_) / "checkpoints" / name).string();
}

std::string RunDirectory::sample_path(std::int64_t epoch) const {
  char name[32];
  std::snprintf(name, sizeof(name), "epoch_%04lld.png", static_cast<long long>(epoch));
  return (fs::path(dir_) / "samples" / name).string();
}

void RunDirectory::write_config(const std::string& ini_text) const {
  std::ofstream f((fs::path(dir_) / "config.cfg").string(), std::ios::trunc);
  if (!f) throw Error("cannot write " + dir_ + "/config.cfg");
  f << "# Effective options of this run; reuse with: pix2pix train --config " << dir_ << "/config.cfg\n" << ini_text;
}

void RunDirectory::append_metrics(const EpochMetrics& m) {
  const auto values = values_of(m);
  if (values.size() != std::size(kColumns))
    throw Error("metrics: a value for each column, not " + std::to_string(values.size()));
  std::string json = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    csv_ << (i ? "," : "") << (values[i] == "null" ? "" : values[i]);
    json += (i ? ", \"" : "\"") + std::string(kColumns[i]) + "\": " + values[i];
  }
  csv_ << "\n" << std::flush;
  jsonl_ << json << "}\n" << std::flush;
}

void RunDirectory::log(const std::string& line) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  log_ << stamp << "  " << line << "\n" << std::flush;
}

void RunDirectory::write_summary(const std::string& json) const {
  std::ofstream f((fs::path(dir_) / "summary.json").string(), std::ios::trunc);
  if (!f) throw Error("cannot write " + dir_ + "/summary.json");
  f << json << "\n";
}

void RunDirectory::write_sample(std::int64_t epoch, const torch::Tensor& image) const {
  write_image_atomically(sample_path(epoch), image);
}

}  // namespace pix2pix::metrics
