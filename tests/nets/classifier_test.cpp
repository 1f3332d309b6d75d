// The recognition network: its depth from the image size, the parameter count worked by hand,
// logits of the right shape for every norm, and clear errors for shapes it cannot take.
#include <gtest/gtest.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/classifier.hpp"

using namespace pix2pix;
using namespace pix2pix::nets;

TEST(Classifier, StagesFollowTheSmallerSide) {
  EXPECT_EQ(classifier_blocks_for(32, 32), 3);  // 32 -> 16 -> 8 -> 4
  EXPECT_EQ(classifier_blocks_for(28, 28), 2);  // 28 -> 14 -> 7
  EXPECT_EQ(classifier_blocks_for(64, 64), 4);
  EXPECT_EQ(classifier_blocks_for(256, 256), 5);  // at most 5
  EXPECT_EQ(classifier_blocks_for(8, 64), 1);
  EXPECT_THROW(classifier_blocks_for(7, 64), Error);
}

TEST(Classifier, ParameterCountWorkedByHand) {
  // 1 channel, 32x32, 10 classes, 32 filters, batch norm (convolutions without bias):
  // stage 1: 1*32*9 + 32*32*9 + 2 * (32 + 32) = 9,632; stage 2: 32*64*9 + 64*64*9 + 2 * 128 = 55,552;
  // stage 3: 64*128*9 + 128*128*9 + 2 * 256 = 221,696; head: 128*10 + 10 = 1,290. Sum 288,170.
  Classifier net(ClassifierOptions{1, 32, 32, 10, 32, 0, Norm::batch});
  EXPECT_EQ(net->options().blocks, 3);
  EXPECT_EQ(count_parameters(*net), 288170);
  // Without norm each convolution has its bias instead: 32 + 32 + 64 + 64 + 128 + 128 = 448 in place of 896.
  EXPECT_EQ(count_parameters(*Classifier(ClassifierOptions{1, 32, 32, 10, 32, 0, Norm::none})), 288170 - 896 + 448);
}

TEST(Classifier, LogitsPerImageAndClassForEveryNorm) {
  for (Norm norm : {Norm::batch, Norm::instance, Norm::none}) {
    Classifier net(ClassifierOptions{3, 40, 24, 7, 8, 0, norm});
    const auto logits = net->forward(torch::rand({5, 3, 40, 24}) * 2 - 1);
    EXPECT_EQ(logits.sizes(), (std::vector<std::int64_t>{5, 7})) << to_string(norm);
    EXPECT_TRUE(logits.isfinite().all().item<bool>());
    // Global average pooling: other sizes go through as well (validation at the stored size).
    EXPECT_EQ(net->forward(torch::zeros({2, 3, 64, 64})).sizes(), (std::vector<std::int64_t>{2, 7}));
  }
  EXPECT_EQ(describe(Classifier(ClassifierOptions{3, 40, 24, 7, 8, 0, Norm::none})->options()),
            "channels=3 size=40x24 classes=7 filters=8 blocks=2 norm=none");
}

TEST(Classifier, ShapesItCannotTakeAreErrors) {
  EXPECT_THROW(Classifier(ClassifierOptions{1, 32, 32, 1, 32, 0, Norm::batch}), Error);   // one class
  EXPECT_THROW(Classifier(ClassifierOptions{1, 32, 32, 10, 32, 6, Norm::batch}), Error);  // 32 >> 6 = 0
  EXPECT_THROW(Classifier(ClassifierOptions{0, 32, 32, 10, 32, 0, Norm::batch}), Error);
  EXPECT_THROW(Classifier(ClassifierOptions{1, 4, 4, 10, 32, 0, Norm::batch}), Error);
}
