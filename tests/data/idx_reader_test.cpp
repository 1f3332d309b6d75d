// IDX reading against Debian's real Fashion-MNIST files, and rejection of files that are not IDX.
#include <gtest/gtest.h>

#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/idx_reader.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::fashion_mnist;

TEST(IdxReader, ReadsFashionMnistImagesAndLabels) {
  const auto images = data::read_idx_images(fashion_mnist("t10k-images-idx3-ubyte.gz"), 100);
  EXPECT_EQ(images.count, 100);
  EXPECT_EQ(images.rows, 28);
  EXPECT_EQ(images.cols, 28);
  ASSERT_EQ(images.pixels.size(), 100u * 28 * 28);
  // Real photographs of clothes: dark background, bright object, every image non-blank.
  for (int i = 0; i < 100; ++i) {
    const auto begin = images.pixels.begin() + i * 784;
    EXPECT_GT(*std::max_element(begin, begin + 784), 100) << "image " << i << " is blank";
  }
  const auto labels = data::read_idx_labels(fashion_mnist("t10k-labels-idx1-ubyte.gz"), 100);
  ASSERT_EQ(labels.size(), 100u);
  for (auto l : labels) {
    EXPECT_GE(l, 0);
    EXPECT_LE(l, 9);
  }
  EXPECT_EQ(labels[0], 9);  // the first t10k image is an ankle boot
}

TEST(IdxReader, LabelPathFollowsTheMnistNaming) {
  EXPECT_EQ(data::idx_labels_path_for("/d/train-images-idx3-ubyte.gz"), "/d/train-labels-idx1-ubyte.gz");
  EXPECT_EQ(data::idx_labels_path_for("/images-idx3/x.gz"), "");
}

TEST(IdxReader, RejectsWrongMagicAndTruncation) {
  fixtures::TempDir dir;
  {
    std::ofstream f(dir / "bad.idx", std::ios::binary);
    f << "this is not an idx file at all";
  }
  EXPECT_THROW(data::read_idx_images(dir / "bad.idx"), Error);
  {
    std::ofstream f(dir / "short.idx", std::ios::binary);
    const unsigned char header[] = {0, 0, 8, 3, 0, 0, 0, 10, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3};
    f.write(reinterpret_cast<const char*>(header), sizeof(header));
  }
  try {
    data::read_idx_images(dir / "short.idx");
    FAIL() << "truncated file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(data::read_idx_images(dir / "missing.idx"), Error);
}
