// --ema-decay in the run loop (See Note [the generator's moving average]): each step moves the
// average by (1 - decay) towards the model, buffers are the model's, a resumed run keeps exactly
// the average of an uninterrupted one, and best_generator.pt and inference load it.
#include <gtest/gtest.h>

#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/train/trainer.hpp"
#include "support/fixtures.hpp"
#include "support/model_access.hpp"
#include "train/tiny_training.hpp"

using namespace pix2pix;
using namespace pix2pix::train_tests;

namespace {

std::vector<torch::Tensor> parameters_of(const torch::nn::Module& module) {
  return copies(module.parameters());
}

train::TrainOptions with_average(const std::string& run_dir, double decay = 0.9) {
  auto o = tiny_options(run_dir);
  o.ema_decay = decay;
  return o;
}

}  // namespace

TEST(GeneratorEma, EachStepMovesTheAverageByOneMinusTheDecayAndCopiesTheBuffers) {
  TempDir dir;
  dist::LocalCommunicator comm;
  train::Trainer t(with_average(dir / "run", 0.75), kCpu, comm);
  ASSERT_NE(t.ema(), nullptr);
  nets::Generator& live = fixtures::pix2pix_model(t).generator();
  nets::Generator& average = t.ema()->translator();
  EXPECT_TRUE(all_equal(parameters_of(*live), parameters_of(*average))) << "the average starts at the model";
  t.loader().start_epoch(0);
  for (int step = 0; step < 3; ++step) {
    const auto before = parameters_of(*average);
    t.step(*t.loader().next());
    const auto now = parameters_of(*live), after = parameters_of(*average);
    ASSERT_EQ(before.size(), after.size());
    double moved = 0;
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_TRUE(torch::allclose(after[i], 0.75 * before[i] + 0.25 * now[i], 1e-6, 1e-7)) << "parameter " << i;
      moved = std::max(moved, (now[i] - after[i]).abs().max().item<double>());
    }
    EXPECT_GT(moved, 1e-5) << "the average equals the model: nothing was averaged";
    // Batch norm's running statistics are the model's, not averaged.
    EXPECT_TRUE(all_equal(copies(live->buffers()), copies(average->buffers())));
  }
  // It is among the networks the replica check and the checkpoints cover, by its own name.
  const auto networks = t.ema()->networks();
  ASSERT_EQ(networks.size(), 1u);
  EXPECT_EQ(networks[0].key, "generator_ema");
  EXPECT_EQ(networks[0].label, "G (EMA)");
}

TEST(GeneratorEma, AResumedRunKeepsExactlyTheAverageOfAnUninterruptedOne) {
  TempDir dir;
  dist::LocalCommunicator comm;
  train::Trainer straight(with_average(dir / "straight"), kCpu, comm);
  straight.run();
  auto first = with_average(dir / "resumed");
  first.max_epochs = 2;
  { train::Trainer(first, kCpu, comm).run(); }
  auto second = with_average(dir / "resumed");
  second.resume = "auto";
  train::Trainer resumed(second, kCpu, comm);
  resumed.run();
  EXPECT_TRUE(all_equal(parameters_of(*straight.ema()->translator()), parameters_of(*resumed.ema()->translator())));
  EXPECT_TRUE(
      all_equal(copies(straight.ema()->translator()->buffers()), copies(resumed.ema()->translator()->buffers())));
  // Validation ran the average: the logged PSNR of every epoch is the same in both runs.
  const auto x = read_csv(dir / "straight/metrics.csv"), y = read_csv(dir / "resumed/metrics.csv");
  ASSERT_EQ(x.size(), 4u);
  ASSERT_EQ(y.size(), 4u);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i].fields[kValPsnr], y[i].fields[kValPsnr]) << "epoch " << i;
}

TEST(GeneratorEma, BestGeneratorHoldsTheAverageAndInferenceChoosesByWeights) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = with_average(dir / "run", 0.5);
  o.max_epochs = 2;
  { train::Trainer(o, kCpu, comm).run(); }
  using checkpoint::Weights;
  const auto dir_auto = checkpoint::load_generator(dir / "run", kCpu);
  const auto best_ema = checkpoint::load_generator(dir / "run/checkpoints/best.pt", kCpu, {}, Weights::ema);
  const auto best_raw = checkpoint::load_generator(dir / "run/checkpoints/best.pt", kCpu, {}, Weights::raw);
  const auto dir_raw = checkpoint::load_generator(dir / "run", kCpu, {}, Weights::raw);
  EXPECT_TRUE(dir_auto.ema && best_ema.ema);
  EXPECT_FALSE(best_raw.ema || dir_raw.ema);
  EXPECT_EQ(dir_auto.path, dir / "run/checkpoints/best_generator.pt");
  EXPECT_EQ(dir_raw.path, dir / "run/checkpoints/best.pt") << "best_generator.pt holds the average alone";
  EXPECT_TRUE(all_equal(parameters_of(*dir_auto.generator), parameters_of(*best_ema.generator)));
  EXPECT_TRUE(all_equal(parameters_of(*dir_raw.generator), parameters_of(*best_raw.generator)));
  EXPECT_FALSE(all_equal(parameters_of(*best_ema.generator), parameters_of(*best_raw.generator)));
  // Asked for what a file does not hold: a usage error naming the file and --weights.
  try {
    checkpoint::load_generator(dir / "run/checkpoints/best_generator.pt", kCpu, {}, Weights::raw);
    ADD_FAILURE() << "--weights raw from a file that holds the average alone";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("best_generator.pt: --weights raw"), std::string::npos) << e.what();
  }
  auto plain = tiny_options(dir / "plain");
  plain.max_epochs = 1;
  { train::Trainer(plain, kCpu, comm).run(); }
  EXPECT_FALSE(checkpoint::load_generator(dir / "plain", kCpu).ema);
  for (const std::string file : {"best_generator.pt", "best.pt"})
    EXPECT_THROW(checkpoint::load_generator(dir / ("plain/checkpoints/" + file), kCpu, {}, Weights::ema), UsageError)
        << file;
}

TEST(GeneratorEma, ACycleGanAveragesBothGenerators) {
  TempDir dir;
  dist::LocalCommunicator comm;
  auto o = with_average(dir / "run");
  o.model = "cyclegan";
  o.model_parameters["pool-size"] = 0;
  o.max_epochs = 1;
  train::Trainer t(o, kCpu, comm);
  t.run();
  const auto networks = t.ema()->networks();
  ASSERT_EQ(networks.size(), 2u);
  EXPECT_EQ(networks[1].key, "generator_ba_ema");
  ASSERT_NE(t.ema()->reverse_translator(), nullptr);
  const auto back = checkpoint::load_generator(dir / "run/checkpoints/best.pt", kCpu, checkpoint::Direction::b_to_a);
  EXPECT_TRUE(back.ema);
  EXPECT_TRUE(all_equal(parameters_of(*back.generator), parameters_of(**t.ema()->reverse_translator())));
  EXPECT_THROW(train::Trainer(with_average(dir / "bad", 1.0), kCpu, comm), UsageError);
}
