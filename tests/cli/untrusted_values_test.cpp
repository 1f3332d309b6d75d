// Values that must not pass (issue 45): NaN or infinite data, losses and scores end a command with
// status 1 naming where (See Note [non-finite values stop a run]); options beyond what a double,
// the input or the memory can hold are refused or named, never a raw library trace.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "cli/cli_helpers.hpp"
#include "pix2pix/data/npy_file.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::run_shell;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kSmoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";

// Float A (one band of smooth values on [-3, 3]) paired with 8-bit grey B, 32x32: 40 train, 8 val.
std::string float_dataset(const TempDir& dir) {
  for (int i = 0; i < 48; ++i) {
    const std::string split = i < 40 ? "train" : "val", name = "/f" + std::to_string(100 + i);
    fs::create_directories(dir / ("A/" + split));
    fs::create_directories(dir / ("B/" + split));
    const auto field = torch::linspace(-3, 3, 32 * 32).reshape({32, 32}).roll({i}, {1}).contiguous();
    pix2pix::data::write_npy(dir / ("A/" + split + name + ".npy"), field);
    cv::Mat grey(32, 32, CV_8UC1);
    for (int p = 0; p < 32 * 32; ++p) grey.data[p] = static_cast<unsigned char>((p * 7 + i * 13) % 256);
    cv::imwrite(dir / ("B/" + split + name + ".png"), grey);
  }
  const auto r = run_cli("prepare --paired " + (dir / "A") + " " + (dir / "B") +
                         " --channels-b 1 --range-a=-4,4 --progress none --out " + (dir / "d.h5"));
  return r.status == 0 ? dir / "d.h5" : "FAILED " + r.output;
}

// A copy of `data` with one value set through HDF5's C API (a GPU node has no h5py):
// DATASET[pair, row, column, 0] = value. "" on success, else what failed.
std::string poked(const std::string& data, const std::string& copy, const std::string& dataset, int pair, int row,
                  int column, float value) {
  fs::copy_file(data, copy);
  const hid_t file = H5Fopen(copy.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) return "cannot open " + copy;
  const hid_t set = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  const hid_t space = set < 0 ? -1 : H5Dget_space(set);
  const hsize_t start[4] = {static_cast<hsize_t>(pair), static_cast<hsize_t>(row), static_cast<hsize_t>(column), 0};
  const hsize_t count[4] = {1, 1, 1, 1};
  const hid_t memory = H5Screate_simple(4, count, nullptr);
  const bool written = space >= 0 && H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr) >= 0 &&
                       H5Dwrite(set, H5T_NATIVE_FLOAT, memory, space, H5P_DEFAULT, &value) >= 0;
  H5Sclose(memory);
  if (space >= 0) H5Sclose(space);
  if (set >= 0) H5Dclose(set);
  H5Fclose(file);
  return written ? "" : "cannot write " + dataset + " of " + copy;
}

}  // namespace

// Item 4: one NaN pixel in train/A, one inf in val/A.
TEST(NonFinite, FloatDataStopsTrainingAndEvaluateNamingThePairAndThePixel) {
  TempDir dir;
  const std::string data = float_dataset(dir);
  ASSERT_EQ(data, dir / "d.h5");
  const std::string nan = dir / "nan.h5", inf = dir / "inf.h5";
  ASSERT_EQ(poked(data, nan, "train/A", 3, 5, 7, std::numeric_limits<float>::quiet_NaN()), "");
  ASSERT_EQ(poked(data, inf, "val/A", 2, 1, 1, std::numeric_limits<float>::infinity()), "");
  const std::string train = "train --config " + kSmoke + " --max-epochs 1 --progress none --data ";

  auto r = run_cli(train + nan + " --run-dir " + (dir / "nan-run"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "nan.h5: /train/A: pair 3 holds NaN at row 5, column 7, band 0")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "nan-run/summary.json"));

  r = run_cli(train + inf + " --run-dir " + (dir / "inf-run"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "inf.h5: /val/A: pair 2 holds +inf at row 1, column 1, band 0")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "inf-run/checkpoints/best_generator.pt"));

  // evaluate of a model trained on the clean file, on the damaged split.
  r = run_cli(train + data + " --run-dir " + (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli("evaluate --checkpoint " + (dir / "run") + " --data " + inf + " --split val --progress none --out " +
              (dir / "eval"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "/val/A: pair 2 holds +inf at row 1, column 1, band 0")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "eval/evaluation.json"));

  // inspect --check lists it (and reads on to the end).
  r = run_cli("inspect " + inf + " --check");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "/val/A: pair 2 holds +inf at row 1, column 1, band 0 (1 NaN or infinite values"))
      << r.output;
}

// Items 8 and 10: values beyond what a double, the input or memory holds.
TEST(Bounds, OptionsBeyondTheirRangeAreRefusedAndLargeTilesAreNamed) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  auto r = run_cli("train --config " + kSmoke + " --data " + (dir / "d.h5") + " --run-dir " + (dir / "r2") +
                   " --ema-decay 1e-400");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--ema-decay 1e-400 is beyond the range of a double (it would be read as 0)"))
      << r.output;
  r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
              " --derive blur --limit 8 --out " + (dir / "x.h5") + " --range-a=-1.7e308,1.7e308");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "is wider than a double can hold")) << r.output;
  r = run_cli("bench --what train --config " + kSmoke + " --data " + (dir / "d.h5") + " --steps 1 --run-dir " +
              (dir / "b"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--run-dir is train's: bench writes no run directory")) << r.output;

  // --tile far beyond any image: refused by its bound; a tile larger than the image: one tile of the
  // image's size, under an address-space limit the old 4 GiB padding would not fit in.
  fs::create_directories(dir / "in");
  cv::imwrite(dir / "in/small.png", cv::Mat(32, 32, CV_8UC1, cv::Scalar(90)));
  // On the CPU: the bounds are of host memory (and CUDA does not start under an address-space limit).
  const std::string translate =
      "translate --checkpoint " + (dir / "run") + " --device cpu --progress none --input " + (dir / "in");
  r = run_cli(translate + " --output " + (dir / "t0") + " --tile 1099511627776");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--tile")) << r.output;
  r = run_shell(pix2pix::fixtures::address_space_limit(1200LL << 20) + "timeout 120 " +
                pix2pix::fixtures::pix2pix_bin() + " " + translate + " --output " + (dir / "t1") + " --tile 32768");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "t1/small.png")) << r.output;

  // An image whose tiling needs more than the memory left: named and skipped, the others written.
  cv::imwrite(dir / "in/big.png", cv::Mat(12000, 12000, CV_8UC1, cv::Scalar(90)));
  r = run_shell(pix2pix::fixtures::address_space_limit(1200LL << 20) + "timeout 300 " +
                pix2pix::fixtures::pix2pix_bin() + " " + translate + " --output " + (dir / "t2") +
                " --tile 64 --max-bad 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "skipping " + (dir / "in/big.png") + ": translating a 12000x12000 image in tiles"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "enforce fail")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "t2/small.png"));
  EXPECT_FALSE(fs::exists(dir / "t2/big.png"));
}

// Item 10: a uint8 .npy is an image of an 8-bit generator, not "cannot be decoded".
TEST(Bounds, AnEightBitNpyIsTranslatedByAnEightBitGenerator) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  fs::create_directories(dir / "in");
  const auto pixels = torch::randint(0, 256, {32, 32}, torch::kInt32).to(torch::kUInt8);
  pix2pix::data::write_npy(dir / "in/frame.npy", pixels);
  const auto r = run_cli("translate --checkpoint " + (dir / "run") + " --progress none --input " + (dir / "in") +
                         " --output " + (dir / "out"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 1 of 1 images (0 skipped")) << r.output;
}
