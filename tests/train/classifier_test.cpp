// The recognition network's file and its trainer on one process: the file keeps what a later use
// must match and refuses what it is not; training on Fashion-MNIST learns (far above the 10 %
// of chance), keeps the best epoch and stops on patience; bad data is a clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/train/classifier_trainer.hpp"
#include "support/cpu_device.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::contains;
using pix2pix::fixtures::error_of;
using pix2pix::fixtures::TempDir;

namespace {

using pix2pix::fixtures::kCpu;

// 1,080 train / 120 val Fashion-MNIST images at 32x32 with their labels, and the same without.
struct LabelledData {
  TempDir dir;
  std::string labelled = dir / "labelled.h5", unlabelled = dir / "unlabelled.h5";
  LabelledData() {
    fixtures::make_fashion_edges_dataset(labelled, 1200, 32, /*labels=*/true);
    fixtures::make_fashion_edges_dataset(unlabelled, 60, 32, /*labels=*/false);
  }
};
const LabelledData& datasets() {
  static const LabelledData d;
  return d;
}

train::ClassifierTrainOptions small_options(const std::string& out) {
  train::ClassifierTrainOptions o;
  o.data = datasets().labelled;
  o.out = out;
  o.metrics_csv = out + ".csv";
  o.loader.batch_size = 32;
  o.loader.seed = 3;
  o.filters = 16;
  o.max_epochs = 3;
  o.progress = ProgressStyle::none;
  return o;
}

}  // namespace

TEST(ClassifierFile, KeepsWeightsShapeAndRecordAndLoadsFrozen) {
  TempDir dir;
  torch::manual_seed(1);
  nets::Classifier net(nets::ClassifierOptions{3, 16, 24, 5, 4, 0, nets::Norm::batch});
  {  // running statistics that differ from the defaults
    torch::NoGradGuard no_grad;
    net->train();
    net->forward(torch::randn({6, 3, 16, 24}) + 0.5);
  }
  net->eval();
  const std::string path = dir / "c.pt";
  checkpoint::save_classifier(path, *net, {4, 0.75, "some.h5"});
  checkpoint::SavedClassifier saved = checkpoint::load_classifier(path, kCpu);
  EXPECT_EQ(nets::describe(saved.network->options()), nets::describe(net->options()));
  EXPECT_EQ(saved.record.epoch, 4);
  EXPECT_DOUBLE_EQ(saved.record.val_accuracy, 0.75);
  EXPECT_EQ(saved.record.data, "some.h5");
  EXPECT_FALSE(saved.network->is_training());
  for (const auto& p : saved.network->parameters()) EXPECT_FALSE(p.requires_grad());
  const auto x = torch::randn({2, 3, 16, 24});
  EXPECT_TRUE(torch::equal(saved.network->forward(x), net->forward(x)));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(ClassifierFile, RefusesWhatIsNotAClassifierAndWhatDoesNotFit) {
  TempDir dir;
  nets::Classifier net(nets::ClassifierOptions{1, 32, 32, 10, 4, 0, nets::Norm::none});
  const std::string path = dir / "c.pt";
  checkpoint::save_classifier(path, *net, {0, 0.5, "d.h5"});

  EXPECT_TRUE(contains(error_of([&] { checkpoint::load_classifier(dir / "missing.pt", kCpu); }), "missing.pt"));
  // A generator file of ours is sealed and a torch archive, but not a classifier.
  nets::UnetGenerator g(nets::GeneratorOptions{1, 1, 5, 4, nets::Norm::batch, false});
  checkpoint::save_generator(dir / "g.pt", *g, "in=1 out=1 num_downs=5 ngf=4 dropout=0 ndf=4 n_layers_d=3 norm=batch",
                             {}, 0);
  const std::string not_ours = error_of([&] { checkpoint::load_classifier(dir / "g.pt", kCpu); });
  EXPECT_TRUE(contains(not_ours, "not a pix2pix-mpi classifier file") && contains(not_ours, "g.pt")) << not_ours;
  // A flipped byte: the seal tells before torch reads it.
  std::filesystem::copy_file(path, dir / "bad.pt");
  {
    std::fstream f(dir / "bad.pt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x55');
  }
  const std::string damaged = error_of([&] { checkpoint::load_classifier(dir / "bad.pt", kCpu); });
  EXPECT_TRUE(contains(damaged, "bad.pt") && contains(damaged, "damaged")) << damaged;

  const checkpoint::SavedClassifier saved = checkpoint::load_classifier(path, kCpu);
  EXPECT_NO_THROW(checkpoint::check_classifier_fits(saved, {1, 32, 32, 9}, "--aux-classifier"));
  const std::string channels = error_of([&] {
    checkpoint::check_classifier_fits(saved, {3, 32, 32, 9}, "--aux-classifier");
  });
  EXPECT_TRUE(contains(channels, "--aux-classifier " + path) && contains(channels, "1-channel") &&
              contains(channels, "have 3"))
      << channels;
  const std::string size = error_of([&] {
    checkpoint::check_classifier_fits(saved, {1, 64, 32, 9}, "--aux-classifier");
  });
  EXPECT_TRUE(contains(size, "32x32") && contains(size, "64x32")) << size;
  const std::string label = error_of([&] {
    checkpoint::check_classifier_fits(saved, {1, 32, 32, 10}, "--aux-classifier");
  });
  EXPECT_TRUE(contains(label, "10 classes") && contains(label, "label 10")) << label;
}

TEST(ClassifierTrainer, LearnsFashionMnistKeepsTheBestEpochAndWritesItsMetrics) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = small_options(dir / "classifier.pt");
  train::ClassifierTrainer trainer(o, kCpu, comm);
  EXPECT_EQ(trainer.shape().classes, 10);  // Fashion-MNIST's labels 0..9
  EXPECT_EQ(trainer.shape().height, 32);
  EXPECT_EQ(trainer.shape().channels, 1);
  const double before = trainer.accuracy(data::format::kVal);
  const train::ClassifierRunResult result = trainer.run();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.last_epoch, 2);
  EXPECT_EQ(result.stop_reason, "reached --max-epochs 3");
  // Chance is 10 %; a small CNN gets well past 60 % in three epochs of 1,080 images.
  EXPECT_GT(result.best_accuracy, 0.6) << "before training: " << before;
  // The file holds the best epoch's network: loaded, it scores what the run reported.
  const checkpoint::SavedClassifier saved = checkpoint::load_classifier(o.out, kCpu);
  EXPECT_EQ(saved.record.epoch, result.best_epoch);
  EXPECT_DOUBLE_EQ(saved.record.val_accuracy, result.best_accuracy);
  if (result.best_epoch == result.last_epoch) {
    EXPECT_DOUBLE_EQ(trainer.accuracy(data::format::kVal), result.best_accuracy);
  }
  const std::string csv = fixtures::read_file(o.metrics_csv);
  EXPECT_EQ(csv.rfind("epoch,train_loss,val_accuracy,best_val_accuracy,images_per_s,seconds\n0,", 0), 0u) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;
}

TEST(ClassifierTrainer, StopsAfterPatienceEpochsWithoutABetterAccuracy) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = small_options(dir / "c.pt");
  o.lr = 1e-9;  // nothing changes: the first epoch stays the best
  o.min_delta = 0.5;
  o.patience = 2;
  o.max_epochs = 10;
  const train::ClassifierRunResult result = train::ClassifierTrainer(o, kCpu, comm).run();
  EXPECT_EQ(result.best_epoch, 0);
  EXPECT_EQ(result.last_epoch, 2);
  EXPECT_TRUE(contains(result.stop_reason, "early stopping")) << result.stop_reason;
}

TEST(ClassifierTrainer, BadDataIsAClearError) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = small_options(dir / "c.pt");
  o.data = datasets().unlabelled;
  const std::string no_labels = error_of([&] { train::ClassifierTrainer(o, kCpu, comm); });
  EXPECT_TRUE(contains(no_labels, "unlabelled.h5") && contains(no_labels, "no labels")) << no_labels;

  o = small_options(dir / "c.pt");
  o.classes = 5;
  const std::string few = error_of([&] { train::ClassifierTrainer(o, kCpu, comm); });
  EXPECT_TRUE(contains(few, "--classes 5") && contains(few, "label 9")) << few;

  o = small_options(dir / "c.pt");
  o.data = dir / "missing.h5";
  EXPECT_TRUE(contains(error_of([&] { train::ClassifierTrainer(o, kCpu, comm); }), "missing.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir / "c.pt"));
}
