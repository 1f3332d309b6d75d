// The augmentation gather: crops are the right window, flips mirror columns, A and B move
// together, and the jitter keeps values in [-1, 1].
#include <gtest/gtest.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/augment.hpp"

using namespace pix2pix::data;
using torch::indexing::Slice;

TEST(Augment, CropAndFlipTakeTheDrawnWindow) {
  const auto images = torch::rand({5, 4, 10, 10}) * 2 - 1;
  AugmentOptions o;
  o.preprocess = Preprocess::crop;
  o.crop_size = 6;
  o.flip = true;
  const AugmentDraw draw = draw_augmentation(5, 10, o, 123);
  const auto out = apply_augmentation(images, draw, o);
  ASSERT_EQ(out.sizes(), (std::vector<std::int64_t>{5, 4, 6, 6}));
  int flipped = 0;
  for (int i = 0; i < 5; ++i) {
    auto window =
        images[i].index({Slice(), Slice(draw.top[i], draw.top[i] + 6), Slice(draw.left[i], draw.left[i] + 6)});
    if (draw.flip[i]) {
      window = window.flip({2});
      ++flipped;
    }
    EXPECT_TRUE(torch::equal(out[i], window)) << "sample " << i;
  }
  // Across many draws both outcomes and all offsets occur.
  const AugmentDraw many = draw_augmentation(400, 10, o, 9);
  const auto flips = std::count(many.flip.begin(), many.flip.end(), true);
  EXPECT_GT(flips, 150);
  EXPECT_LT(flips, 250);
  EXPECT_EQ(*std::max_element(many.top.begin(), many.top.end()), 4);
  EXPECT_EQ(*std::min_element(many.left.begin(), many.left.end()), 0);
}

TEST(Augment, JitterResizesThenCropsAndStaysInRange) {
  const auto images = (torch::rand({3, 2, 16, 16}) > 0.5).to(torch::kFloat32) * 2 - 1;  // hard edges overshoot bicubic
  AugmentOptions o;
  o.preprocess = Preprocess::resize_and_crop;
  o.load_size = 18;
  o.crop_size = 16;
  const auto out = apply_augmentation(images, draw_augmentation(3, 16, o, 1), o);
  ASSERT_EQ(out.sizes(), (std::vector<std::int64_t>{3, 2, 16, 16}));
  EXPECT_LE(out.max().item<float>(), 1.0f);
  EXPECT_GE(out.min().item<float>(), -1.0f);
}

TEST(Augment, SameDrawForBothHalvesOfAPair) {
  // A and B travel as channels of one tensor, so identical halves must stay identical.
  const auto half = torch::rand({4, 3, 12, 12});
  const auto pair = torch::cat({half, half}, 1);
  AugmentOptions o;
  o.preprocess = Preprocess::resize_and_crop;
  o.load_size = 14;
  o.crop_size = 12;
  const auto out = apply_augmentation(pair, draw_augmentation(4, 12, o, 5), o);
  EXPECT_TRUE(torch::equal(out.narrow(1, 0, 3), out.narrow(1, 3, 3)));
}

TEST(Augment, NoneReturnsTheInputAndParsingIsStrict) {
  const auto images = torch::rand({2, 1, 8, 8});
  AugmentOptions o;
  o.preprocess = Preprocess::none;
  EXPECT_TRUE(torch::equal(apply_augmentation(images, draw_augmentation(2, 8, o, 0), o), images));
  EXPECT_EQ(parse_preprocess("crop"), Preprocess::crop);
  EXPECT_THROW(parse_preprocess("scale_width"), pix2pix::Error);
  o.preprocess = Preprocess::crop;
  o.crop_size = 9;
  EXPECT_THROW(apply_augmentation(images, draw_augmentation(2, 8, o, 0), o), pix2pix::Error);
}
