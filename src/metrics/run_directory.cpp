// Rows are appended whole as they are written: a job killed mid-run leaves readable metrics behind.
// Every write is checked (common/atomic_file.hpp): a full disk is an error naming the file.
#include "pix2pix/metrics/run_directory.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <vector>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/metrics/image_file.hpp"

namespace fs = std::filesystem;

namespace pix2pix::metrics {
namespace {

std::string join_fields(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + fields[i];
  return line;
}

// Keeps the rows whose first field (the epoch) is <= last_epoch. A CSV keeps its header when it is
// `columns`; under another header (an older version wrote it) each kept row is rewritten under
// `columns` by column name, a column the old header lacks left empty.
void trim_rows(const std::string& dir, const std::string& name, std::int64_t last_epoch,
               const std::vector<std::string>* columns) {
  // Read beneath the run directory and bounded (See Note [a run directory is untrusted input]).
  const auto text_read = read_beneath(dir, name, kMetricsFileLimit, /*must_exist=*/false);
  if (!text_read) return;
  const std::string path = (fs::path(dir) / name).string();
  std::istringstream in(*text_read);
  std::vector<std::string> kept;
  std::string line;
  std::vector<std::string> old_header;
  bool first = true;
  while (std::getline(in, line)) {
    if (first && columns) {
      old_header = csv_fields(line);
      kept.push_back(join_fields(*columns));
      first = false;
      continue;
    }
    first = false;
    const auto digits = line.find_first_of("0123456789");
    if (digits == std::string::npos) continue;
    char* end = nullptr;
    const long long epoch = std::strtoll(line.c_str() + digits, &end, 10);  // saturates: no throw on 30 digits
    if (epoch > last_epoch) continue;
    if (columns && old_header != *columns) {
      const auto fields = csv_fields(line);
      std::vector<std::string> row;
      for (const auto& name : *columns) {
        const auto at = std::find(old_header.begin(), old_header.end(), name) - old_header.begin();
        row.push_back(static_cast<size_t>(at) < fields.size() ? fields[static_cast<size_t>(at)] : "");
      }
      line = join_fields(row);
    }
    kept.push_back(line);
  }
  std::string text;
  for (const auto& l : kept) text += l + "\n";
  write_file_atomically(path, text);
}

}  // namespace

std::vector<std::string> EpochMetrics::columns() const {
  std::vector<std::string> names = {"epoch", "step", "lr"};
  for (const auto& [name, value] : losses) names.push_back(name);
  for (const char* name : {"val_psnr", "val_psnr_smoothed", "val_ssim", "val_l1"}) names.emplace_back(name);
  if (!content.empty())
    for (const char* suffix : {"_psnr", "_psnr_smoothed"}) names.push_back("val_" + content + suffix);
  for (const char* name : {"images_per_s", "data_s", "compute_s", "sync_s", "train_s", "wall_s"})
    names.emplace_back(name);
  for (const auto& [name, value] : scales) names.push_back(name);
  for (const char* name : {"skipped_steps", "val_recognition", "val_recognition_smoothed"}) names.emplace_back(name);
  if (fid)
    for (const char* name : {"val_fid", "val_fid_smoothed"}) names.emplace_back(name);
  if (kid)
    for (const char* name : {"val_kid", "val_kid_smoothed"}) names.emplace_back(name);
  return names;
}

std::vector<std::string> EpochMetrics::values() const {
  std::vector<std::string> out = {std::to_string(epoch), std::to_string(step), json_number(lr)};
  for (const auto& [name, value] : losses) out.push_back(json_number(value));
  for (double value : {val_psnr, val_psnr_smoothed, val_ssim, val_l1}) out.push_back(json_number(value));
  if (!content.empty())
    for (double value : {val_content_psnr, val_content_psnr_smoothed}) out.push_back(json_number(value));
  for (double value : {images_per_s, data_s, compute_s, sync_s, train_s, wall_s}) out.push_back(json_number(value));
  for (const auto& [name, value] : scales) out.push_back(json_number(value));
  out.push_back(std::to_string(skipped_steps));
  out.push_back(json_number(val_recognition));
  out.push_back(json_number(val_recognition_smoothed));
  if (fid)
    for (double value : {val_fid, val_fid_smoothed}) out.push_back(json_number(value));
  if (kid)
    for (double value : {val_kid, val_kid_smoothed}) out.push_back(json_number(value));
  return out;
}

void refuse_linked_folders(const std::string& dir) {
  std::error_code ec;
  for (const char* folder : {"checkpoints", "samples", "logs", "tensorboard"})
    if (fs::is_symlink(fs::path(dir) / folder, ec))
      throw Error("--run-dir " + dir + ": " + folder +
                  " is a symbolic link; a run directory's files are written only inside it (remove the link, "
                  "or put the whole run directory where the files should go)");
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

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
    if (static_cast<unsigned char>(c) < 0x20) {  // JSON allows no raw control characters (a tab in a config)
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

RunDirectory::RunDirectory(std::string dir, std::int64_t resume_after_epoch, std::vector<std::string> columns)
    : dir_(std::move(dir)), columns_(std::move(columns)) {
  std::error_code ec;
  refuse_linked_folders(dir_);
  for (const char* folder : {"checkpoints", "samples"}) {
    const fs::path path = fs::path(dir_) / folder;
    fs::create_directories(path, ec);
    if (ec) throw Error("--run-dir " + dir_ + ": cannot create " + path.string() + ": " + ec.message());
  }
  const std::string csv = (fs::path(dir_) / "metrics.csv").string();
  const std::string jsonl = (fs::path(dir_) / "metrics.jsonl").string();
  if (resume_after_epoch >= 0) {
    trim_rows(dir_, "metrics.csv", resume_after_epoch, &columns_);
    trim_rows(dir_, "metrics.jsonl", resume_after_epoch, nullptr);
  } else {
    fs::remove(csv, ec);
    fs::remove(jsonl, ec);
  }
  // The header now, so that a run directory is recognisable (and `report` readable) from the start.
  append_to_file(csv, "", join_fields(columns_) + "\n");
  append_to_file(jsonl, "");
  append_to_file((fs::path(dir_) / "train.log").string(), "");
}

std::string RunDirectory::sample_path(std::int64_t epoch) const {
  char name[32];
  std::snprintf(name, sizeof(name), "epoch_%04lld.png", static_cast<long long>(epoch));
  return (fs::path(dir_) / "samples" / name).string();
}

void RunDirectory::write_config(const std::string& ini_text) const {
  write_file_atomically(
      (fs::path(dir_) / "config.cfg").string(),
      "# Effective options of this run; reuse with: pix2pix train --config " + dir_ + "/config.cfg\n" + ini_text);
}

void RunDirectory::append_metrics(const EpochMetrics& m) {
  if (m.columns() != columns_) throw Error("metrics: a row of other columns than " + join_fields(columns_));
  const auto values = m.values();
  std::string csv, json = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    csv += (i ? "," : "") + (values[i] == "null" ? "" : values[i]);
    json += (i ? ", \"" : "\"") + columns_[i] + "\": " + values[i];
  }
  append_to_file((fs::path(dir_) / "metrics.csv").string(), csv + "\n");
  append_to_file((fs::path(dir_) / "metrics.jsonl").string(), json + "}\n");
}

void RunDirectory::log(const std::string& line) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  append_to_file((fs::path(dir_) / "train.log").string(), std::string(stamp) + "  " + line + "\n");
}

void RunDirectory::write_summary(const std::string& json) const {
  write_file_atomically((fs::path(dir_) / "summary.json").string(), json + "\n");
}

void RunDirectory::write_sample(std::int64_t epoch, const torch::Tensor& image) const {
  write_image_atomically(sample_path(epoch), image);
}

}  // namespace pix2pix::metrics
