// Sample sheets: tiles enlarged by a whole factor with every source pixel kept (nearest
// neighbour), and a label band with each column's label drawn in it.
#include <gtest/gtest.h>

#include "pix2pix/metrics/sample_sheet.hpp"

using namespace pix2pix::metrics;

TEST(SampleSheet, SmallTilesAreEnlargedByAWholeFactorLargeOnesKept) {
  EXPECT_EQ(sample_sheet_layout(32, 32).scale, 4);
  EXPECT_EQ(sample_sheet_layout(28, 28).scale, 5);  // 140 px: at least kSampleTileSide
  EXPECT_EQ(sample_sheet_layout(100, 300).scale, 2);
  EXPECT_EQ(sample_sheet_layout(256, 256).scale, 1);
  EXPECT_GT(sample_sheet_layout(256, 256).header, 0);
}

TEST(SampleSheet, EveryPixelBecomesABlockUnderLabelledColumns) {
  torch::manual_seed(1);
  const auto a = torch::randint(0, 256, {2, 1, 32, 32}).to(torch::kFloat32);
  const auto fake = torch::randint(0, 256, {2, 1, 32, 32}).to(torch::kFloat32);
  const auto real = torch::randint(0, 256, {2, 3, 32, 32}).to(torch::kFloat32);  // colour: grey is replicated
  const auto sheet = sample_sheet({sample_rows(a, fake, real)}, {"input A", "output G(A)", "target B"});
  const auto layout = sample_sheet_layout(32, 32);
  ASSERT_EQ(sheet.sizes(), (std::vector<std::int64_t>{layout.header + 2 * 128, 3 * 128, 3}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t y : {0, 17, 31})
      for (std::int64_t x : {0, 5, 31}) {
        const auto block = [&](std::int64_t column) {
          return sheet.narrow(0, layout.header + (i * 32 + y) * 4, 4).narrow(1, column * 128 + x * 4, 4);
        };
        EXPECT_TRUE((block(0) == a[i][0][y][x].item<float>()).all().item<bool>());
        EXPECT_TRUE((block(1) == fake[i][0][y][x].item<float>()).all().item<bool>());
        for (std::int64_t c = 0; c < 3; ++c)
          EXPECT_TRUE((block(2).select(2, c) == real[i][c][y][x].item<float>()).all().item<bool>());
      }
  // Each column's band has text (white-ish pixels) on the dark band.
  const auto band = sheet.narrow(0, 0, layout.header);
  for (std::int64_t column = 0; column < 3; ++column)
    EXPECT_GT(band.narrow(1, column * 128, 128).gt(200).sum().item<std::int64_t>(), 20) << column;
  const auto other = sample_sheet({sample_rows(a, fake, real)}, {"input B", "output", "target A"});
  EXPECT_FALSE(torch::equal(other.narrow(0, 0, layout.header), band));
  EXPECT_TRUE(torch::equal(other.narrow(0, layout.header, 256), sheet.narrow(0, layout.header, 256)));
}
