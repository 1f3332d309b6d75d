// What the run loop's tests share: a tiny dataset and tiny options, metrics.csv rows, parameter
// copies.
#pragma once

#include <torch/torch.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pix2pix/train/trainer.hpp"
#include "support/cpu_device.hpp"
#include "support/fixtures.hpp"

namespace pix2pix::train_tests {

using pix2pix::fixtures::TempDir;

// 72 train / 8 val pairs of Fashion-MNIST edges -> image at 64x64 (a U-Net of 6 levels, so one
// dropout block: what makes the RNG state matter for resuming), made once per test binary.
inline const std::string& tiny_dataset() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string out = dir / "tiny.h5";
    pix2pix::fixtures::make_fashion_edges_dataset(out, 80, 64);
    return out;
  }();
  return path;
}

inline pix2pix::train::TrainOptions tiny_options(const std::string& run_dir) {
  pix2pix::train::TrainOptions o;
  o.data = tiny_dataset();
  o.loader.batch_size = 8;
  o.loader.seed = 5;
  o.ngf = 8;
  o.ndf = 8;
  o.lr.lr = 2e-3;
  o.lr.epochs = 2;
  o.lr.epochs_decay = 2;
  o.max_epochs = 4;
  o.early_stopping = {1, 100, 0.0, true};
  o.run_dir = run_dir;
  o.effective_config = "data = " + o.data + "\n";
  return o;
}

using fixtures::kCpu;

struct Row {
  std::vector<std::string> fields;
};

inline std::vector<Row> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    Row r;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, ',');) r.fields.push_back(f);
    rows.push_back(r);
  }
  return rows;
}

inline double field(const Row& r, size_t column) {
  return std::stod(r.fields.at(column));
}
inline constexpr size_t kLossL1 = 5, kValPsnr = 6, kValL1 = 9;

inline std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone());
  return out;
}

inline bool all_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

}  // namespace pix2pix::train_tests
