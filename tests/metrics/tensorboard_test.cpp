// TensorBoard event files: read back with a reader of the test's own (support/tensorboard_reader.hpp:
// a bitwise CRC-32C, every record's CRCs checked, the protobuf fields decoded), from the writer
// alone and from `train --tensorboard`, whose scalars are metrics.csv's values.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <sstream>

#include "pix2pix/metrics/tensorboard_events.hpp"
#include "support/fixtures.hpp"
#include "support/tensorboard_reader.hpp"

using namespace pix2pix;
namespace tb = pix2pix::tensorboard_reader;
namespace fs = std::filesystem;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;

namespace {

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST(TensorBoard, Crc32cIsCastagnolisAsTheReaderComputesIt) {
  EXPECT_EQ(metrics::crc32c("123456789", 9), 0xe3069283u);  // the standard check value
  EXPECT_EQ(tb::crc32c_bitwise("123456789"), 0xe3069283u);
  const std::string text(1000, 'x');
  EXPECT_EQ(metrics::masked_crc32c(text.data(), text.size()), tb::masked(text));
}

TEST(TensorBoard, ScalarsImagesAndAResumeReadBackWithEveryCrcChecked) {
  TempDir dir;
  std::string path;
  {
    metrics::TensorBoardEvents events(dir / "tb");
    path = events.path();
    events.scalars(3, {"loss_D", "val_psnr", "lr", "val_fid"}, {0.5, 17.25, 2e-4, NAN});
    auto image = torch::arange(6 * 5 * 3, torch::kInt64).remainder(256).to(torch::kUInt8).reshape({6, 5, 3});
    events.image(3, "samples", image);
  }
  const auto events = tb::read_events(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_GT(events[0].wall_time, 1.7e9);
  EXPECT_EQ(events[0].session_status, -1);
  EXPECT_EQ(events[1].step, 3);
  const std::vector<std::pair<std::string, float>> expected = {
      {"loss/D", 0.5f}, {"val/psnr", 17.25f}, {"train/lr", 2e-4f}};  // NaN left out
  EXPECT_EQ(events[1].scalars, expected);
  ASSERT_EQ(events[2].images.size(), 1u);
  const tb::Image& image = events[2].images[0];
  EXPECT_EQ(image.tag, "samples");
  EXPECT_EQ(image.height, 6u);
  EXPECT_EQ(image.width, 5u);
  EXPECT_EQ(image.colorspace, 3u);
  const cv::Mat decoded = cv::imdecode(std::vector<std::uint8_t>(image.png.begin(), image.png.end()), cv::IMREAD_COLOR);
  ASSERT_EQ(decoded.rows, 6);
  EXPECT_EQ(decoded.at<cv::Vec3b>(0, 1), cv::Vec3b(5, 4, 3));  // RGB (3, 4, 5) as OpenCV's BGR

  // A resumed run's file starts with a SessionLog START at the epoch it resumes with.
  metrics::TensorBoardEvents resumed(dir / "tb", 7);
  const auto again = tb::read_events(resumed.path());
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].step, 7);
  EXPECT_EQ(again[1].session_status, 1);

  // The reader is able to fail: one byte with every bit flipped (a fixed value written there was
  // no change where the byte already held it: a wall time's byte does, now and then).
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(40);
  const int byte = file.get();
  ASSERT_NE(byte, std::char_traits<char>::eof());
  file.seekp(40);
  file.put(static_cast<char>(~byte));
  file.close();
  EXPECT_THROW(tb::read_events(path), std::runtime_error);
}

TEST(TensorBoard, TrainWritesMetricsCsvsValuesAndTheSamplesOfEachEpoch) {
  TempDir dir;
  auto r = run_cli("prepare --images idx:" + fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                   " --derive edges --size 32 --limit 80 --progress none --out " + (dir / "d.h5"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string train = "train --config " + std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg --data " +
                            (dir / "d.h5") + " --run-dir " + (dir / "run") + " --progress none --tensorboard ";
  r = run_cli(train + "--max-epochs 2");
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(train + "--max-epochs 3 --resume auto");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto files = event_files(dir / "run/tensorboard");
  ASSERT_EQ(files.size(), 2u);

  // metrics.csv by epoch and column.
  std::ifstream csv(dir / "run/metrics.csv");
  std::string line;
  std::getline(csv, line);
  std::vector<std::string> names;
  for (std::stringstream header(line); std::getline(header, line, ',');) names.push_back(line);
  std::map<std::int64_t, std::map<std::string, std::string>> rows;
  while (std::getline(csv, line)) {
    std::stringstream fields(line);
    std::map<std::string, std::string> row;
    for (const auto& name : names) std::getline(fields, row[name], ',');
    rows[std::stoll(row["epoch"])] = row;
  }
  ASSERT_EQ(rows.size(), 3u);

  std::map<std::int64_t, int> scalar_events, image_events;
  int resumed_files = 0;
  for (const auto& file : files) {
    const auto events = tb::read_events(file);
    ASSERT_GE(events.size(), 2u);
    if (events[1].session_status == 1) {
      ++resumed_files;
      EXPECT_EQ(events[1].step, 2);  // resumed with epoch 2
    }
    for (const auto& e : events) {
      if (!e.images.empty()) {
        ++image_events[e.step];
        EXPECT_EQ(e.images[0].tag, "samples");
        EXPECT_EQ(e.images[0].width, 3u * 128);  // the run's sample sheet
      }
      if (e.scalars.empty()) continue;
      ++scalar_events[e.step];
      const auto& row = rows.at(e.step);
      int checked = 0;
      for (const auto& [tag, value] : e.scalars) {
        const std::string column = tag.rfind("loss/", 0) == 0  ? "loss_" + tag.substr(5)
                                   : tag.rfind("val/", 0) == 0 ? "val_" + tag.substr(4)
                                                               : tag.substr(6);
        ASSERT_TRUE(row.count(column)) << tag;
        EXPECT_EQ(value, static_cast<float>(std::stod(row.at(column)))) << tag << " at epoch " << e.step;
        ++checked;
      }
      EXPECT_TRUE(std::any_of(e.scalars.begin(), e.scalars.end(), [](const auto& s) { return s.first == "val/psnr"; }));
      EXPECT_GE(checked, 10);
    }
  }
  EXPECT_EQ(resumed_files, 1);
  EXPECT_EQ(scalar_events, (std::map<std::int64_t, int>{{0, 1}, {1, 1}, {2, 1}}));
  EXPECT_EQ(image_events, (std::map<std::int64_t, int>{{0, 1}, {1, 1}, {2, 1}}));
}
