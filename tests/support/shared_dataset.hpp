// A test of the multi-rank binary that works on one Fashion-MNIST dataset: rank 0 makes it in a
// temporary folder, every rank gets its path, and the folder goes once every rank is done; the
// tests compare ranks against one process with relative_error.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "support/fixtures.hpp"
#include "support/mpi_env.hpp"

namespace pix2pix::fixtures {

class SharedDatasetTest : public ::testing::Test {
 protected:
  SharedDatasetTest(std::int64_t images, bool labels) : images_(images), labels_(labels) {}
  void SetUp() override {
    if (g_mpi->rank() == 0) {
      dir_ = std::make_unique<TempDir>();
      path_ = *dir_ / "d.h5";
      make_fashion_edges_dataset(path_, images_, 32, labels_);
      root_ = dir_->path().string();
    }
    path_ = broadcast_string(path_);
    root_ = broadcast_string(root_);
  }
  void TearDown() override {
    g_mpi->barrier();
    dir_.reset();
  }

  std::string path_;  // the dataset, 32x32
  std::string root_;  // the folder it is in, for the test's own files

 private:
  std::int64_t images_;
  bool labels_;
  std::unique_ptr<TempDir> dir_;
};

// ‖a − b‖ / ‖b‖: how far a rank's tensor is from the one process's `b`.
inline double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / std::max(b.norm().item<double>(), 1e-30);
}

}  // namespace pix2pix::fixtures
