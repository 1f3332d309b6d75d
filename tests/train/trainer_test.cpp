// The training loop on CPU with tiny networks: it learns, it resumes exactly, every GAN mode and
// precision runs, loss scaling is exact and skips non-finite steps, early stopping stops, and bad
// input is a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "pix2pix/data/prepare.hpp"
#include "pix2pix/interop/pytorch_export.hpp"
#include "pix2pix/train/epoch_sums.hpp"
#include "pix2pix/train/trainer.hpp"
#include "support/fixtures.hpp"
#include "support/model_access.hpp"
#include "train/tiny_training.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;
using namespace pix2pix::train_tests;

TEST(Trainer, LearnsOnATinyDataset) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = tiny_options(dir / "run");
  o.max_epochs = 6;
  o.lr.epochs = 6;
  o.norm = nets::Norm::instance;  // batch-norm running statistics need more than 54 steps to settle
  o.keep_last = 2;
  train::Trainer trainer(o, kCpu, comm);
  const auto result = trainer.run();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.last_epoch, 5);
  const auto rows = read_csv(dir / "run/metrics.csv");
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_LT(field(rows.back(), kLossL1), 0.7 * field(rows.front(), kLossL1)) << "training L1 did not fall";
  EXPECT_LT(field(rows.back(), kValL1), field(rows.front(), kValL1)) << "validation L1 did not fall";
  EXPECT_GT(field(rows.back(), kValPsnr), field(rows.front(), kValPsnr) + 1.0) << "validation PSNR did not rise";
  for (const char* f : {"config.cfg", "metrics.jsonl", "train.log", "summary.json", "samples/epoch_0005.png",
                        "checkpoints/last.pt", "checkpoints/best.pt", "checkpoints/best_generator.pt",
                        "checkpoints/epoch_0004.pt", "checkpoints/epoch_0005.pt"})
    EXPECT_TRUE(fs::exists(dir / ("run/" + std::string(f)))) << f;
  EXPECT_FALSE(fs::exists(dir / "run/checkpoints/epoch_0003.pt")) << "--keep-last 2 kept a third epoch";
}

TEST(Trainer, EveryGanModeNormAndPrecisionRuns) {
  struct Case {
    gan::GanMode gan;
    nets::Norm norm;
    optim::Precision precision;
  };
  for (const Case& c : {Case{gan::GanMode::vanilla, nets::Norm::instance, optim::Precision::bf16},
                        Case{gan::GanMode::lsgan, nets::Norm::batch, optim::Precision::fp32},
                        Case{gan::GanMode::lsgan, nets::Norm::none, optim::Precision::bf16}}) {
    TempDir dir;
    dist::LocalCommunicator comm;
    auto o = tiny_options(dir / "run");
    o.gan_mode = c.gan;
    o.norm = c.norm;
    o.precision = c.precision;
    o.max_epochs = 1;
    train::Trainer trainer(o, kCpu, comm);
    const auto result = trainer.run();
    const auto rows = read_csv(dir / "run/metrics.csv");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(std::isfinite(field(rows[0], 3)) && std::isfinite(field(rows[0], kValPsnr)))
        << to_string(c.gan) << " " << nets::to_string(c.norm) << " " << to_string(c.precision);
  }
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = tiny_options(dir / "run");
  o.precision = optim::Precision::fp16;
  EXPECT_THROW(train::Trainer(o, kCpu, comm), Error);  // fp16 autocast needs CUDA
}

TEST(Trainer, LossScalingIsExactAndSkipsNonFiniteSteps) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto plain = tiny_options(dir / "a");
  plain.dropout = false;
  auto scaled = tiny_options(dir / "b");
  scaled.dropout = false;
  scaled.force_loss_scaling = true;  // the fp16 scaler path, in fp32 arithmetic
  train::Trainer a(plain, kCpu, comm), b(scaled, kCpu, comm);
  for (auto* t : {&a, &b}) {
    fixtures::pix2pix_model(*t).generator()->train();
    fixtures::pix2pix_model(*t).discriminator()->train();
  }
  data::BatchLoader loader(data::PairedDataset::open(tiny_dataset()), plain.loader, kCpu);
  loader.start_epoch(0);
  for (int i = 0; i < 3; ++i) {
    const auto batch = *loader.next();
    a.step(batch);
    b.step(batch);
  }
  // Scaling by 2^16 and unscaling is exact in binary floating point: the same weights.
  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).generator()->parameters()),
                        copies(fixtures::pix2pix_model(b).generator()->parameters())));
  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(a).discriminator()->parameters()),
                        copies(fixtures::pix2pix_model(b).discriminator()->parameters())));

  // An L1 weight of 1e38 overflows the scaled G loss to inf (the options refuse an infinite one):
  // every G gradient is non-finite, the G step is skipped, D still steps.
  auto broken = tiny_options(dir / "c");
  broken.model_parameters["lambda-l1"] = 1e38;
  broken.force_loss_scaling = true;
  train::Trainer c(broken, kCpu, comm);
  const auto before_g = copies(fixtures::pix2pix_model(c).generator()->parameters());
  const auto before_d = copies(fixtures::pix2pix_model(c).discriminator()->parameters());
  const auto losses = c.step(*loader.next());
  ASSERT_EQ(c.model().update_groups()[0]->label(), "G");
  EXPECT_EQ(losses.skipped_host(), (std::vector<bool>{true, false}));  // G skipped, D stepped
  EXPECT_TRUE(all_equal(before_g, copies(fixtures::pix2pix_model(c).generator()->parameters())))
      << "a non-finite step was applied";
  EXPECT_FALSE(all_equal(before_d, copies(fixtures::pix2pix_model(c).discriminator()->parameters())));
}

// See Note [gradients dropped after the update]: on one rank no network holds a gradient after a
// step of any model, whichever side decides the updates, so the next step's forward passes and
// discriminator step, where its memory peaks, do not hold the last step's.
TEST(Trainer, AStepOnOneRankLeavesNoGradientHeld) {
  for (const std::string model : {"pix2pix", "cyclegan", "onesided"})
    for (const bool on_device : {false, true}) {
      if (on_device && !compat::kFusedAdamWithSkip) continue;  // refused there: DeviceUpdate.IsRefusedBefore...
      TempDir dir;
      dist::LocalCommunicator comm;
      auto o = tiny_options(dir / "run");
      o.model = model;
      o.device_update = on_device;
      if (model != "pix2pix") o.gan_mode = gan::GanMode::lsgan;
      train::Trainer trainer(o, kCpu, comm);
      data::BatchLoader loader(data::PairedDataset::open(tiny_dataset()), o.loader, kCpu);
      loader.start_epoch(0);
      for (int step = 0; step < 2; ++step) {
        trainer.step(*loader.next());
        for (const auto& network : trainer.model().networks()) {
          const auto parameters = network.module->parameters();
          for (std::size_t k = 0; k < parameters.size(); ++k)
            EXPECT_FALSE(parameters[k].grad().defined())
                << model << (on_device ? ", decided on the device" : "") << ", step " << step << ": " << network.label
                << "'s parameter " << k << " still holds a gradient";
        }
      }
    }
}

// See Note [updates decided on the device]: the Pix2Pix step with both update groups deciding on
// the device trains what the host's decision trains (to the rounding of ATen's fused Adam against
// ours), with the fp16 loss scaler's path, and skips G's non-finite update while D steps, read
// from the step's flags and the epoch's sums alike.
TEST(Trainer, UpdatesDecidedOnTheDeviceTrainWhatTheHostDecides) {
  if (!compat::kFusedAdamWithSkip)
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no fused Adam with a skip flag (2.4): "
                 << "DeviceUpdate.IsRefusedBeforeLibTorch2_4 checks the refusal";
  // The bar below holds for the gradients one intra-op thread computes (CI's): with two, other
  // elements' gradients end near zero, and one moved by 5.4e-5 (a 37th of the learning rate).
  struct OneThread {
    const int before = torch::get_num_threads();
    OneThread() { torch::set_num_threads(1); }
    ~OneThread() { torch::set_num_threads(before); }
  } one_thread;
  TempDir dir;
  dist::LocalCommunicator comm;
  auto host_options = tiny_options(dir / "a");
  host_options.dropout = false;
  host_options.force_loss_scaling = true;
  host_options.device_update = false;
  auto device_options = host_options;
  device_options.run_dir = dir / "b";
  device_options.device_update = true;
  train::Trainer a(host_options, kCpu, comm), b(device_options, kCpu, comm);
  ASSERT_FALSE(a.model().update_groups()[0]->decides_on_device());
  ASSERT_TRUE(b.model().update_groups()[0]->decides_on_device());
  for (auto* t : {&a, &b}) {
    fixtures::pix2pix_model(*t).generator()->train();
    fixtures::pix2pix_model(*t).discriminator()->train();
  }
  data::BatchLoader loader(data::PairedDataset::open(tiny_dataset()), host_options.loader, kCpu);
  loader.start_epoch(0);
  for (int i = 0; i < 3; ++i) {
    const auto batch = *loader.next();
    const auto from_host = a.step(batch), from_device = b.step(batch);
    EXPECT_EQ(from_device.skipped_host(), (std::vector<bool>{false, false}));
    const auto host_losses = from_host.host(), device_losses = from_device.host();
    for (std::size_t k = 0; k < host_losses.size(); ++k)
      EXPECT_NEAR(device_losses[k], host_losses[k], 1e-4 * std::abs(host_losses[k]) + 1e-6) << "step " << i;
    // Adam moves an element by up to its learning rate whatever the size of its gradient, so where
    // a gradient is near zero the two Adams' rounding moves it by a part of that: a few elements in
    // ten thousand, each by less than a fortieth of the learning rate (2e-3); the rest agree to
    // 1e-6. Each step is compared from the same weights: left apart, those few elements change the
    // next steps' gradients, and a GAN's steps grow that into differences of the learning rate's
    // size nearly everywhere (on a CI-2c with AVX-512: 41 % of G's elements after the second step).
    auto& pa = fixtures::pix2pix_model(a);
    auto& pb = fixtures::pix2pix_model(b);
    const std::vector<std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>> networks = {
        {pa.generator()->parameters(), pb.generator()->parameters()},
        {pa.discriminator()->parameters(), pb.discriminator()->parameters()}};
    for (const auto& [x, y] : networks)
      for (std::size_t k = 0; k < x.size(); ++k) {
        const auto difference = (x[k] - y[k]).abs();
        const auto apart = (difference > 1e-6).sum().item<std::int64_t>();
        EXPECT_LE(difference.max().item<double>(), 5e-5) << "step " << i << ", parameter " << k;
        EXPECT_LE(apart, x[k].numel() / 1000)
            << "step " << i << ", parameter " << k << ": elements beyond 1e-6 of " << x[k].numel();
      }
    torch::NoGradGuard no_grad;
    for (const auto& [x, y] : networks)
      for (std::size_t k = 0; k < x.size(); ++k) y[k].copy_(x[k]);
  }

  auto broken = device_options;
  broken.run_dir = dir / "c";
  broken.model_parameters["lambda-l1"] = 1e38;
  train::Trainer c(broken, kCpu, comm);
  const auto before_g = copies(fixtures::pix2pix_model(c).generator()->parameters());
  const auto before_d = copies(fixtures::pix2pix_model(c).discriminator()->parameters());
  train::EpochSums sums(c.model().loss_names().size());
  const auto losses = c.step(*loader.next());
  sums.add(losses);
  EXPECT_EQ(losses.skipped.device(), kCpu) << "the flags stay where they were decided";
  EXPECT_EQ(losses.skipped_host(), (std::vector<bool>{true, false}));  // G skipped, D stepped
  EXPECT_EQ(sums.skipped_by_group(2), (std::vector<std::int64_t>{1, 0}));
  EXPECT_TRUE(all_equal(before_g, copies(fixtures::pix2pix_model(c).generator()->parameters())))
      << "a non-finite step was applied";
  EXPECT_FALSE(all_equal(before_d, copies(fixtures::pix2pix_model(c).discriminator()->parameters())));
  EXPECT_EQ(c.model().update_groups()[0]->scaler().scale(), 32768.0) << "G's scale backs off";
  EXPECT_EQ(c.model().update_groups()[1]->scaler().scale(), 65536.0);
}

// See Note [channels-last parameters]: the loader gives batches in the layout of the parameters
// they meet (auto on a CPU in fp32: NCHW), and a step on NHWC batches computes the losses the
// NCHW step computes from the same weights.
TEST(Trainer, BatchesTakeTheParametersLayout) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "rgb.h5", 16, 4, 32, 3, 3);  // with 1 channel the layouts coincide
  dist::LocalCommunicator comm;
  auto nchw_options = tiny_options(dir / "a");
  nchw_options.data = dir / "rgb.h5";
  nchw_options.dropout = false;  // dropout's masks are drawn in memory order
  auto nhwc_options = nchw_options;
  nhwc_options.run_dir = dir / "b";
  nhwc_options.channels_last = true;
  train::Trainer nchw(nchw_options, kCpu, comm), nhwc(nhwc_options, kCpu, comm);
  ASSERT_TRUE(all_equal(copies(fixtures::pix2pix_model(nchw).generator()->parameters()),
                        copies(fixtures::pix2pix_model(nhwc).generator()->parameters())));
  for (auto* t : {&nchw, &nhwc}) t->loader().start_epoch(0);
  const auto nchw_batch = *nchw.loader().next(), nhwc_batch = *nhwc.loader().next();
  for (const auto& image : {nchw_batch.a, nchw_batch.b}) EXPECT_TRUE(image.is_contiguous());
  for (const auto& image : {nhwc_batch.a, nhwc_batch.b}) {
    EXPECT_TRUE(image.is_contiguous(torch::MemoryFormat::ChannelsLast));
    EXPECT_FALSE(image.is_contiguous());
  }
  EXPECT_TRUE(torch::equal(nhwc_batch.a, nchw_batch.a));
  EXPECT_TRUE(torch::equal(nhwc_batch.b, nchw_batch.b));
  const auto expected = nchw.step(nchw_batch).host(), got = nhwc.step(nhwc_batch).host();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], expected[k], 1e-5 * std::abs(expected[k]) + 1e-6) << "loss " << k;
}

TEST(Trainer, EarlyStoppingEndsTheRunAtBestPlusPatience) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = tiny_options(dir / "run");
  o.lr.lr = 1e-30;  // nothing changes, so the validation PSNR is flat from the first epoch
  o.dropout = false;
  o.norm = nets::Norm::instance;  // no running statistics that would drift with zero learning rate
  o.max_epochs = 10;
  o.early_stopping = {2, 3, 0.0, true};
  train::Trainer trainer(o, kCpu, comm);
  const auto result = trainer.run();
  // First smoothed value (and best) at epoch 1; three evaluations without improvement: 2, 3, 4.
  EXPECT_EQ(result.best_epoch, 1);
  EXPECT_EQ(result.last_epoch, 4);
  EXPECT_NE(result.stop_reason.find("early stopping"), std::string::npos) << result.stop_reason;
  EXPECT_NE(std::ifstream(dir / "run/summary.json").peek(), EOF);
}

TEST(Trainer, StartsFromGivenStateDicts) {
  TempDir dir;
  dist::LocalCommunicator comm;
  // Weights of this run's shape (1 -> 1 channels, 6 levels, ngf = ndf = 8) that are not its own.
  torch::manual_seed(77);
  nets::UnetGenerator g(nets::GeneratorOptions{1, 1, 6, 8, nets::Norm::batch, true});
  nets::PatchDiscriminator d(nets::DiscriminatorOptions{2, 8, 3, nets::Norm::batch});
  nets::init_weights(*g);
  nets::init_weights(*d);
  interop::write_state_dict(dir / "g.pth", *g);
  interop::write_state_dict(dir / "d.pth", *d);
  auto o = tiny_options(dir / "run");
  o.init_generator = dir / "g.pth";
  o.init_discriminator = dir / "d.pth";
  {
    train::Trainer t(o, kCpu, comm);
    EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(t).generator()->parameters()), copies(g->parameters())));
    EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(t).generator()->buffers()), copies(g->buffers())));
    EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(t).discriminator()->parameters()), copies(d->parameters())));
  }
  {
    train::Trainer own(tiny_options(dir / "run"), kCpu, comm);
    EXPECT_FALSE(all_equal(copies(fixtures::pix2pix_model(own).generator()->parameters()), copies(g->parameters())));
  }
  // Another architecture is refused, naming the file and the first tensor that differs.
  nets::UnetGenerator wide(nets::GeneratorOptions{1, 1, 6, 16, nets::Norm::batch, true});
  interop::write_state_dict(dir / "wide.pth", *wide);
  o.init_generator = dir / "wide.pth";
  try {
    train::Trainer t(o, kCpu, comm);
    ADD_FAILURE() << "a U-Net of ngf 16 was loaded into one of ngf 8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "wide.pth" + ": model.model.0.weight is [16, 1, 4, 4], the network "
                                                            "needs [8, 1, 4, 4]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Trainer, BadInputIsAClearError) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto message = [&](const train::TrainOptions& o) -> std::string {
    try {
      train::Trainer t(o, kCpu, comm);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  auto o = tiny_options(dir / "run");
  o.loader.augment.preprocess = data::Preprocess::crop;
  o.loader.augment.crop_size = 128;
  EXPECT_NE(message(o).find("--crop-size 128"), std::string::npos);
  o = tiny_options(dir / "run");
  o.loader.batch_size = 100;
  EXPECT_NE(message(o).find("fewer than --batch-size 100"), std::string::npos);

  // A checkpoint of another model shape, and a truncated one.
  auto first = tiny_options(dir / "run");
  first.max_epochs = 1;
  {
    train::Trainer t(first, kCpu, comm);
    t.run();
  }
  auto wider = tiny_options(dir / "run");
  wider.ngf = 16;
  wider.resume = "auto";
  EXPECT_NE(message(wider).find("another model shape"), std::string::npos) << message(wider);
  const std::string last = dir / "run/checkpoints/last.pt";
  fs::copy_file(last, dir / "truncated.pt");
  fs::resize_file(dir / "truncated.pt", fs::file_size(last) / 2);
  auto truncated = tiny_options(dir / "run");
  truncated.resume = dir / "truncated.pt";
  EXPECT_NE(message(truncated).find("truncated.pt is damaged"), std::string::npos) << message(truncated);
  truncated.resume = dir / "absent.pt";
  EXPECT_NE(message(truncated).find("absent.pt: no such file"), std::string::npos);

  // A dataset without a val split cannot be trained with validation.
  {
    data::PairedFileWriter writer(dir / "noval.h5", 0);
    writer.write_root_attributes("tests", "none", "tests");
    writer.begin_split("train", {32, 32, 1, 1, false, true, 1});
    const cv::Mat m = fixtures::pattern_image(32, 32, 1, 0);
    for (int i = 0; i < 16; ++i) writer.append(m.data, m.data, 0, "p");
    writer.close();
  }
  auto noval = tiny_options(dir / "run2");
  noval.data = dir / "noval.h5";
  EXPECT_NE(message(noval).find("/val: required split is missing"), std::string::npos) << message(noval);
}

// See Note [oneDNN's padded channels]: a CPU trainer turns on LibTorch's zero-filled allocations where
// this LibTorch needs them (2.x) and leaves 1.13's allocator as it is.
TEST(Trainer, CpuTrainingZeroFillsAllocationsWhereLibTorchNeedsIt) {
  TempDir dir;
  dist::LocalCommunicator comm;
  compat::zero_fill_cpu_allocations(false);  // LibTorch's default
  ASSERT_FALSE(compat::cpu_allocations_zero_filled());
  train::Trainer trainer(tiny_options(dir / "run"), kCpu, comm);
  EXPECT_EQ(compat::cpu_allocations_zero_filled(), compat::kZeroFillCpuAllocations);
}

// --netG resnet_*: Pix2Pix with CycleGAN's ResNet generator on the same engine: it learns, a
// stopped run resumes to the same weights, and the files it writes rebuild a ResNet for
// inference (best_generator.pt, a full checkpoint, its reference-format state dict).
TEST(Trainer, TrainsResumesAndSavesAResnetGenerator) {
  TempDir dir;
  dist::LocalCommunicator comm;
  const auto resnet = [&](const std::string& run) {
    auto o = tiny_options(run);
    o.net_g = nets::GeneratorArch::resnet;
    o.n_blocks = 2;
    o.norm = nets::Norm::instance;
    o.max_epochs = 3;
    return o;
  };
  train::Trainer straight(resnet(dir / "straight"), kCpu, comm);
  const auto result = straight.run();
  EXPECT_EQ(result.exit_code, 0);
  const std::string shape = straight.model().shape();
  EXPECT_NE(shape.find("net_g=resnet n_blocks=2"), std::string::npos) << shape;
  const auto rows = read_csv(dir / "straight/metrics.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_LT(field(rows.back(), kLossL1), field(rows.front(), kLossL1)) << "the L1 loss did not fall";

  {
    auto first = resnet(dir / "resumed");
    first.max_epochs = 2;
    train::Trainer(first, kCpu, comm).run();
  }
  auto second = resnet(dir / "resumed");
  second.resume = "auto";
  train::Trainer resumed(second, kCpu, comm);
  resumed.run();
  EXPECT_TRUE(all_equal(copies(fixtures::pix2pix_model(straight).generator()->parameters()),
                        copies(fixtures::pix2pix_model(resumed).generator()->parameters())));

  // A U-Net run cannot continue it.
  auto unet = tiny_options(dir / "resumed");
  unet.resume = "auto";
  unet.max_epochs = 5;
  EXPECT_THROW(train::Trainer(unet, kCpu, comm), Error);

  const auto input = torch::rand({2, 1, 64, 64}) * 2 - 1;
  auto& trained = fixtures::pix2pix_model(straight).generator();
  trained->eval();
  const auto expected = trained->forward(input);
  for (const std::string& file : {dir / "straight/checkpoints/last.pt", dir / "straight.pth"}) {
    if (file == dir / "straight.pth") interop::write_state_dict(file, *trained);
    checkpoint::SavedGenerator saved = checkpoint::load_generator(file, kCpu);
    EXPECT_EQ(saved.generator->options().arch, nets::GeneratorArch::resnet) << file;
    EXPECT_EQ(saved.generator->options().n_blocks, 2) << file;
    EXPECT_TRUE(saved.generator->options().dropout)
        << "dropout in every block (read off the names in a .pth): " << file;
    EXPECT_TRUE(torch::allclose(saved.generator->forward(input), expected)) << file;
  }
  checkpoint::SavedGenerator best = checkpoint::load_generator(dir / "straight", kCpu);
  EXPECT_EQ(best.generator->options().arch, nets::GeneratorArch::resnet);
}
