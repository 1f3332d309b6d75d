// translate --tile (See Note [tiles and their seams]): the tile grid covers every image with a
// margin, the blending weights are positive and sum to the mean, so a generator that acts pixel by
// pixel gives through tiles exactly what it gives on the whole image, at any size, overlap and batch.
#include <gtest/gtest.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/infer/tiled_translation.hpp"

using namespace pix2pix;

namespace {

// A generator that maps each pixel alone (what no seam can change): tanh(0.8 a + 0.1) per channel.
// It says it is a ResNet, whose sides are multiples of 4.
nets::GeneratorOptions resnet_like() {
  nets::GeneratorOptions o{3, 3};
  o.arch = nets::GeneratorArch::resnet;
  return o;
}
class PointwiseImpl : public nets::GeneratorImpl {
 public:
  PointwiseImpl() : GeneratorImpl(resnet_like()) {}
  torch::Tensor forward(const torch::Tensor& a) override { return torch::tanh(0.8 * a + 0.1); }
};

cv::Mat random_image(int rows, int cols, int seed) {
  torch::manual_seed(seed);
  const torch::Tensor t = torch::randint(0, 256, {rows, cols, 3}, torch::kUInt8);
  return cv::Mat(rows, cols, CV_8UC3, t.data_ptr<std::uint8_t>()).clone();
}

// What the generator makes of the whole image in one pass, as uint8.
cv::Mat whole(nets::Generator& g, const cv::Mat& image) {
  const torch::Tensor in = torch::from_blob(image.data, {1, image.rows, image.cols, 3}, torch::kUInt8)
                               .permute({0, 3, 1, 2})
                               .to(torch::kFloat32)
                               .div(127.5)
                               .sub(1.0);
  const torch::Tensor out =
      ((g->forward(in) + 1.0) * 127.5).round().clamp(0, 255)[0].permute({1, 2, 0}).to(torch::kUInt8).contiguous();
  return cv::Mat(image.rows, image.cols, CV_8UC3, out.data_ptr<std::uint8_t>()).clone();
}

}  // namespace

TEST(TiledTranslation, TheGridCoversEveryImageWithAMarginOnBothSidesAndStartsTilesOnTheMultiple) {
  for (const std::int64_t multiple : {4, 32})
    for (const std::int64_t tile : {32, 64, 256})
      for (const std::int64_t overlap : std::vector<std::int64_t>{0, 1, 8, 16, tile - multiple}) {
        if (tile < multiple || overlap > tile - multiple) continue;
        const infer::TileOptions tiles = infer::fit_tiles({tile, overlap, 4}, multiple);
        const std::int64_t stride = tile - tiles.overlap;
        EXPECT_GE(tiles.overlap, overlap) << "the overlap only grows";
        EXPECT_EQ(stride % multiple, 0);
        EXPECT_GT(stride, tile - overlap - multiple) << "grown by less than the multiple";
        for (const std::int64_t side : {1, 2, 31, 32, 33, 64, 65, 100, 500, 700}) {
          const infer::TileAxis axis = infer::plan_tile_axis(side, tiles, multiple);
          const std::int64_t covered = (axis.count - 1) * stride + tile;
          SCOPED_TRACE("side " + std::to_string(side) + " tile " + std::to_string(tile) + " overlap " +
                       std::to_string(tiles.overlap) + " multiple " + std::to_string(multiple));
          EXPECT_EQ(axis.before % multiple, 0) << "the first tile starts off the multiple";
          EXPECT_GE(2 * axis.before, tiles.overlap) << "an image pixel in front sits at a tile's outer edge";
          EXPECT_EQ(covered, axis.before + side + axis.after);
          EXPECT_GE(2 * axis.after, tiles.overlap) << "the last image pixel sits at a tile's outer edge";
          if (axis.count > 1) {
            EXPECT_LT(covered - stride, side + 2 * axis.before) << "one tile more than needed";
          }
        }
      }
  const torch::Tensor window = infer::tile_window({64, 16, 1});
  EXPECT_GT(window.min().item<float>(), 0.0f);
  EXPECT_EQ(window[32][32].item<float>(), 1.0f);
  EXPECT_TRUE(torch::equal(window, window.flip({0}))) << "the ramp is symmetric";
}

TEST(TiledTranslation, APointwiseGeneratorGivesTheWholeImageExactly) {
  nets::Generator g(std::shared_ptr<nets::GeneratorImpl>(std::make_shared<PointwiseImpl>()));
  for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{70, 50}, {32, 32}, {1, 40}, {129, 3}}) {
    const cv::Mat image = random_image(rows, cols, rows + cols);
    const cv::Mat expected = whole(g, image);
    for (const std::int64_t overlap : {0, 8, 20})
      for (const std::int64_t batch : {1, 3}) {
        const cv::Mat tiled =
            infer::translate_tiled(g, image, {32, overlap, batch}, torch::kCPU, optim::Precision::fp32);
        ASSERT_EQ(tiled.rows, rows);
        ASSERT_EQ(tiled.cols, cols);
        ASSERT_EQ(tiled.channels(), 3);
        cv::Mat difference;
        cv::absdiff(tiled, expected, difference);
        double largest = 0;
        cv::minMaxLoc(difference.reshape(1), nullptr, &largest);
        // The weighted mean of equal values is that value up to float rounding: at most one grey
        // level where it straddles a rounding boundary.
        EXPECT_LE(largest, 1.0) << rows << "x" << cols << " overlap " << overlap << " batch " << batch;
        EXPECT_LT(cv::mean(difference.reshape(1))[0], 0.01);
      }
  }
}

TEST(TiledTranslation, TilesTheGeneratorCannotTakeAreRefusedByName) {
  const auto refused = [](infer::TileOptions tiles, const std::string& text) {
    try {
      infer::fit_tiles(tiles, 32);
      ADD_FAILURE() << "accepted --tile " << tiles.tile << " --overlap " << tiles.overlap;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  refused({16, 0, 1}, "--tile 16: this generator takes sides that are multiples of 32");
  refused({48, 0, 1}, "--tile 48");
  refused({64, 64, 1}, "--overlap 64 must be at least 0 and at most --tile 64 minus 32");
  refused({64, 33, 1}, "--overlap 33");
  refused({64, -1, 1}, "--overlap -1");
  refused({64, 0, 0}, "--batch-size");
  EXPECT_EQ(infer::fit_tiles({64, 16, 1}, 32).overlap, 32) << "tiles 48 apart would start off the multiple";
  EXPECT_EQ(infer::fit_tiles({256, 64, 1}, 32).overlap, 64);
}
