// --model cyclegan and --model onesided (the unpaired models) on the shared run loop: their
// networks and losses, short runs that lower the cycle or deviation loss (on an unpaired file too),
// exact resume (pools kept), the files inference reads, and what they refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/gan/cyclegan_model.hpp"
#include "pix2pix/gan/image_pool.hpp"
#include "pix2pix/nets/model_shape.hpp"
#include "pix2pix/train/trainer.hpp"
#include "support/cpu_device.hpp"
#include "support/fixtures.hpp"
#include "support/model_access.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;
using pix2pix::fixtures::weights;

namespace {

using pix2pix::fixtures::kCpu;

// 72 train / 8 val pairs of Fashion-MNIST edges and images at 32x32, made once.
const std::string& tiny_dataset() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string out = dir / "tiny.h5";
    fixtures::make_fashion_edges_dataset(out, 80, 32);
    return out;
  }();
  return path;
}

// Fashion-MNIST shirts (A) and pullovers (B) at 32x32 through `prepare --unpaired`: 80 and 64 of
// them, 1/8 of each in an unpaired val split, made once.
const std::string& shirts_and_pullovers() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string out = dir / "shirts-pullovers.h5";
    fixtures::make_fashion_unpaired_dataset(out, dir / "png", 80, 64, 32);
    return out;
  }();
  return path;
}

// The named column of a metrics.csv as text, "" where a row has no value.
std::vector<std::string> fields_of(const std::string& csv, const std::string& name) {
  std::ifstream in(csv);
  std::string line, field;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream ss(line); std::getline(ss, field, ',');) header.push_back(field);
  const auto at = static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  std::vector<std::string> values;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    for (std::stringstream ss(line); std::getline(ss, field, ',');) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    values.push_back(at < fields.size() ? fields[at] : "(no column)");
  }
  return values;
}

train::TrainOptions cyclegan_options(const std::string& run_dir) {
  train::TrainOptions o;
  o.model = "cyclegan";
  o.data = tiny_dataset();
  o.loader.batch_size = 8;
  o.loader.seed = 3;
  o.net_g = nets::GeneratorArch::resnet;
  o.n_blocks = 2;
  o.norm = nets::Norm::instance;
  o.dropout = false;
  o.gan_mode = gan::GanMode::lsgan;
  o.ngf = 8;
  o.ndf = 8;
  o.lr.lr = 5e-4;
  o.lr.epochs = 6;
  o.lr.epochs_decay = 6;
  o.max_epochs = 4;
  o.early_stopping = {1, 100, 0.0, true};
  o.run_dir = run_dir;
  o.effective_config = "data = " + o.data + "\n";
  return o;
}

// The named column of every row of a metrics.csv.
std::vector<double> column(const std::string& csv, const std::string& name) {
  std::ifstream in(csv);
  std::string line, field;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream ss(line); std::getline(ss, field, ',');) header.push_back(field);
  const auto at = std::find(header.begin(), header.end(), name) - header.begin();
  std::vector<double> values;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    for (std::stringstream ss(line); std::getline(ss, field, ',');) fields.push_back(field);
    values.push_back(std::stod(fields.at(static_cast<size_t>(at))));
  }
  return values;
}

// The same run with --model onesided: G, a D of B images and the deviation loss.
train::TrainOptions onesided_options(const std::string& run_dir) {
  train::TrainOptions o = cyclegan_options(run_dir);
  o.model = "onesided";
  return o;
}

}  // namespace

TEST(CycleGan, FourNetworksTwoGroupsAndTheReferencesLossNames) {
  TempDir dir;
  dist::LocalCommunicator comm;
  train::Trainer t(cyclegan_options(dir / "run"), kCpu, comm);
  const auto networks = t.model().networks();
  ASSERT_EQ(networks.size(), 4u);
  EXPECT_EQ(networks[0].key, "generator") << "G_A is what inference loads";
  EXPECT_EQ(networks[2].label, "D_A");
  // G_A and G_B mirror each other (1 -> 1 channels here), D_A and D_B too; D on one domain.
  EXPECT_EQ(nets::count_parameters(*networks[0].module), nets::count_parameters(*networks[1].module));
  EXPECT_EQ(
      nets::count_parameters(*networks[2].module),
      nets::count_parameters(*nets::PatchDiscriminator(nets::DiscriminatorOptions{1, 8, 3, nets::Norm::instance})));
  const auto groups = t.model().update_groups();
  ASSERT_EQ(groups.size(), 2u);
  std::int64_t g = 0, d = 0;
  for (const auto& p : groups[0]->parameters()) g += p.numel();
  for (const auto& p : groups[1]->parameters()) d += p.numel();
  EXPECT_EQ(g, nets::count_parameters(*networks[0].module) * 2);
  EXPECT_EQ(d, nets::count_parameters(*networks[2].module) * 2);
  EXPECT_EQ(t.model().loss_names(), (std::vector<std::string>{"loss_D_A", "loss_G_A", "loss_cycle_A", "loss_idt_A",
                                                              "loss_D_B", "loss_G_B", "loss_cycle_B", "loss_idt_B"}));
  EXPECT_EQ(t.model().shape().rfind("model=cyclegan in=1 out=1 net_g=resnet n_blocks=2", 0), 0u) << t.model().shape();
}

TEST(CycleGan, ARunLowersTheCycleLossAndItsFilesServeInference) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = cyclegan_options(dir / "run");
  o.max_epochs = 6;
  train::Trainer t(o, kCpu, comm);
  const auto result = t.run();
  EXPECT_EQ(result.exit_code, 0) << result.stop_reason;
  const auto cycle_a = column(dir / "run/metrics.csv", "loss_cycle_A");
  const auto cycle_b = column(dir / "run/metrics.csv", "loss_cycle_B");
  ASSERT_EQ(cycle_a.size(), 6u);
  // Measured on LibTorch 1.13: 7.43 -> 4.27 and 7.01 -> 3.58 in 6 epochs of 9 steps.
  EXPECT_LT(cycle_a.back(), 0.75 * cycle_a.front()) << "A -> B -> A did not learn";
  EXPECT_LT(cycle_b.back(), 0.75 * cycle_b.front()) << "B -> A -> B did not learn";
  EXPECT_GT(column(dir / "run/metrics.csv", "val_psnr").back(), 0.0);
  EXPECT_EQ(column(dir / "run/metrics.csv", "scale_G").size(), 6u);

  // best_generator.pt and every full checkpoint hold G_A; last.pt's discriminator is D_A.
  const auto input = torch::rand({2, 1, 32, 32}) * 2 - 1;
  auto& g_a = dynamic_cast<gan::CycleGanModel&>(t.model()).g_a();
  g_a->eval();
  const auto expected = g_a->forward(input);
  checkpoint::SavedGenerator last = checkpoint::load_generator(dir / "run/checkpoints/last.pt", kCpu);
  EXPECT_TRUE(torch::allclose(last.generator->forward(input), expected));
  EXPECT_EQ(last.generator->options().arch, nets::GeneratorArch::resnet);
  checkpoint::SavedGenerator best = checkpoint::load_generator(dir / "run", kCpu);
  EXPECT_EQ(nets::parse_model_shape(best.model_shape).model, "cyclegan");
  const auto d_a = checkpoint::load_discriminator(dir / "run/checkpoints/last.pt", kCpu);
  EXPECT_EQ(d_a->options().in_channels, 1);
}

// The set: shirts <-> pullovers, unpaired, different numbers. The cycle losses fall,
// early stopping watches the cycle-reconstruction PSNR (no B pairs with any A in val), and
// val_psnr stays empty rather than pretending to score G(A) against some B.
TEST(CycleGan, LearnsShirtsToPulloversFromAnUnpairedFileAndStopsOnTheCycle) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = cyclegan_options(dir / "run");
  o.data = shirts_and_pullovers();
  o.max_epochs = 5;
  train::Trainer t(o, kCpu, comm);
  EXPECT_EQ(t.loader().steps_per_epoch(), 8) << "70 shirts, the larger domain, in batches of 8";
  const auto result = t.run();
  ASSERT_EQ(result.exit_code, 0) << result.stop_reason;
  EXPECT_EQ(result.watched, "validation cycle-reconstruction PSNR");
  const std::string csv = dir / "run/metrics.csv";
  const auto cycle_a = column(csv, "loss_cycle_A"), cycle_b = column(csv, "loss_cycle_B");
  ASSERT_EQ(cycle_a.size(), 5u);
  EXPECT_LT(cycle_a.back(), 0.8 * cycle_a.front()) << "shirt -> pullover -> shirt did not learn";
  EXPECT_LT(cycle_b.back(), 0.8 * cycle_b.front()) << "pullover -> shirt -> pullover did not learn";
  const auto cycle_psnr = column(csv, "val_cycle_psnr"), smoothed = column(csv, "val_cycle_psnr_smoothed");
  EXPECT_GT(cycle_psnr.back(), cycle_psnr.front()) << "reconstructions did not improve";
  EXPECT_NEAR(smoothed.back(), cycle_psnr.back(), 1e-9) << "window 1: the smoothed value is the value";
  for (const auto& value : fields_of(csv, "val_psnr"))
    EXPECT_EQ(value, "") << "an unpaired val split has no PSNR of G(A)";
  EXPECT_TRUE(fixtures::contains(fixtures::read_file(dir / "run/summary.json"), "\"es_metric\": \"cycle_psnr\""));
  EXPECT_TRUE(std::filesystem::exists(dir / "run/samples/epoch_0004.png"));
  EXPECT_TRUE(std::isnan(result.baseline_psnr));
}

// A paired val split in an unpaired file: G(A) against B decides, the cycle is reported beside it.
TEST(CycleGan, APairedValSplitIsScoredBothWays) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 24, 16, 4, 0, 32, 1, 1, /*paired_val=*/true);
  dist::LocalCommunicator comm;
  auto o = cyclegan_options(dir / "run");
  o.data = dir / "u.h5";
  o.max_epochs = 2;
  train::Trainer t(o, kCpu, comm);
  ASSERT_EQ(t.run().exit_code, 0);
  const std::string csv = dir / "run/metrics.csv";
  for (const char* name : {"val_psnr", "val_psnr_smoothed", "val_cycle_psnr"})
    for (const auto& value : fields_of(csv, name)) EXPECT_NE(value, "") << name;
  for (const auto& value : fields_of(csv, "val_cycle_psnr_smoothed")) EXPECT_EQ(value, "");
}

// Every draw is seeded per (step, rank) and checkpoints keep the image pools
// (See Note [checkpointed image pools]): stopping after epoch 2 and resuming gives the weights of a straight run of
// `options`, with a pool small enough to be full and mixing old images into D's batches by then;
// and a run of `other` model cannot continue its checkpoint.
namespace {
void expect_exact_resume(const TempDir& dir, train::TrainOptions straight, const std::string& other) {
  dist::LocalCommunicator comm;
  straight.run_dir = dir / "a";
  straight.model_parameters["pool-size"] = 5;
  straight.max_epochs = 3;
  train::Trainer a(straight, kCpu, comm);
  a.run();
  auto first = straight;
  first.run_dir = dir / "b";
  first.max_epochs = 2;
  train::Trainer(first, kCpu, comm).run();
  auto second = first;
  second.max_epochs = 3;
  second.resume = "auto";
  train::Trainer b(second, kCpu, comm);
  for (const auto& [key, pool] : b.model().pools()) EXPECT_EQ(pool->size(), 5) << key << " came back full";
  b.run();
  const auto wa = weights(a), wb = weights(b);
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(torch::equal(wa[i], wb[i])) << "parameter " << i;
  auto another = second;
  another.model = other;
  another.max_epochs = 4;
  EXPECT_THROW(train::Trainer(another, kCpu, comm), Error) << "another model continued the checkpoint";
}
}  // namespace

TEST(CycleGan, ResumesToTheSameWeightsWithItsPools) {
  TempDir dir;
  expect_exact_resume(dir, cyclegan_options(dir / "a"), "pix2pix");
}

TEST(CycleGan, ThePoolShowsNewImagesUntilFullThenMixesInOlderOnes) {
  gan::ImagePool off(0);
  const auto batch = torch::rand({3, 1, 4, 4});
  EXPECT_TRUE(torch::equal(off.query(batch), batch));
  gan::ImagePool pool(4);
  torch::manual_seed(1);
  const auto first = torch::rand({4, 1, 4, 4});
  EXPECT_TRUE(torch::equal(pool.query(first), first)) << "a pool that is not full returns its input";
  EXPECT_EQ(pool.size(), 4);
  int older = 0;
  for (int i = 0; i < 20; ++i) {
    const auto next = torch::rand({4, 1, 4, 4});
    const auto shown = pool.query(next);
    for (int k = 0; k < 4; ++k) older += torch::equal(shown[k], next[k]) ? 0 : 1;
  }
  EXPECT_GT(older, 20) << "about half the images shown should be older ones";
  EXPECT_LT(older, 60);
  EXPECT_EQ(pool.size(), 4);
}

// What a checkpoint keeps of a pool: its images in pool order; a pool restored from them answers
// the same draws as the original, and one of smaller capacity keeps the first it can hold.
TEST(CycleGan, APoolRestoredFromItsImagesDrawsAsTheOriginal) {
  gan::ImagePool pool(4), empty(4);
  EXPECT_FALSE(empty.images().defined());
  torch::manual_seed(2);
  pool.query(torch::rand({6, 1, 4, 4}));
  const torch::Tensor kept = pool.images();
  ASSERT_EQ(kept.sizes(), (std::vector<std::int64_t>{4, 1, 4, 4}));
  gan::ImagePool copy(4);
  copy.restore(kept, torch::kCPU);
  const auto next = torch::rand({8, 1, 4, 4});
  torch::manual_seed(5);
  const auto original_shows = pool.query(next);
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(copy.query(next), original_shows));
  EXPECT_TRUE(torch::equal(copy.images(), pool.images()));
  gan::ImagePool smaller(2);
  smaller.restore(kept, torch::kCPU);
  EXPECT_TRUE(torch::equal(smaller.images(), kept.slice(0, 0, 2)));
  smaller.restore(torch::Tensor(), torch::kCPU);
  EXPECT_EQ(smaller.size(), 0);
}

TEST(CycleGan, RefusesWhatItCannotTrain) {
  TempDir dir;
  dist::LocalCommunicator comm;
  // The identity loss needs A and B of the same channels.
  const std::string grey_to_colour = dir / "g2c.h5";
  fixtures::make_pattern_dataset(grey_to_colour, 16, 4, 32, 1, 3);
  auto o = cyclegan_options(dir / "run");
  o.data = grey_to_colour;
  const std::string refused = fixtures::error_of([&] { train::Trainer(o, kCpu, comm); });
  EXPECT_NE(refused.find("--lambda-identity 0"), std::string::npos) << refused;
  o.model_parameters["lambda-identity"] = 0;
  o.max_epochs = 1;
  EXPECT_EQ(train::Trainer(o, kCpu, comm).run().exit_code, 0) << "without the identity loss, 1 -> 3 trains";
  auto pix2pix_only = cyclegan_options(dir / "other");
  pix2pix_only.init_generator = dir / "g.pth";
  EXPECT_THROW(train::Trainer(pix2pix_only, kCpu, comm), UsageError);
  auto negative = cyclegan_options(dir / "other");
  negative.model_parameters["lambda-A"] = -1;
  EXPECT_THROW(train::Trainer(negative, kCpu, comm), UsageError);

  // An unpaired file: Pix2Pix has no pairs to learn from; the identity loss still needs equal channels.
  fixtures::make_unpaired_pattern_dataset(dir / "u13.h5", 16, 12, 4, 4, 32, 1, 3);
  auto pix2pix = cyclegan_options(dir / "p2p");
  pix2pix.model = "pix2pix";
  pix2pix.data = dir / "u13.h5";
  pix2pix.gan_mode = gan::GanMode::vanilla;
  const std::string unpaired = fixtures::error_of([&] { train::Trainer(pix2pix, kCpu, comm); });
  EXPECT_TRUE(fixtures::contains(unpaired, "/train is unpaired")) << unpaired;
  EXPECT_TRUE(fixtures::contains(unpaired, "--model cyclegan")) << unpaired;
  auto mismatch = cyclegan_options(dir / "mismatch");
  mismatch.data = dir / "u13.h5";
  const std::string channels = fixtures::error_of([&] { train::Trainer(mismatch, kCpu, comm); });
  EXPECT_TRUE(fixtures::contains(channels, "--lambda-identity 0")) << channels;
}

TEST(OneSided, OneGeneratorOneDiscriminatorOfBImagesAndItsLossNames) {
  TempDir dir;
  dist::LocalCommunicator comm;
  train::Trainer t(onesided_options(dir / "run"), kCpu, comm);
  const auto networks = t.model().networks();
  ASSERT_EQ(networks.size(), 2u);
  EXPECT_EQ(networks[0].key, "generator");
  EXPECT_EQ(networks[1].key, "discriminator");
  EXPECT_EQ(
      nets::count_parameters(*networks[1].module),
      nets::count_parameters(*nets::PatchDiscriminator(nets::DiscriminatorOptions{1, 8, 3, nets::Norm::instance})))
      << "D judges B images alone";
  EXPECT_EQ(t.model().update_groups().size(), 2u);
  EXPECT_EQ(t.model().reverse_translator(), nullptr);
  EXPECT_EQ(t.model().loss_names(), (std::vector<std::string>{"loss_D", "loss_G", "loss_G_dev"}));
  const auto shape = nets::parse_model_shape(t.model().shape());
  EXPECT_EQ(shape.model, "onesided");
  EXPECT_EQ(shape.discriminator.in_channels, 1);
  EXPECT_EQ(t.model().shape().rfind("model=onesided in=1 out=1 net_g=resnet n_blocks=2", 0), 0u) << t.model().shape();
}

TEST(OneSided, ARunLowersTheDeviationLossAndItsFilesServeInference) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = onesided_options(dir / "run");
  o.max_epochs = 5;
  train::Trainer t(o, kCpu, comm);
  const auto result = t.run();
  EXPECT_EQ(result.exit_code, 0) << result.stop_reason;
  const std::string csv = dir / "run/metrics.csv";
  const auto deviation = column(csv, "loss_G_dev");
  ASSERT_EQ(deviation.size(), 5u);
  EXPECT_LT(deviation.back(), 0.75 * deviation.front()) << "G(B) did not come closer to B";
  EXPECT_GT(column(csv, "val_psnr").back(), 0.0);
  EXPECT_EQ(fields_of(csv, "val_cycle_psnr").front(), "(no column)") << "no generator back, no cycle column";
  EXPECT_GT(column(csv, "val_deviation_psnr").back(), 0.0) << "reported beside val_psnr";
  const auto input = torch::rand({2, 1, 32, 32}) * 2 - 1;
  auto& g = t.model().translator();
  g->eval();
  const auto expected = g->forward(input);
  checkpoint::SavedGenerator best = checkpoint::load_generator(dir / "run/checkpoints/last.pt", kCpu);
  EXPECT_TRUE(torch::allclose(best.generator->forward(input), expected));
  EXPECT_EQ(checkpoint::load_discriminator(dir / "run/checkpoints/last.pt", kCpu)->options().in_channels, 1);
  EXPECT_THROW(checkpoint::load_generator(dir / "run/checkpoints/last.pt", kCpu, checkpoint::Direction::b_to_a), Error)
      << "no G_B to translate B to A with";
}

TEST(OneSided, ResumesToTheSameWeightsWithItsPool) {
  TempDir dir;
  expect_exact_resume(dir, onesided_options(dir / "a"), "cyclegan");
}

TEST(OneSided, TrainsOnUnpairedImagesAndStopsOnTheDeviationPsnrOfAnUnpairedValSplit) {
  TempDir dir;
  dist::LocalCommunicator comm;
  fixtures::make_unpaired_pattern_dataset(dir / "paired-val.h5", 24, 16, 4, 0, 32, 1, 1, /*paired_val=*/true);
  auto o = onesided_options(dir / "run");
  o.data = dir / "paired-val.h5";
  o.max_epochs = 1;
  EXPECT_EQ(train::Trainer(o, kCpu, comm).run().exit_code, 0);
  for (const char* name : {"val_psnr", "val_deviation_psnr"})
    EXPECT_NE(fields_of(dir / "run/metrics.csv", name).front(), "") << name << ": a paired val split scores both";
  EXPECT_EQ(fields_of(dir / "run/metrics.csv", "val_deviation_psnr_smoothed").front(), "");

  // An unpaired val split: no B to score G(A) against and no generator back for the cycle, so the
  // deviation PSNR of G(B) against B is what early stopping watches.
  fixtures::make_unpaired_pattern_dataset(dir / "unpaired.h5", 24, 16, 4, 4, 32, 1, 1);
  o.data = dir / "unpaired.h5";
  o.run_dir = dir / "unpaired";
  o.max_epochs = 3;
  const auto result = train::Trainer(o, kCpu, comm).run();
  EXPECT_EQ(result.exit_code, 0) << result.stop_reason;
  EXPECT_EQ(result.watched, "validation deviation PSNR");
  const std::string csv = dir / "unpaired/metrics.csv";
  for (const auto& value : fields_of(csv, "val_psnr")) EXPECT_EQ(value, "");
  const auto deviation = column(csv, "val_deviation_psnr"), smoothed = column(csv, "val_deviation_psnr_smoothed");
  ASSERT_EQ(deviation.size(), 3u);
  EXPECT_GT(deviation.back(), 0.0);
  EXPECT_NEAR(smoothed.back(), deviation.back(), 1e-9) << "window 1: the smoothed value is the value";
  EXPECT_TRUE(
      fixtures::contains(fixtures::read_file(dir / "unpaired/summary.json"), "\"es_metric\": \"deviation_psnr\""));
  EXPECT_TRUE(std::filesystem::exists(dir / "unpaired/samples/epoch_0002.png")) << "A | G(A) | a B image";
  EXPECT_TRUE(std::filesystem::exists(dir / "unpaired/curves.png"));
  // The deviation loss feeds B to G: A and B of other channel counts need it off, and then a
  // paired val split (no deviation PSNR either).
  fixtures::make_pattern_dataset(dir / "g2c.h5", 16, 4, 32, 1, 3);
  o.data = dir / "g2c.h5";
  o.run_dir = dir / "refused";
  o.max_epochs = 1;
  const std::string channels = fixtures::error_of([&] { train::Trainer(o, kCpu, comm); });
  EXPECT_TRUE(fixtures::contains(channels, "the deviation loss feeds B to G")) << channels;
  o.model_parameters["lambda-deviation"] = 0;
  o.run_dir = dir / "no-deviation";
  EXPECT_EQ(train::Trainer(o, kCpu, comm).run().exit_code, 0) << "without the deviation loss, 1 -> 3 trains";
  EXPECT_EQ(fields_of(dir / "no-deviation/metrics.csv", "val_deviation_psnr").front(), "(no column)");
  fixtures::make_unpaired_pattern_dataset(dir / "unpaired-g2c.h5", 24, 16, 4, 4, 32, 1, 3);
  o.data = dir / "unpaired-g2c.h5";
  o.run_dir = dir / "refused-val";
  const std::string val = fixtures::error_of([&] { train::Trainer(o, kCpu, comm); });
  EXPECT_TRUE(fixtures::contains(val, "/val is unpaired, so --model onesided scores it by the deviation PSNR")) << val;
  EXPECT_TRUE(fixtures::contains(val, "(A has 1, B 3)")) << val;
  auto pix2pix_only = onesided_options(dir / "other");
  pix2pix_only.init_generator = dir / "g.pth";
  EXPECT_THROW(train::Trainer(pix2pix_only, kCpu, comm), UsageError);
}
