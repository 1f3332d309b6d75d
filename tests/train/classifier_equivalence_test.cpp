// Under mpirun -np 2: the recognition network trained on 2 ranks of batch B is the computation of
// one process of batch 2B (no shuffle, no augmentation, no norm: nothing per rank), step by step;
// every rank scores the val split to the same accuracy as one process, and a whole run on 2 ranks
// writes one classifier file that rank 0's network and the reported accuracy agree with.
#include <gtest/gtest.h>

#include <filesystem>

#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/mpi_communicator.hpp"
#include "pix2pix/train/classifier_trainer.hpp"
#include "support/fixtures.hpp"
#include "support/mpi_env.hpp"
#include "support/shared_dataset.hpp"

using namespace pix2pix;

namespace {

class DistributedClassifier : public fixtures::SharedDatasetTest {
 protected:
  DistributedClassifier() : SharedDatasetTest(300, /*labels=*/true) {}

  train::ClassifierTrainOptions options(std::int64_t batch, const std::string& out) const {
    train::ClassifierTrainOptions o;
    o.data = path_;
    o.out = root_ + "/" + out;
    o.loader.batch_size = batch;
    o.loader.shuffle = false;
    o.loader.augment.preprocess = data::Preprocess::none;
    o.loader.seed = 7;
    o.filters = 8;
    o.norm = nets::Norm::none;
    o.progress = ProgressStyle::none;
    return o;
  }
};

}  // namespace

TEST_F(DistributedClassifier, TwoRanksOfBatchBAreOneProcessOfBatch2B) {
  ASSERT_EQ(fixtures::g_mpi->world(), 2) << "run under mpirun -np 2";
  constexpr std::int64_t kBatch = 8, kSteps = 6;
  const torch::Device cpu(torch::kCPU);
  std::vector<double> reference_losses;
  std::vector<torch::Tensor> reference_weights;
  double reference_accuracy = 0;
  if (fixtures::g_mpi->rank() == 0) {
    dist::LocalCommunicator local;
    auto o = options(2 * kBatch, "single.pt");
    train::ClassifierTrainer single(o, cpu, local);
    data::LoaderOptions lo = o.loader;
    data::BatchLoader loader(data::PairedDataset::open(path_), lo, cpu);
    loader.start_epoch(0);
    for (int s = 0; s < kSteps; ++s) reference_losses.push_back(single.step(*loader.next()).item<double>());
    for (const auto& p : single.network()->parameters()) {
      reference_weights.push_back(p.detach().clone());
      EXPECT_FALSE(p.grad().defined()) << "See Note [gradients dropped after the update]";
    }
    reference_accuracy = single.accuracy(data::format::kVal);
  }
  fixtures::g_mpi->barrier();

  dist::MpiCommunicator mpi(60.0);
  dist::Communicator& comm = mpi;  // the host-scalar helpers live on the base
  auto o = options(kBatch, "parallel.pt");
  train::ClassifierTrainer parallel(o, cpu, comm);
  data::LoaderOptions lo = o.loader;
  lo.world = comm.world();
  lo.rank = comm.rank();
  data::BatchLoader loader(data::PairedDataset::open(path_), lo, cpu);
  loader.start_epoch(0);
  for (int s = 0; s < kSteps; ++s) {
    const double loss = comm.allreduce_mean(parallel.step(*loader.next()).item<double>());
    if (comm.rank() == 0) {
      EXPECT_NEAR(loss, reference_losses[static_cast<size_t>(s)], 1e-5) << "step " << s;
    }
  }
  const double accuracy = parallel.accuracy(data::format::kVal);  // every rank: the same sum
  EXPECT_DOUBLE_EQ(comm.allreduce_sum(accuracy), 2 * accuracy) << "ranks disagree on the accuracy";
  if (comm.rank() == 0) {
    EXPECT_DOUBLE_EQ(accuracy, reference_accuracy);
    size_t k = 0;
    for (const auto& p : parallel.network()->parameters()) {
      EXPECT_LT(fixtures::relative_error(p.detach(), reference_weights[k]), 1e-5) << "parameter " << k;
      ++k;
    }
  }
}

TEST_F(DistributedClassifier, ATwoRankRunWritesOneFileOfTheBestEpoch) {
  dist::MpiCommunicator mpi(60.0);
  dist::Communicator& comm = mpi;
  auto o = options(16, "run.pt");
  o.metrics_csv = root_ + "/run.csv";
  o.max_epochs = 2;
  o.loader.shuffle = true;
  o.loader.augment.preprocess = data::Preprocess::resize_and_crop;
  o.norm = nets::Norm::batch;
  train::ClassifierTrainer trainer(o, torch::kCPU, comm);
  const train::ClassifierRunResult result = trainer.run();
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_GE(result.best_epoch, 0);
  // Every rank took the same decisions from the same summed accuracy.
  EXPECT_DOUBLE_EQ(comm.allreduce_sum(result.best_accuracy), 2 * result.best_accuracy);
  EXPECT_DOUBLE_EQ(comm.allreduce_sum(static_cast<double>(result.last_epoch)), 2.0 * result.last_epoch);
  EXPECT_EQ(result.stop_reason, fixtures::broadcast_string(result.stop_reason)) << "rank " << comm.rank();
  comm.barrier();
  if (comm.rank() == 0) {
    const checkpoint::SavedClassifier saved = checkpoint::load_classifier(o.out, torch::kCPU);
    EXPECT_EQ(saved.record.epoch, result.best_epoch);
    EXPECT_DOUBLE_EQ(saved.record.val_accuracy, result.best_accuracy);
    EXPECT_TRUE(std::filesystem::exists(o.metrics_csv));
  }
}
