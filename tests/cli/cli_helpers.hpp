// What the CLI tests of commands that use a trained model share: a trained smoke run to use.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/fixtures.hpp"

namespace pix2pix::cli_tests {

using fixtures::contains;

// The number after `"key": ` in a JSON file we write (one key per line), or after its
// `{"mean": ` when the key opens an object (evaluation.json's statistics).
inline double json_value(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) throw std::runtime_error("no " + key + " in " + json);
  std::size_t start = at + key.size() + 4;
  if (json[start] == '{') start = json.find(": ", start) + 2;
  return std::stod(json.substr(start));
}

// The rows of a run's metrics.csv, each field by its column's name ("" where a row leaves it empty).
inline std::vector<std::map<std::string, std::string>> read_metrics(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string f; std::getline(header, f, ',');) names.push_back(f);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::map<std::string, std::string> row;
    std::string f;
    for (const auto& name : names) {
      std::getline(fields, f, ',');
      row[name] = f;
    }
    rows.push_back(row);
  }
  return rows;
}

// One numeric column of metrics.csv, epoch by epoch.
inline std::vector<double> metrics_column(const std::string& path, const std::string& column) {
  std::vector<double> values;
  for (const auto& row : read_metrics(path)) values.push_back(std::stod(row.at(column)));
  return values;
}

// What an uninterrupted run and its stopped-and-resumed twin must agree on to the last digit:
// every loss and validation column, and the skipped updates, of every epoch of `straight`.
inline void expect_learned_the_same(const std::string& straight_csv, const std::string& resumed_csv) {
  const auto straight = read_metrics(straight_csv);
  const auto resumed = read_metrics(resumed_csv);
  ASSERT_EQ(straight.size(), resumed.size()) << straight_csv << " against " << resumed_csv;
  for (std::size_t row = 0; row < straight.size(); ++row) {
    for (const auto& [column, value] : straight[row]) {
      if (column.rfind("loss_", 0) == 0 || column.rfind("val_", 0) == 0 || column == "skipped_steps") {
        EXPECT_EQ(resumed[row].at(column), value) << "epoch " << row << ", " << column;
      }
    }
  }
}

// Through the binary: the first 80 Fashion-MNIST t10k images as edges -> image at 32x32 in
// `dir`/d.h5 (72 train, 8 val, no test split), and configs/smoke.cfg trained on it into
// `dir`/run (2 epochs), with `train_options` added. Returns "" or the output of the command that
// failed.
inline std::string prepare_and_train_smoke(const fixtures::TempDir& dir, const std::string& train_options = "") {
  auto r = fixtures::run_cli("prepare --images idx:" + fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                             " --derive edges --size 32 --limit 80 --progress none --out " + (dir / "d.h5"));
  if (r.status != 0) return r.output;
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  r = fixtures::run_cli("train --config " + smoke + " --data " + (dir / "d.h5") + " --run-dir " + (dir / "run") +
                        " --progress none " + train_options);
  return r.status == 0 ? "" : r.output;
}

// Through the binary: the first 60 Fashion-MNIST t10k images as edges -> image at 32x32 in
// `dir`/d.h5 (54 train, 6 val). Returns "" or prepare's output when it failed.
inline std::string prepare_small_pairs(const fixtures::TempDir& dir) {
  const auto r = fixtures::run_cli("prepare --images idx:" + fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                                   " --derive edges --size 32 --limit 60 --progress none --out " + (dir / "d.h5"));
  return r.status == 0 ? "" : r.output;
}

// `train` of configs/smoke.cfg on `dir`/d.h5 into `dir`/`run`, with `extra` options: a command line
// for fixtures::run_cli.
inline std::string smoke_train_command(const fixtures::TempDir& dir, const std::string& run, const std::string& extra) {
  return "train --config " + std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg --data " + (dir / "d.h5") +
         " --run-dir " + (dir / run) + " --progress none " + extra;
}

// What `export --format onnx` of a good checkpoint exits with: 0, or 1 in a build without ONNX
// (PIX2PIX_WITH_ONNX=OFF), which says so (ExportCli.BadRequestsAreNamedWithTheirStatus).
inline constexpr int kOnnxExportStatus = PIX2PIX_HAVE_ONNX ? 0 : 1;

}  // namespace pix2pix::cli_tests
