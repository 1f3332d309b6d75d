// evaluate's scoring: the validator's numbers, the same on any number of ranks, clear errors for
// a split the generator cannot take, and the statistics and CSV fields of its files.
#include <gtest/gtest.h>

#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/infer/evaluation.hpp"
#include "pix2pix/infer/evaluation_files.hpp"
#include "pix2pix/metrics/image_metrics.hpp"
#include "pix2pix/train/validator.hpp"
#include "support/cpu_device.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;

namespace {

using pix2pix::fixtures::kCpu;

// 72 train / 8 val Fashion-MNIST edges -> image pairs at 64x64 (grey), made once.
const data::PairedDataset& edges64() {
  static TempDir dir;
  static const auto dataset = [] {
    fixtures::make_fashion_edges_dataset(dir / "e.h5", 80, 64);
    return data::PairedDataset::open(dir / "e.h5");
  }();
  return *dataset;
}

// A 6-level U-Net (one dropout block) with weights that are not the initial ones' symmetry.
nets::Generator seeded_generator(std::uint64_t seed) {
  torch::manual_seed(seed);
  nets::Generator g = nets::make_generator(nets::GeneratorOptions{1, 1, 6, 8, nets::Norm::batch, true});
  nets::init_weights(*g);
  return g;
}

infer::EvaluationOptions options(nets::ValMode mode, std::int64_t batch_size) {
  infer::EvaluationOptions o;
  o.split = data::format::kVal;
  o.batch_size = batch_size;
  o.sample_count = 4;
  o.mode = mode;
  o.progress = ProgressStyle::none;
  return o;
}

std::string fit_error(const nets::GeneratorOptions& g, const std::string& split) {
  try {
    infer::check_generator_fits(g, edges64(), split);
  } catch (const Error& e) {
    return e.what();
  }
  return "fits";
}

}  // namespace

TEST(Evaluation, ScoresAreTheValidatorsAndItsSampleGrid) {
  const auto& dataset = edges64();
  const auto mean_b = metrics::mean_target_image(dataset, data::format::kTrain, 10000);
  auto g = seeded_generator(11);
  dist::LocalCommunicator local;
  const auto evaluation = infer::evaluate(g, dataset, mean_b, options(nets::ValMode::eval, 3), local);
  ASSERT_EQ(evaluation.scores.size(0), 8);
  train::Validator validator(dataset, 3, 4, kCpu, optim::Precision::fp32);
  auto fresh = seeded_generator(11);
  const auto v = validator.run(fresh, nullptr, nets::ValMode::eval);
  EXPECT_NEAR(evaluation.scores.select(1, infer::kPsnr).mean().item<double>(), v.psnr, 1e-9);
  EXPECT_NEAR(evaluation.scores.select(1, infer::kSsim).mean().item<double>(), v.ssim, 1e-9);
  EXPECT_NEAR(evaluation.scores.select(1, infer::kL1).mean().item<double>(), v.l1, 1e-7);
  EXPECT_NEAR(evaluation.scores.select(1, infer::kBaselinePsnr).mean().item<double>(), validator.baseline_psnr(mean_b),
              1e-9);
  ASSERT_TRUE(evaluation.sample_grid.defined());
  EXPECT_TRUE(torch::equal(evaluation.sample_grid, v.sample_grid));
}

// --direction BtoA: the generator translates B and is scored against A (a CycleGAN's G_B), with
// the mean A image as the baseline; the unpaired split and a classifier are refused by name.
TEST(Evaluation, BtoAScoresTheGeneratorOnBAgainstA) {
  const auto& dataset = edges64();
  const auto mean_a = metrics::mean_target_image(dataset, data::format::kTrain, 10000, data::Domain::A);
  auto g = seeded_generator(7);
  auto o = options(nets::ValMode::eval, 3);
  o.b_to_a = true;
  dist::LocalCommunicator local;
  const auto evaluation = infer::evaluate(g, dataset, mean_a, o, local);
  const auto pairs = dataset.read(data::format::kVal, {0, 1, 2, 3, 4, 5, 6, 7});
  g->eval();
  const auto direct = metrics::score_pairs(g, pairs.b, pairs.a, kCpu, optim::Precision::fp32);
  EXPECT_TRUE(torch::allclose(evaluation.scores.select(1, infer::kPsnr), direct.psnr, 0, 1e-9));
  const auto forward = infer::evaluate(g, dataset, mean_a, options(nets::ValMode::eval, 3), local);
  EXPECT_FALSE(torch::allclose(forward.scores.select(1, infer::kPsnr), direct.psnr)) << "A to B scores differ";
  // The baseline predicts the mean A image against each A.
  const auto real_a = pairs.a.permute({0, 3, 1, 2}).to(torch::kFloat32);
  const auto baseline = metrics::psnr_per_image(mean_a.round().unsqueeze(0).expand_as(real_a), real_a);
  EXPECT_TRUE(torch::allclose(evaluation.scores.select(1, infer::kBaselinePsnr), baseline.to(torch::kFloat64)));
}

TEST(Evaluation, TrainModeIsRepeatableAndDiffersFromEval) {
  const auto& dataset = edges64();
  const auto mean_b = metrics::mean_target_image(dataset, data::format::kTrain, 10000);
  dist::LocalCommunicator local;
  auto g = seeded_generator(11);
  const auto first = infer::evaluate(g, dataset, mean_b, options(nets::ValMode::train, 3), local).scores;
  const auto again = infer::evaluate(g, dataset, mean_b, options(nets::ValMode::train, 3), local).scores;
  const auto eval = infer::evaluate(g, dataset, mean_b, options(nets::ValMode::eval, 3), local).scores;
  EXPECT_TRUE(torch::equal(first, again)) << "train mode: dropout is seeded per batch";
  EXPECT_FALSE(torch::equal(first, eval));
}

TEST(Evaluation, AnyNumberOfRanksGivesWhatOneProcessGives) {
  // Each rank's share, one after the other (HDF5 is not thread-safe: real ranks are processes,
  // tests/cli/infer_ranks_test.sh runs them under mpirun): every row scored by exactly one rank,
  // and the sum of the shares is what one process scores, in train mode (dropout) too.
  const auto& dataset = edges64();
  const auto mean_b = metrics::mean_target_image(dataset, data::format::kTrain, 10000);
  dist::LocalCommunicator local;
  for (const auto mode : {nets::ValMode::eval, nets::ValMode::train}) {
    auto g = seeded_generator(4);
    const auto one = infer::evaluate(g, dataset, mean_b, options(mode, 3), local);
    for (int world : {2, 3, 5}) {
      torch::Tensor sum = torch::zeros_like(one.scores), writers = torch::zeros({one.scores.size(0)});
      for (int rank = 0; rank < world; ++rank) {
        auto mine = seeded_generator(4);
        const auto share = infer::evaluate_share(mine, dataset, mean_b, options(mode, 3), rank, world);
        sum += share.scores;
        writers += share.scores.ne(0).any(1).to(torch::kFloat);
        EXPECT_EQ(share.sample_grid.defined(), rank == 0);
        if (rank == 0) {
          EXPECT_TRUE(torch::equal(share.sample_grid, one.sample_grid)) << world << " ranks";
        }
      }
      EXPECT_TRUE(torch::equal(sum, one.scores)) << world << " ranks, " << to_string(mode);
      EXPECT_TRUE(torch::equal(writers, torch::ones_like(writers))) << "a row scored by no rank or by two";
    }
  }
}

TEST(Evaluation, ASplitTheGeneratorCannotTakeIsNamed) {
  EXPECT_EQ(fit_error({1, 1, 6, 8}, "val"), "fits");
  EXPECT_NE(fit_error({1, 1, 6, 8}, "test").find("has no test split (it has train, val)"), std::string::npos);
  EXPECT_NE(fit_error({3, 1, 6, 8}, "val").find("1 -> 1 channels; the generator takes 3 -> 1"), std::string::npos);
  EXPECT_NE(fit_error({1, 1, 7, 8}, "val").find("64x64, not a multiple of 128 that the unet_128 generator needs"),
            std::string::npos);
}

TEST(Evaluation, StatisticsAndCsvFields) {
  const auto s = infer::summarise(torch::tensor({4.0, 1.0, 3.0, 2.0}, torch::kFloat64));
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_DOUBLE_EQ(infer::summarise(torch::tensor({5.0, -1.0, 7.0}, torch::kFloat64)).median, 5.0);
  EXPECT_THROW(infer::summarise(torch::zeros({0}, torch::kFloat64)), Error);

  EXPECT_EQ(infer::csv_field("shoe_12.png"), "shoe_12.png");
  EXPECT_EQ(infer::csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(infer::csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(infer::csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(Evaluation, ItsFilesAreClaimedNotOverwritten) {
  TempDir dir;
  const std::string out = dir / "eval";
  infer::claim_evaluation_dir(out, false, {});  // creates it
  infer::Evaluation e;
  e.split = "val";
  // psnr, ssim, l1, baseline, recognised, real_recognised
  e.scores = torch::tensor({30.0, 0.9, 0.1, 20.0, 1.0, 1.0, 40.0, 0.8, 0.2, 21.0, 0.0, 1.0}, torch::kFloat64)
                 .reshape({2, infer::kScoreColumns});
  infer::write_evaluation_files(out, e, {"a,1", ""},
                                infer::EvaluationFacts{"c.pt", 3, "in=1", "d.h5", "eval", "fp32", 2, ""});
  EXPECT_EQ(fixtures::read_file(dir / "eval/evaluation.csv"),
            "index,name,psnr,ssim,l1\n0,\"a,1\",30,0.9,0.1\n1,,40,0.8,0.2\n");
  const std::string json = fixtures::read_file(dir / "eval/evaluation.json");
  EXPECT_NE(json.find("\"psnr\": {\"mean\": 35, \"std\": 5, \"median\": 35, \"min\": 30, \"max\": 40}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"baseline_psnr_mean_image\": 20.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"checkpoint_epoch\": 3"), std::string::npos) << json;
  EXPECT_FALSE(std::filesystem::exists(dir / "eval/samples.png")) << "no grid, no image";
  EXPECT_EQ(json.find("recognition"), std::string::npos) << "no classifier, no recognition: " << json;
  // With a classifier: whether each G(A) and B was recognised, and both accuracies.
  infer::write_evaluation_files(out, e, {"a,1", ""},
                                infer::EvaluationFacts{"c.pt", 3, "in=1", "d.h5", "eval", "fp32", 2, "r.pt"});
  EXPECT_EQ(fixtures::read_file(dir / "eval/evaluation.csv"),
            "index,name,psnr,ssim,l1,recognised,real_recognised\n0,\"a,1\",30,0.9,0.1,1,1\n1,,40,0.8,0.2,0,1\n");
  EXPECT_NE(fixtures::read_file(dir / "eval/evaluation.json")
                .find("\"recognition\": {\"classifier\": \"r.pt\", \"accuracy\": 0.5, \"real_accuracy\": 1}"),
            std::string::npos);
  try {
    infer::claim_evaluation_dir(out, false, {});
    ADD_FAILURE() << "an existing evaluation.csv was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("evaluation.csv exists; use --overwrite"), std::string::npos) << e.what();
  }
  infer::claim_evaluation_dir(out, true, {});
}

// See Note [non-finite values stop a run]: a generator whose output is NaN gives no evaluation
// (it wrote "PSNR nan" and exit 0); the error names the image and the score.
TEST(Evaluation, AGeneratorOfNaNsIsAnErrorNamingTheImage) {
  const auto& dataset = edges64();
  const auto mean_b = metrics::mean_target_image(dataset, data::format::kTrain, 10000);
  auto g = seeded_generator(11);
  {
    torch::NoGradGuard no_grad;
    g->parameters().back().fill_(std::nan(""));
  }
  dist::LocalCommunicator local;
  const std::string error =
      fixtures::error_of([&] { infer::evaluate(g, dataset, mean_b, options(nets::ValMode::eval, 3), local); });
  EXPECT_NE(error.find("evaluate: image 0 of /val: its PSNR is NaN: the generator's output is not finite"),
            std::string::npos)
      << error;
}
