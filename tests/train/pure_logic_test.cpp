// The pure pieces of the run loop: the epoch's loss sums, what a resume changed, the batch norm
// warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/nets/batch_norm_warning.hpp"
#include "pix2pix/train/epoch_sums.hpp"
#include "pix2pix/train/non_finite.hpp"
#include "pix2pix/train/option_changes.hpp"
#include "pix2pix/train/stop_protocol.hpp"

using namespace pix2pix::train;
using pix2pix::gan::StepLosses;

// See Note [no host reads in the step]: steps' losses are summed as tensors; global() reads them once,
// on top of what a resumed epoch had read.
TEST(EpochSums, SumsStepLossesUnreadUntilGlobal) {
  EpochSums sums = EpochSums::resumed({1.0, 2.0, 3.0, 0.0}, 1, 4, 4);
  for (int s = 0; s < 3; ++s) {
    StepLosses losses;
    losses.values = torch::tensor({0.5, 0.25 * s, 2.0, 0.125}, torch::kFloat64);
    losses.skipped = torch::tensor({s == 1 ? 1.0 : 0.0, 0.0}, torch::kFloat64);
    sums.add(losses);
  }
  EXPECT_EQ(sums.steps, 7);
  EXPECT_EQ(sums.losses[0], 1.0) << "add() must not read";
  EXPECT_EQ(sums.skipped, 1) << "add() must not read";
  EXPECT_EQ(sums.skipped_by_group(2), (std::vector<std::int64_t>{1, 0})) << "the steps added here, by group";
  pix2pix::dist::LocalCommunicator local;
  const EpochSums global = sums.global(local);
  EXPECT_EQ(global.steps, 7);
  EXPECT_EQ(global.losses, (std::vector<double>{2.5, 2.75, 9.0, 0.375}));
  EXPECT_EQ(global.skipped, 2);
  EXPECT_FALSE(global.unread.defined());
  // A model of another loss count cannot continue these sums.
  EXPECT_THROW(EpochSums::resumed({1.0, 2.0, 3.0}, 0, 1, 4), pix2pix::Error);
  StepLosses three;
  three.values = torch::tensor({0.5, 0.25, 2.0}, torch::kFloat64);
  EXPECT_THROW(sums.add(three), pix2pix::Error);
}

// See Note [options a resume may change]: what changed is listed in the order of the new options;
// only options that say how the job runs may change without --accept-changed-options.
TEST(OptionChanges, ListsEveryChangeAndMarksThoseThatChangeWhatIsLearned) {
  using pix2pix::train::OptionRole;
  const pix2pix::train::OptionRoles roles = {{"max-epochs", {OptionRole::how_the_job_runs, {}}},
                                             {"data", {OptionRole::how_the_job_runs, {}}},
                                             {"progress", {OptionRole::how_the_job_runs, {}}},
                                             {"run-dir", {OptionRole::this_invocation, {}}},
                                             {"ema-decay", {OptionRole::learned, "0"}}};
  const auto option_changes = [&](const std::string& before, const std::string& after) {
    return pix2pix::train::option_changes(before, after, roles);
  };
  const std::string trained =
      "# header\nlr = 0.0002\nmax-epochs = 200\ngan-mode = vanilla\ndata = /a/d.h5\n"
      "data-contents = 10 bytes, x\nseed = 1\n";
  EXPECT_TRUE(option_changes(trained, trained).empty());
  EXPECT_TRUE(option_changes("", trained).empty()) << "a checkpoint without options: nothing to compare";
  const std::string now =
      "lr = 0.001\nmax-epochs = 300\ngan-mode = vanilla\ndata = /b/d.h5\n"
      "data-contents = 10 bytes, y\nprogress = lines\nrun-dir = /elsewhere\n";
  const auto changes = option_changes(trained, now);
  ASSERT_EQ(changes.size(), 6u);
  EXPECT_EQ(changes[0].option, "--lr");
  EXPECT_TRUE(changes[0].changes_learning);
  EXPECT_EQ(changes[1].option, "--max-epochs");
  EXPECT_FALSE(changes[1].changes_learning);
  EXPECT_EQ(changes[2].option, "--data");  // a moved file: its contents decide
  EXPECT_FALSE(changes[2].changes_learning);
  EXPECT_EQ(changes[3].option, "--data-contents");
  EXPECT_TRUE(changes[3].changes_learning);
  EXPECT_EQ(changes[4].option, "--progress");
  EXPECT_EQ(changes[4].before, "(not set)");
  EXPECT_EQ(changes[5].option, "--seed");
  EXPECT_EQ(changes[5].now, "(not set)");
  EXPECT_TRUE(changes[5].changes_learning);
  EXPECT_EQ(pix2pix::train::describe_changes(changes, 2), "--lr 0.0002 -> 0.001, --max-epochs 200 -> 300 and 4 more");
  // An option added since the checkpoint was written compares as the value runs had before it.
  EXPECT_TRUE(option_changes(trained, trained + "ema-decay = 0\n").empty());
  const auto started = option_changes(trained, trained + "ema-decay = 0.999\n");
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].before, "(not set)");
  EXPECT_TRUE(started[0].changes_learning);
}

// See Note [options as the exact values parsed]: numbers are compared exactly; a checkpoint of an
// older version, which wrote six digits, still matches the value that rounds to them.
TEST(OptionChanges, NumbersCompareExactlyAndOlderSixDigitTextsStillMatch) {
  const auto option_changes = [](const std::string& before, const std::string& after) {
    return pix2pix::train::option_changes(before, after, {});
  };
  EXPECT_EQ(option_changes("lr = 0.0002\n", "lr = 0.00020000001\n").size(), 1u);
  EXPECT_TRUE(option_changes("lr = 0.000133333\n", "lr = 0.0001333333333\n").empty()) << "an older checkpoint";
  EXPECT_EQ(option_changes("lr = 0.000133333\n", "lr = 0.0001334\n").size(), 1u);
  EXPECT_EQ(option_changes("lr = 0.0001333333333\n", "lr = 0.000133333\n").size(), 1u) << "only old texts round";
  EXPECT_TRUE(option_changes("beta2 = 0.999\n", "beta2 = 0.999\n").empty());
}

// See Note [batch norm over too few images]: only batch norm over fewer than a few images, validated in
// eval mode, is warned of, and the warning names the ways out it is given.
TEST(BatchNormWarning, OnlyBatchNormOverFewImagesValidatedInEvalMode) {
  using pix2pix::nets::few_images_warning;
  using pix2pix::nets::Norm;
  const std::string warning = few_images_warning(Norm::batch, 1, true, "--sync-bn on or --norm instance");
  EXPECT_NE(warning.find("batch norm normalises over 1 image at a time"), std::string::npos) << warning;
  EXPECT_NE(warning.find("--sync-bn on or --norm instance avoid it"), std::string::npos) << warning;
  EXPECT_NE(few_images_warning(Norm::batch, 3, true, "x"), "");
  EXPECT_EQ(few_images_warning(Norm::batch, 4, true, "x"), "");
  EXPECT_EQ(few_images_warning(Norm::batch, 1, false, "x"), "") << "train-mode validation normalises as training";
  EXPECT_EQ(few_images_warning(Norm::instance, 1, true, "x"), "");
  EXPECT_EQ(few_images_warning(Norm::none, 1, true, "x"), "");
}

// See Note [non-finite values stop a run]: a non-finite loss mean ends the run unless the loss
// scaler skipped steps of the epoch; a non-finite watched validation value ends it either way.
TEST(NonFiniteValues, LossesAndValidationStopARunOnlyTheScalerMayExcuse) {
  using pix2pix::train::non_finite_problem;
  const double nan = std::nan(""), inf = INFINITY;
  const pix2pix::metrics::NamedValues finite = {{"loss_D", 0.5}, {"loss_G_l1", 30}};
  EXPECT_EQ(non_finite_problem(3, finite, false, false, "val PSNR"), "");
  const std::string lost = non_finite_problem(3, {{"loss_D", 0.5}, {"loss_G_l1", nan}}, false, false, "val PSNR");
  EXPECT_EQ(lost.rfind("epoch 3: loss_G_l1 is NaN (its mean over the epoch and all ranks)", 0), 0u) << lost;
  EXPECT_NE(non_finite_problem(0, {{"loss_D", inf}}, false, false, "val PSNR").find("loss_D is +inf"),
            std::string::npos);
  EXPECT_EQ(non_finite_problem(3, {{"loss_D", inf}}, true, false, "val PSNR"), "") << "fp16's skipped steps";
  const std::string val = non_finite_problem(4, finite, false, true, "val PSNR");
  EXPECT_EQ(val.rfind("epoch 4: the validation's val PSNR is not finite", 0), 0u) << val;
  EXPECT_NE(non_finite_problem(4, {{"loss_D", inf}}, true, true, "KID").find("the validation's KID"),
            std::string::npos);
}

// The column the epoch line and time to quality name (watched_name) is the one watched_value
// fills, for every --es-metric on a paired and an unpaired val split (FID on an unpaired split once
// was named by the content score).
TEST(WatchedValue, TheNamedColumnIsTheOneItsSmoothedValueGoesTo) {
  for (const EsMetric metric : {EsMetric::psnr, EsMetric::accuracy, EsMetric::fid, EsMetric::kid})
    for (const bool unpaired : {false, true}) {
      pix2pix::metrics::EpochMetrics m;
      m.content = "cycle";
      m.fid = m.kid = true;
      m.val_psnr_smoothed = m.val_content_psnr_smoothed = m.val_recognition_smoothed = m.val_fid_smoothed =
          m.val_kid_smoothed = 0;
      const ValidationResult v;
      *watched_value(metric, unpaired, v, m).smoothed = 42;
      const auto columns = m.columns();
      const auto values = m.values();
      const std::string name = "val_" + watched_name(metric, unpaired ? "cycle" : "") + "_smoothed";
      const auto at = std::find(columns.begin(), columns.end(), name);
      ASSERT_NE(at, columns.end()) << name;
      EXPECT_EQ(values.at(static_cast<std::size_t>(at - columns.begin())), "42")
          << to_string(metric) << (unpaired ? ", unpaired: " : ", paired: ") << name;
    }
}
