// The auxiliary recognition loss (--aux-classifier): W times the classifier's cross-entropy on
// G(A), with gradients into the images and none into the frozen classifier; data it cannot judge
// is refused before training; a run reports recognition accuracy and its checkpoints hold the
// classifier's identity, which a resumed run must match. (Its 2-rank equivalence:
// distributed_equivalence_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/gan/recognition_loss.hpp"
#include "pix2pix/train/trainer.hpp"
#include "support/cpu_device.hpp"
#include "support/fixtures.hpp"
#include "support/model_access.hpp"

using namespace pix2pix;
using pix2pix::fixtures::contains;
using pix2pix::fixtures::error_of;
using pix2pix::fixtures::TempDir;

namespace {

using pix2pix::fixtures::kCpu;

// 72 train / 8 val labelled Fashion-MNIST pairs at 32x32, the same unlabelled, and classifier
// files: untrained, of 10 classes for these images, and misfits.
struct Files {
  TempDir dir;
  std::string labelled = dir / "labelled.h5", unlabelled = dir / "unlabelled.h5";
  std::string classifier = dir / "c.pt", other = dir / "other.pt", five_classes = dir / "c5.pt", wide = dir / "c64.pt",
              colour = dir / "rgb.pt";
  Files() {
    fixtures::make_fashion_edges_dataset(labelled, 80, 32, /*labels=*/true);
    fixtures::make_fashion_edges_dataset(unlabelled, 80, 32, /*labels=*/false);
    const auto write = [](const std::string& path, nets::ClassifierOptions o, int seed) {
      torch::manual_seed(seed);
      nets::Classifier net(o);
      net->eval();
      checkpoint::save_classifier(path, *net, {0, 0.5, "x.h5"});
    };
    write(classifier, {1, 32, 32, 10, 4, 0, nets::Norm::batch}, 1);
    write(other, {1, 32, 32, 10, 4, 0, nets::Norm::batch}, 2);
    write(five_classes, {1, 32, 32, 5, 4, 0, nets::Norm::batch}, 1);
    write(wide, {1, 64, 64, 10, 4, 0, nets::Norm::batch}, 1);
    write(colour, {3, 32, 32, 10, 4, 0, nets::Norm::batch}, 1);
  }
};
const Files& files() {
  static const Files f;
  return f;
}

}  // namespace

TEST(RecognitionLoss, IsWTimesTheMeanCrossEntropyWithGradientsIntoTheImagesOnly) {
  const auto dataset = data::PairedDataset::open(files().labelled);
  gan::RecognitionLoss loss(files().classifier, 2.5, *dataset, 32, 32, kCpu);
  checkpoint::SavedClassifier same = checkpoint::load_classifier(files().classifier, kCpu);
  torch::manual_seed(3);
  const auto images = torch::randn({6, 1, 32, 32}).tanh().requires_grad_();
  const auto labels = torch::tensor({0, 3, 9, 1, 1, 7}, torch::kInt64);

  const torch::Tensor value = loss(images, labels, optim::Precision::fp32);
  const torch::Tensor logits = same.network->forward(images.detach());
  const double by_hand = 2.5 * (-torch::log_softmax(logits, 1).gather(1, labels.unsqueeze(1))).mean().item<double>();
  EXPECT_NEAR(value.item<double>(), by_hand, 1e-5);
  EXPECT_GT(value.item<double>(), 1.0);  // untrained: about 2.5 x ln 10

  value.backward();
  ASSERT_TRUE(images.grad().defined());
  EXPECT_GT(images.grad().abs().sum().item<double>(), 0.0);
  for (const auto& p : loss.classifier().network->parameters()) {
    EXPECT_FALSE(p.requires_grad());
    EXPECT_FALSE(p.grad().defined());
  }
  EXPECT_FALSE(loss.classifier().network->is_training());

  const auto predicted = logits.argmax(1);
  EXPECT_EQ(loss.correct(images.detach(), labels, optim::Precision::fp32).item<std::int64_t>(),
            predicted.eq(labels).sum().item<std::int64_t>());
  EXPECT_EQ(loss.correct(images.detach(), predicted, optim::Precision::fp32).item<std::int64_t>(), 6);
}

TEST(RecognitionLoss, RefusesDataItCannotJudgeNamingTheOptionAndTheFile) {
  const auto labelled = data::PairedDataset::open(files().labelled);
  const auto unlabelled = data::PairedDataset::open(files().unlabelled);
  const auto make = [&](const std::string& path, const data::PairedDataset& d, std::int64_t side) {
    return error_of([&] { gan::RecognitionLoss(path, 1.0, d, side, side, kCpu); });
  };
  const std::string no_labels = make(files().classifier, *unlabelled, 32);
  EXPECT_TRUE(contains(no_labels, "--aux-classifier needs labels") && contains(no_labels, "unlabelled.h5"))
      << no_labels;
  const std::string classes = make(files().five_classes, *labelled, 32);
  EXPECT_TRUE(contains(classes, "--aux-classifier " + files().five_classes) && contains(classes, "5 classes") &&
              contains(classes, "label 9"))
      << classes;
  const std::string size = make(files().wide, *labelled, 32);
  EXPECT_TRUE(contains(size, "64x64") && contains(size, "32x32")) << size;
  const std::string crop = make(files().classifier, *labelled, 16);  // G trained on 16x16 crops
  EXPECT_TRUE(contains(crop, "16x16")) << crop;
  const std::string channels = make(files().colour, *labelled, 32);
  EXPECT_TRUE(contains(channels, "3-channel") && contains(channels, "have 1")) << channels;
  const std::string missing = make(files().dir / "missing.pt", *labelled, 32);
  EXPECT_TRUE(contains(missing, "missing.pt")) << missing;
}

TEST(RecognitionLoss, IdentityFollowsTheFilesContentsAndTheWeightNotItsPath) {
  const auto d = data::PairedDataset::open(files().labelled);
  const TempDir dir;
  std::filesystem::copy_file(files().classifier, dir / "moved.pt");
  const std::string id = gan::RecognitionLoss(files().classifier, 1.0, *d, 32, 32, kCpu).identity();
  EXPECT_EQ(gan::RecognitionLoss(dir / "moved.pt", 1.0, *d, 32, 32, kCpu).identity(), id);
  EXPECT_NE(gan::RecognitionLoss(files().classifier, 2.0, *d, 32, 32, kCpu).identity(), id);
  EXPECT_NE(gan::RecognitionLoss(files().other, 1.0, *d, 32, 32, kCpu).identity(), id);
}

namespace {

train::TrainOptions run_options(const std::string& run_dir, const std::string& classifier) {
  train::TrainOptions o;
  o.data = files().labelled;
  o.loader.batch_size = 8;
  o.loader.seed = 5;
  o.ngf = 4;
  o.ndf = 4;
  o.max_epochs = 2;
  o.early_stopping = {1, 100, 0.0, true};
  o.run_dir = run_dir;
  o.effective_config = "data = " + o.data + "\n";
  o.aux_classifier = classifier;
  o.lambda_aux = 0.5;
  return o;
}

std::string header_of(const std::string& csv) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST(TrainerRecognition, ReportsAccuracyAndResumesOnlyWithTheSameClassifier) {
  const TempDir dir;
  const std::string run = dir / "run";
  dist::LocalCommunicator comm;
  auto o = run_options(run, files().classifier);
  const train::RunResult result = train::Trainer(o, kCpu, comm).run();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_GE(result.best_recognition, 0.0);
  EXPECT_LE(result.best_recognition, 1.0);
  EXPECT_GE(result.real_recognition, 0.0);

  const std::string header = header_of(run + "/metrics.csv");
  EXPECT_TRUE(contains(header, "loss_G_l1,loss_G_aux,val_psnr")) << header;
  EXPECT_TRUE(contains(header, ",skipped_steps,val_recognition,val_recognition_smoothed")) << header;
  const std::string summary = fixtures::read_file(run + "/summary.json");
  EXPECT_TRUE(contains(summary, "\"aux_classifier\": \"" + files().classifier + "\"")) << summary;
  EXPECT_TRUE(contains(summary, "\"lambda_aux\": 0.5")) << summary;
  EXPECT_TRUE(contains(summary, "\"best_recognition\": ") && contains(summary, "\"real_recognition\": "));
  EXPECT_FALSE(contains(summary, "\"best_recognition\": null")) << summary;

  // A run without the classifier, or with another, does not continue this one.
  for (const std::string& classifier : {std::string(), files().other}) {
    auto again = run_options(run, classifier);
    again.resume = "auto";
    again.max_epochs = 3;
    const std::string refused = error_of([&] { train::Trainer(again, kCpu, comm); });
    EXPECT_TRUE(contains(refused, "auxiliary classifier") && contains(refused, "--aux-classifier")) << refused;
  }
  auto same = run_options(run, files().classifier);
  same.resume = "auto";
  same.max_epochs = 3;
  EXPECT_EQ(train::Trainer(same, kCpu, comm).run().last_epoch, 2);

  // And a run without one writes no recognition: no loss_G_aux column, empty recognition columns,
  // a silent summary.
  const std::string plain = dir / "plain";
  train::Trainer(run_options(plain, ""), kCpu, comm).run();
  std::ifstream csv(plain + "/metrics.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_FALSE(contains(line, "loss_G_aux")) << line;
  std::getline(csv, line);
  EXPECT_EQ(line.substr(line.size() - 3), "0,,") << line;  // skipped_steps 0, then two empty fields
  EXPECT_FALSE(contains(fixtures::read_file(plain + "/summary.json"), "recognition"));
}

// --es-metric accuracy: the same moving-average rule on the recognition accuracy of G(A).
TEST(TrainerRecognition, EarlyStoppingOnAccuracyWatchesRecognitionAndSaysSo) {
  const TempDir dir;
  const std::string run = dir / "run";
  dist::LocalCommunicator comm;
  auto o = run_options(run, files().classifier);
  o.es_metric = train::EsMetric::accuracy;
  o.early_stopping = {1, 1, 2.0, true};  // an accuracy never beats itself by 2: stop after the second
  o.max_epochs = 5;
  const train::RunResult result = train::Trainer(o, kCpu, comm).run();
  EXPECT_EQ(result.best_epoch, 0);
  EXPECT_EQ(result.last_epoch, 1);
  EXPECT_TRUE(contains(result.stop_reason, "smoothed recognition accuracy of G(A) did not improve"))
      << result.stop_reason;
  EXPECT_DOUBLE_EQ(result.best_smoothed, result.best_recognition);  // a window of 1: the raw value
  const std::string summary = fixtures::read_file(run + "/summary.json");
  EXPECT_TRUE(contains(summary, "\"es_metric\": \"accuracy\"") && contains(summary, "\"best_recognition_smoothed\": "))
      << summary;
  EXPECT_FALSE(contains(summary, "best_psnr_smoothed")) << summary;
  // metrics.csv: the smoothed column is the recognition one; PSNR's stays empty.
  std::ifstream csv(run + "/metrics.csv");
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  EXPECT_TRUE(contains(header, "val_psnr_smoothed,") && contains(header, ",val_recognition_smoothed")) << header;
  std::vector<std::string> names, values;
  for (std::stringstream h(header); std::getline(h, names.emplace_back(), ',');) {
  }
  for (std::stringstream r(row + ","); std::getline(r, values.emplace_back(), ',');) {
  }
  const auto at = [&](const std::string& name) {
    return values[static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin())];
  };
  EXPECT_EQ(at("val_psnr_smoothed"), "");
  EXPECT_NE(at("val_recognition_smoothed"), "");
  EXPECT_EQ(at("val_recognition_smoothed"), at("val_recognition"));

  // Resuming with the other metric would mix two histories: refused.
  auto psnr = run_options(run, files().classifier);
  psnr.resume = "auto";
  psnr.max_epochs = 6;
  const std::string refused = error_of([&] { train::Trainer(psnr, kCpu, comm); });
  EXPECT_TRUE(contains(refused, "watched accuracy") && contains(refused, "--es-metric psnr")) << refused;
  // And there is nothing to watch without a classifier.
  auto alone = run_options(dir / "alone", "");
  alone.es_metric = train::EsMetric::accuracy;
  EXPECT_TRUE(contains(error_of([&] { train::Trainer(alone, kCpu, comm); }), "--es-metric accuracy"));
}

// Mixed precision: the classifier runs under G's autocast, the cross-entropy in fp32; on CPUs
// bf16 is what autocast offers.
TEST(TrainerRecognition, RunsUnderBf16Autocast) {
  const TempDir dir;
  dist::LocalCommunicator comm;
  auto o = run_options(dir / "bf16", files().classifier);
  o.precision = optim::Precision::bf16;
  o.max_epochs = 1;
  train::Trainer trainer(o, kCpu, comm);
  data::BatchLoader loader(data::PairedDataset::open(files().labelled), o.loader, kCpu);
  loader.start_epoch(0);
  const gan::StepLosses losses = trainer.step(*loader.next());
  ASSERT_EQ(trainer.model().loss_names().back(), "loss_G_aux");
  const double aux = losses.host().back();
  EXPECT_TRUE(std::isfinite(aux));
  EXPECT_GT(aux, 0.5 * 1.0);  // W = 0.5 times about ln 10
  EXPECT_EQ(losses.skipped_host(), (std::vector<bool>{false, false}));
  EXPECT_EQ(trainer.run().exit_code, 0);
}
