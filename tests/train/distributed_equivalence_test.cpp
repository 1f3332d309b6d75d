// Under mpirun -np 2: data-parallel training is the same computation as one process with the
// global batch (shuffle, augmentation and dropout off, instance norm, biases held at zero), step
// by step; the stop decision and the run directory come from rank 0 only. The 2xB = 1x2B tests
// run on the test device (support/mpi_devices.hpp): CPUs over MPI in CI, GPUs over NCCL in
// scripts/gpu-smoke.sh.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/data/prepare.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/dist/mpi_communicator.hpp"
#include "pix2pix/train/trainer.hpp"
#include "support/fixtures.hpp"
#include "support/model_access.hpp"
#include "support/mpi_devices.hpp"
#include "support/mpi_env.hpp"
#include "support/shared_dataset.hpp"

using namespace pix2pix;

namespace {

class DistributedTraining : public fixtures::SharedDatasetTest {
 protected:
  DistributedTraining() : SharedDatasetTest(120, /*labels=*/true) {}

  // Two ranks of batch B against one process of batch 2B, to `tolerance` (relative); with a
  // bf16 wire, more loosely (see inside) and that the rounding happened.
  void expect_two_ranks_equal_one_process(bool overlap, torch::ScalarType wire = torch::kFloat32,
                                          double tolerance = 1e-5);
  // N ranks of batch B with --norm batch against one process of batch NB, --sync-bn on and off;
  // `fused`: each side with --fused-kernels on (NHWC activations).
  void expect_batch_norm_over_ranks_equal_one_process(optim::Precision precision, bool fused = false);

  train::TrainOptions options(std::int64_t batch, const std::string& run) const {
    train::TrainOptions o;
    o.data = unpaired_path_.empty() ? path_ : unpaired_path_;
    o.loader.batch_size = batch;
    o.loader.shuffle = false;
    o.loader.augment.preprocess = data::Preprocess::none;
    o.loader.seed = 11;
    o.dropout = false;
    o.norm = nets::Norm::instance;
    o.ngf = 8;
    o.ndf = 8;
    o.lr.lr = 1e-3;
    o.run_dir = root_ + "/" + run;
    o.effective_config = "data = " + path_ + "\n";
    o.aux_classifier = aux_classifier_;
    o.lambda_aux = 2.0;
    if (unpaired_model_ != "pix2pix") {
      // The deterministic parts of CycleGAN (and onesided): no pool (each rank's would hold its own images).
      o.model = unpaired_model_;
      o.gan_mode = gan::GanMode::lsgan;
      o.model_parameters["pool-size"] = 0;
      // U-Net generators: with ResNet ones (2 blocks, instance norm) the weights are 5e-8 apart
      // after one step (the average is right), then part about 15-fold a step undamped (4e-4
      // after 5), and damped still 5.3e-4 on the paired file (3.6e-7 on the unpaired one; AVX2,
      // LibTorch 1.13). Pix2Pix with the same ResNet G does not show it (docs/distributed.md).
      o.net_g = nets::GeneratorArch::unet;
      o.lr.lr = 3e-5;  // and Adam's eps 1e-4: See Note [damped Adam in the CycleGAN comparison]
    }
    return o;
  }

  // Rank 0 writes an untrained recognition network for the 32x32 grey images and 10 classes,
  // and every run of options() uses it from then on.
  void use_aux_classifier() {
    if (fixtures::g_mpi->rank() == 0) {
      torch::manual_seed(5);
      nets::Classifier net(nets::ClassifierOptions{1, 32, 32, 10, 4, 0, nets::Norm::batch});
      net->eval();
      checkpoint::save_classifier(root_ + "/classifier.pt", *net, {0, 0.1, path_});
    }
    fixtures::g_mpi->barrier();
    aux_classifier_ = root_ + "/classifier.pt";
  }

  // Rank 0 writes an unpaired file (40 A and 28 B images of 32x32 patterns; 4 and 4 in val), and
  // every run of options() trains on it from then on. 28 B images over 5 global batches of 8: the B
  // shards wrap around within the epoch, on one process and on two ranks alike.
  // `paired_val`: its val split holds 4 pairs instead (onesided validates G(A) against B).
  void use_unpaired_file() {
    unpaired_path_ = root_ + "/unpaired.h5";
    if (fixtures::g_mpi->rank() == 0) fixtures::make_unpaired_pattern_dataset(unpaired_path_, 40, 28, 4, 4, 32, 1, 1);
    fixtures::g_mpi->barrier();
  }

  std::string aux_classifier_;
  std::string unpaired_path_;
  std::string unpaired_model_ = "pix2pix";  // cyclegan or onesided: those models instead
};

// Note [damped Adam in the CycleGAN comparison]: Adam divides each gradient by its own running
// size plus eps (1e-8), so an element whose true gradient is ~0 moves by a full learning rate in
// the direction of its rounding noise, as See Note [biases held at zero] says of the biases; and the
// next step's gradients depend on those weights. CycleGAN's step (each U-Net through the other,
// instance norm down to a 2x2 map) turns that into chaos at the test's lr 1e-3: on an AVX2 CPU
// with LibTorch 1.13 G_A's innermost up-convolution was 8.9e-6 apart after one step, every G_A
// weight 1e-3 after two, 2.4e-2 after five (an AVX-512 CPU happened to round both runs alike:
// 3e-6). Neither a smaller lr nor a larger eps alone tamed it on both files (1.3e-6 to 2.7e-2,
// by setting); lr 1e-4 with eps 1e-4 did: 5e-8 (paired file) and 8.4e-8 (unpaired) after five
// steps. Weights still move ~2 % in five steps, and a discriminator group left unsynchronised
// parts the runs far beyond the tolerance (checked). On another AVX2 CPU (CI-2c, 2026-11-25) with
// LibTorch 2.6 the unpaired file still parted at that setting: 2.3e-7 for three steps, then
// 1.7e-5 and 2.9e-4 (x17 a step; 1.13 on the same CPU: 8.4e-8). lr 3e-5 with eps 1e-4 gave
// 2.9e-8, 7.1e-8 and 2.2e-8 there (CycleGAN paired, unpaired, onesided), and the weights still
// move up to 0.6 % in five steps, 60 times the tolerance (the test checks 10 times). So CycleGAN
// comparisons run that way.
void damp_adam_noise(train::Trainer& trainer) {
  for (optim::UpdateGroup* group : trainer.model().update_groups())
    for (auto& parameters : group->optimizer().param_groups())
      static_cast<torch::optim::AdamOptions&>(parameters.options()).eps(1e-4);
}

// Every parameter of every network of a trainer's model, in networks() order.
std::vector<torch::Tensor> all_parameters(train::Trainer& trainer) {
  std::vector<torch::Tensor> out;
  for (const auto& network : trainer.model().networks())
    for (const auto& p : network.module->parameters()) out.push_back(p);
  return out;
}

// Note [biases held at zero]: a conv bias followed by InstanceNorm cannot change the output in exact
// arithmetic, so its true gradient is zero and the computed one is rounding noise (~1e-9) whose sign
// depends on the order of summation; Adam divides by the gradient's own size and turns that noise
// into random steps of a full learning rate. In floating point those steps are not harmless:
// measured on LibTorch 2.6, whose CPU kernels sum batches of 4 and of 8 in different orders, the
// weight gradients of the two runs parted by 1-8 % at step 3 (LibTorch 1.13 happened to round both
// alike). So both runs set every bias back to its initial zero after each step: the biases'
// gradients are still computed, bucketed and all-reduced, but the trajectories compared are decided
// by the averaged weight gradients alone, which are not chaotic (LibTorch 2.6: 7e-7 after 5 steps).
void hold_biases_at_zero(train::Trainer& trainer) {
  torch::NoGradGuard no_grad;
  for (const auto& network : trainer.model().networks())
    for (auto& p : network.module->named_parameters())
      if (p.key().size() >= 4 && p.key().compare(p.key().size() - 4, 4, "bias") == 0) p.value().zero_();
}

}  // namespace

void DistributedTraining::expect_two_ranks_equal_one_process(bool overlap, torch::ScalarType wire, double tolerance) {
  const int world = fixtures::g_mpi->world();
  ASSERT_EQ(world, 2) << "run under mpirun -np 2";
  constexpr std::int64_t kBatch = 4, kSteps = 5;
  const torch::Device device = fixtures::test_device();
  // Note [GPU tolerance]: with TF32 off and cuDNN's deterministic algorithms, a GPU sums a batch of
  // 8 and two of 4 in different orders as a CPU does; its kernels are other kernels, so it gets
  // ten times the CPU's margin, still far below what a wrong average or a missed bucket gives
  // (1e-2 and more). Not yet calibrated on a GPU: gpu-smoke's report prints the measured figure.
  fixtures::make_gpu_arithmetic_exact();
  if (device.is_cuda() && wire == torch::kFloat32) tolerance *= 10;

  std::vector<std::vector<double>> reference_losses;
  std::vector<torch::Tensor> reference_weights, initial_weights;
  if (fixtures::g_mpi->rank() == 0) {
    dist::LocalCommunicator local;
    auto o = options(kBatch * world, "single");
    train::Trainer single(o, device, local);
    if (unpaired_model_ != "pix2pix") damp_adam_noise(single);
    data::BatchLoader loader(data::PairedDataset::open(o.data), o.loader, device);
    loader.start_epoch(0);
    for (const auto& p : all_parameters(single)) initial_weights.push_back(p.detach().clone());
    for (int s = 0; s < kSteps; ++s) {
      const auto l = single.step(*loader.next());
      hold_biases_at_zero(single);
      reference_losses.push_back(l.host());
    }
    for (const auto& p : all_parameters(single)) reference_weights.push_back(p.detach().clone());
  }
  fixtures::g_mpi->barrier();

  const auto communicator = fixtures::make_test_communicator(device);
  dist::Communicator& comm = *communicator;
  auto o = options(kBatch, overlap ? "distributed-overlap" : "distributed");
  // See Note [overlapped all-reduce]: with small buckets, most of them start during backward.
  o.overlap_grad_sync = overlap;
  o.grad_wire_dtype = wire;
  o.bucket_bytes = overlap ? 64 << 10 : o.bucket_bytes;
  train::Trainer parallel(o, device, comm);
  if (unpaired_model_ != "pix2pix") damp_adam_noise(parallel);
  auto lo = o.loader;
  lo.world = world;
  lo.rank = comm.rank();
  data::BatchLoader loader(data::PairedDataset::open(o.data), lo, device);
  loader.start_epoch(0);
  for (int s = 0; s < kSteps; ++s) {
    const auto l = parallel.step(*loader.next());
    hold_biases_at_zero(parallel);
    // See Note [recognition loss over the global batch]: loss_G_aux too, when there is a classifier.
    const auto& names = parallel.model().loss_names();
    const std::vector<double> local = l.host();
    ASSERT_EQ(local.size(), names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      const double mean = comm.allreduce_mean(local[i]);
      if (comm.rank() == 0) {
        EXPECT_NEAR(mean, reference_losses[s][i], tolerance * std::abs(reference_losses[s][i]))
            << names[i] << ", step " << s;
        if (names[i] == "loss_G_aux") {
          EXPECT_GT(mean, 1.0) << "the recognition loss (2 x ~ln 10) is not in the objective";
        }
      }
    }
    if (unpaired_model_ == "pix2pix") {
      EXPECT_EQ(names.size(), aux_classifier_.empty() ? 3u : 4u) << "loss_G_aux only with a classifier";
    }
  }
  EXPECT_NO_THROW(parallel.verify_replicas());  // every rank applied the same averaged gradients
  if (comm.rank() == 0) {
    std::vector<torch::Tensor> weights;
    for (const auto& p : all_parameters(parallel)) weights.push_back(p.detach());
    ASSERT_EQ(weights.size(), reference_weights.size());
    // See Note [bf16 gradients on the wire]: where the two ranks' gradients nearly cancel, bf16's
    // rounding of each is large next to their mean, and Adam's normalisation turns that into
    // full-size steps; so a bf16 run is compared by how each tensor moved (its update), which must
    // follow the fp32 update to within half of it, while its losses track to `tolerance`.
    const bool bf16 = wire == torch::kBFloat16;
    double largest = 0, moved = 0;  // moved: how far the reference's weights went, to compare with
    for (size_t i = 0; i < weights.size(); ++i) {
      const double error = fixtures::relative_error(weights[i], reference_weights[i]);
      largest = std::max(largest, error);
      moved = std::max(moved, fixtures::relative_error(reference_weights[i], initial_weights[i]));
      if (bf16)
        EXPECT_LE(fixtures::relative_error(weights[i] - initial_weights[i], reference_weights[i] - initial_weights[i]),
                  0.5)
            << "update of parameter " << i << " after " << kSteps << " steps";
      else
        EXPECT_LE(error, tolerance) << "parameter " << i << " after " << kSteps << " steps";
    }
    if (bf16) {
      EXPECT_GT(largest, 1e-5) << "gradients were not rounded to bf16";
    }
    // The steps must move the weights well beyond the tolerance, or the comparison proves nothing.
    if (!bf16) {
      EXPECT_GT(moved, 10 * tolerance) << "the weights hardly moved";
    }
    std::printf(
        "2xB = 1x2B on %s over %s, %s gradients%s: largest relative weight difference %.2e after %lld steps "
        "(tolerance %.0e; the weights moved up to %.1e)\n",
        device.str().c_str(), comm.name().c_str(), bf16 ? "bf16" : "fp32", overlap ? ", overlapped" : "", largest,
        static_cast<long long>(kSteps), bf16 ? 0.5 : tolerance, moved);
    // Outputs of both networks on the val split, with the reference networks' weights loaded.
    dist::LocalCommunicator local;
    train::Trainer reference(options(kBatch * world, "reference"), device, local);
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& p : all_parameters(reference)) p.copy_(reference_weights[k++]);
    const auto val = data::PairedDataset::open(o.data);
    const auto a = data::to_model_input(val->read_images("val", data::Domain::A, {0, 1, 2, 3})).to(device);
    const auto b = data::to_model_input(val->read_images("val", data::Domain::B, {0, 1, 2, 3})).to(device);
    for (auto* t : {&parallel, &reference})
      for (const auto& network : t->model().networks()) network.module->eval();
    const auto fake = parallel.model().translator()->forward(a), fake_ref = reference.model().translator()->forward(a);
    const double output_tolerance = bf16 ? 0.2 : tolerance;
    EXPECT_LE(fixtures::relative_error(fake, fake_ref), output_tolerance) << "generator outputs";
    if (unpaired_model_ == "pix2pix") {
      EXPECT_LE(
          fixtures::relative_error(fixtures::pix2pix_model(parallel).discriminator()->forward(torch::cat({a, b}, 1)),
                                   fixtures::pix2pix_model(reference).discriminator()->forward(torch::cat({a, b}, 1))),
          output_tolerance)
          << "discriminator outputs";
    }
    EXPECT_GT(fixtures::relative_error(fake, torch::zeros_like(fake)), 0.0);
  }
}

// See Note [synchronised batch norm]: with --norm batch, N ranks of batch B train what one process of
// batch NB trains only when batch norm normalises over the global batch (--sync-bn on); with each
// rank's own batch (off) they part at once. At any world (mpi.np2.data, mpi.np3.sync_bn,
// mpi.np4.sync_bn), with 2 images a rank and with 1 (where a rank's own batch norm is instance norm).
// In fp32 to 1e-3 (the issue asks 2e-3; measured 2e-7 to 6e-5), off parting by 1e-2 at least.
// In bf16 (autocast) a synchronised batch norm and a single process's normalise the same statistics
// but round their bf16 outputs after other float operations, so one bf16 ulp (2^-8 relative) parts
// some activations at every step and Adam's normalised steps carry it into the weights: measured on
// CPUs (LibTorch 1.13 and 2.6) 3.1e-2 to 6.0e-2 synchronised after the 4 steps against 0.41 to 0.93
// off, at 2 to 4 ranks; so bf16's bar is 0.1, and off must part by 5 times what on does.
void DistributedTraining::expect_batch_norm_over_ranks_equal_one_process(optim::Precision precision, bool fused) {
  const bool bf16 = precision == optim::Precision::bf16;
  const int world = fixtures::g_mpi->world();
  constexpr std::int64_t kSteps = 4;
  const torch::Device device = fixtures::test_device();
  fixtures::make_gpu_arithmetic_exact();
  const auto batch_norm = [this, precision, fused](std::int64_t batch, const std::string& run, nets::SyncBn sync) {
    auto o = options(batch, run);
    o.norm = nets::Norm::batch;
    o.sync_bn = sync;
    o.precision = precision;
    if (fused) {
      o.fused_kernels = true;
      o.channels_last = true;
    }
    return o;
  };
  // Rank `r`'s run of `steps` steps: its losses (averaged over ranks) and the weights at the end.
  const auto train = [&](const train::TrainOptions& o, dist::Communicator& comm) {
    train::Trainer trainer(o, device, comm);
    EXPECT_EQ(trainer.fused_kernels(), fused);
    auto lo = o.loader;
    lo.world = comm.world();
    lo.rank = comm.rank();
    data::BatchLoader loader(data::PairedDataset::open(o.data), lo, device);
    loader.start_epoch(0);
    std::vector<double> losses;
    for (int s = 0; s < kSteps; ++s) {
      const auto l = trainer.step(*loader.next()).host();
      hold_biases_at_zero(trainer);
      for (const double v : l) losses.push_back(comm.allreduce_mean(v));
    }
    EXPECT_NO_THROW(trainer.verify_replicas());
    std::vector<torch::Tensor> weights;
    for (const auto& p : all_parameters(trainer)) weights.push_back(p.detach().clone());
    for (const auto& network : trainer.model().networks())
      for (const auto& b : network.module->named_buffers())
        if (b.key().find("running_") != std::string::npos) weights.push_back(b.value().detach().clone());
    return std::make_pair(losses, weights);
  };
  const auto largest_difference = [](const auto& a, const auto& b) {
    double largest = 0;
    for (std::size_t i = 0; i < a.first.size(); ++i)
      largest = std::max(largest, std::abs(a.first[i] - b.first[i]) / std::max(std::abs(b.first[i]), 1e-12));
    for (std::size_t i = 0; i < a.second.size(); ++i)
      largest = std::max(largest, fixtures::relative_error(a.second[i], b.second[i]));
    return largest;
  };
  for (const std::int64_t batch : {2, 1}) {
    std::pair<std::vector<double>, std::vector<torch::Tensor>> reference;
    if (fixtures::g_mpi->rank() == 0) {
      dist::LocalCommunicator local;
      reference = train(batch_norm(batch * world, "bn-single", nets::SyncBn::off), local);
    }
    fixtures::g_mpi->barrier();
    const auto communicator = fixtures::make_test_communicator(device);
    const auto on = train(batch_norm(batch, "bn-on", nets::SyncBn::on), *communicator);
    const auto off = train(batch_norm(batch, "bn-off", nets::SyncBn::off), *communicator);
    if (fixtures::g_mpi->rank() != 0) continue;
    ASSERT_EQ(on.second.size(), reference.second.size());
    const double synced = largest_difference(on, reference), own = largest_difference(off, reference);
    std::printf(
        "%d ranks x %lld = 1 x %lld with batch norm (%s%s): largest relative difference %.2e synchronised, "
        "%.2e per rank (%lld steps, running statistics included)\n",
        world, static_cast<long long>(batch), static_cast<long long>(batch * world), bf16 ? "bf16" : "fp32",
        fused ? ", fused kernels" : "", synced, own, static_cast<long long>(kSteps));
    EXPECT_LE(synced, bf16 ? 0.1 : 1e-3) << world << " x " << batch;
    if (bf16) {
      EXPECT_GT(synced, 1e-5) << "no bf16 rounding parted the runs: did autocast run?";
    }
    EXPECT_GE(own, bf16 ? 5 * synced : 1e-2)
        << "--sync-bn off should train another model (" << world << " x " << batch << ")";
  }
}

TEST_F(DistributedTraining, BatchNormOverRanksEqualsOneProcessOfTheGlobalBatch) {
  expect_batch_norm_over_ranks_equal_one_process(optim::Precision::fp32);
}

TEST_F(DistributedTraining, BatchNormOverRanksEqualsOneProcessOfTheGlobalBatchInBf16) {
  expect_batch_norm_over_ranks_equal_one_process(optim::Precision::bf16);
}

// The same through the fused kernels (See Note [fused batch norm and LeakyReLU]): --sync-bn's layers
// and their LeakyReLU over the communicator's ranks, a rank's own batch norm with --sync-bn off. On
// a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it over NCCL at worlds 2 and 4).
TEST_F(DistributedTraining, BatchNormOverRanksEqualsOneProcessOfTheGlobalBatchThroughTheFusedKernels) {
  const std::string unavailable = dist::fused_kernels_unavailable(fixtures::test_device());
  if (!unavailable.empty()) GTEST_SKIP() << unavailable;
  for (const auto precision : {optim::Precision::fp32, optim::Precision::bf16}) {
    SCOPED_TRACE(precision == optim::Precision::bf16 ? "bf16" : "fp32");
    expect_batch_norm_over_ranks_equal_one_process(precision, /*fused=*/true);
  }
}

TEST_F(DistributedTraining, TwoRanksWithBatchBEqualOneProcessWithBatch2B) {
  expect_two_ranks_equal_one_process(/*overlap=*/false);
}

// CycleGAN's four networks and two update groups (pool off): the same equivalence, to 1e-4, with
// Adam damped (See Note [damped Adam in the CycleGAN comparison]): 5e-8 after 5 steps on an AVX2 CPU
// with LibTorch 1.13; the discriminators left unsynchronised: 1.0e-2.
TEST_F(DistributedTraining, CycleGanOnTwoRanksOfBatchBEqualsOneProcessOf2B) {
  unpaired_model_ = "cyclegan";
  expect_two_ranks_equal_one_process(/*overlap=*/false, torch::kFloat32, /*tolerance=*/1e-4);
}

// Unpaired data: A and B sharded apart (B's shards wrap around), the global batches those of one
// process: 8.4e-8 after 5 steps (the discriminators unsynchronised: 1.2e-2).
TEST_F(DistributedTraining, CycleGanOnAnUnpairedFileOnTwoRanksOfBatchBEqualsOneProcessOf2B) {
  unpaired_model_ = "cyclegan";
  use_unpaired_file();
  expect_two_ranks_equal_one_process(/*overlap=*/false, torch::kFloat32, /*tolerance=*/1e-4);
}

// --model onesided (G and D, the deviation loss) on the unpaired file (its unpaired val split
// scored by the deviation PSNR), damped as CycleGAN is: 4.8e-8.
TEST_F(DistributedTraining, OneSidedOnAnUnpairedFileOnTwoRanksOfBatchBEqualsOneProcessOf2B) {
  unpaired_model_ = "onesided";
  use_unpaired_file();
  expect_two_ranks_equal_one_process(/*overlap=*/false, torch::kFloat32, /*tolerance=*/1e-4);
}

TEST_F(DistributedTraining, TwoRanksWithOverlappedAllReducesEqualOneProcessWithBatch2B) {
  expect_two_ranks_equal_one_process(/*overlap=*/true);
}

// The auxiliary recognition loss (a frozen classifier on G(A)) keeps the equivalence: each rank's
// mean over its B images, averaged over the ranks, is the paper's sum over the global batch / 2B.
TEST_F(DistributedTraining, TheRecognitionLossKeepsTwoRanksOfBatchBEqualToOneProcessOf2B) {
  use_aux_classifier();
  expect_two_ranks_equal_one_process(/*overlap=*/false);
}

// See Note [bf16 gradients on the wire]: the same training to bf16's precision, not to float
// rounding; verify_replicas after the steps requires every rank to hold the same weights.
TEST_F(DistributedTraining, TwoRanksWithBf16GradientsTrackOneProcessToBf16Precision) {
  expect_two_ranks_equal_one_process(/*overlap=*/true, torch::kBFloat16, /*tolerance=*/2e-2);
}

TEST_F(DistributedTraining, EveryRankStopsAtTheSameEpochAndOnlyRankZeroWrites) {
  dist::MpiCommunicator comm(60.0);
  auto o = options(4, "run");
  o.loader.shuffle = true;
  o.lr.lr = 1e-30;  // a flat PSNR: early stopping must end the run at best + patience
  o.early_stopping = {1, 2, 0.0, true};
  o.max_epochs = 20;
  train::Trainer trainer(o, torch::Device(torch::kCPU), comm);
  const auto result = trainer.run();
  // Every rank agrees on where the run ended.
  auto last =
      torch::tensor({static_cast<double>(result.last_epoch), -static_cast<double>(result.last_epoch)}, torch::kFloat64);
  comm.allreduce_max(last);
  EXPECT_EQ(last[0].item<double>(), -last[1].item<double>()) << "ranks stopped at different epochs";
  EXPECT_EQ(result.last_epoch, 2);
  EXPECT_NE(result.stop_reason.find("early stopping"), std::string::npos) << result.stop_reason;
  // See Note [one stop protocol]: every rank reports rank 0's reason, not a stand-in for it.
  EXPECT_EQ(result.stop_reason, fixtures::broadcast_string(result.stop_reason)) << "rank " << comm.rank();
  comm.barrier();
  if (comm.rank() == 0) {
    EXPECT_TRUE(std::filesystem::exists(root_ + "/run/summary.json"));
    EXPECT_TRUE(std::filesystem::exists(root_ + "/run/checkpoints/best.pt"));
  }
}

TEST_F(DistributedTraining, ReplicasStayIdenticalAndDivergenceIsReported) {
  dist::MpiCommunicator comm(60.0);
  auto o = options(4, "replicas");
  o.loader.shuffle = true;
  o.loader.augment.preprocess = data::Preprocess::resize_and_crop;
  o.dropout = true;
  o.norm = nets::Norm::batch;
  o.check_replicas_every = 1;  // a checksum all-reduce after every step: throws on any difference
  o.max_epochs = 1;
  train::Trainer trainer(o, torch::Device(torch::kCPU), comm);
  EXPECT_NO_THROW(trainer.run());
  // Disturb one weight on rank 1 only: the check must see it and name the parameter and the rank.
  if (comm.rank() == 1) {
    torch::NoGradGuard no_grad;
    fixtures::pix2pix_model(trainer).generator()->parameters()[0].view(-1)[0].add_(1e-3);
  }
  try {
    trainer.verify_replicas();
    ADD_FAILURE() << "diverged replicas were not detected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("G.model"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ranks 1 hold differently from rank 0"), std::string::npos) << e.what();
  }
}

// See Note [the generator's moving average]: every rank keeps, without communicating, the average
// one process of the global batch keeps, and the replica check covers it.
TEST_F(DistributedTraining, EveryRankKeepsTheAverageOneProcessOfTheGlobalBatchKeeps) {
  const int world = fixtures::g_mpi->world();
  constexpr std::int64_t kBatch = 4, kSteps = 5;
  const torch::Device device = fixtures::test_device();
  fixtures::make_gpu_arithmetic_exact();
  const auto train = [&](std::int64_t batch, const std::string& run, dist::Communicator& comm) {
    auto o = options(batch, run);
    o.ema_decay = 0.5;
    auto trainer = std::make_unique<train::Trainer>(o, device, comm);
    auto lo = o.loader;
    lo.world = comm.world();
    lo.rank = comm.rank();
    data::BatchLoader loader(data::PairedDataset::open(o.data), lo, device);
    loader.start_epoch(0);
    for (int s = 0; s < kSteps; ++s) {
      trainer->step(*loader.next());
      hold_biases_at_zero(*trainer);
    }
    return trainer;
  };
  // The averaged weights, and the model's beside them; not the biases, whose steps are noise
  // (See Note [biases held at zero]): the average takes them before they are set back to zero.
  const auto weights = [](nets::Generator& generator) {
    std::vector<torch::Tensor> out;
    for (const auto& p : generator->named_parameters())
      if (p.key().find("bias") == std::string::npos) out.push_back(p.value().detach().clone());
    return out;
  };
  std::vector<torch::Tensor> reference, reference_model;
  if (fixtures::g_mpi->rank() == 0) {
    dist::LocalCommunicator local;
    const auto single = train(kBatch * world, "ema-single", local);
    reference = weights(single->ema()->translator());
    reference_model = weights(fixtures::pix2pix_model(*single).generator());
  }
  fixtures::g_mpi->barrier();
  const auto communicator = fixtures::make_test_communicator(device);
  const auto parallel = train(kBatch, "ema-ranks", *communicator);
  EXPECT_NO_THROW(parallel->verify_replicas());
  if (communicator->rank() == 0) {
    const auto averaged = weights(parallel->ema()->translator());
    const auto model = weights(fixtures::pix2pix_model(*parallel).generator());
    ASSERT_EQ(averaged.size(), reference.size());
    double largest = 0, apart = 0, models = 0;
    for (size_t i = 0; i < averaged.size(); ++i) {
      largest = std::max(largest, fixtures::relative_error(averaged[i], reference[i]));
      apart = std::max(apart, fixtures::relative_error(averaged[i], model[i]));
      models = std::max(models, fixtures::relative_error(model[i], reference_model[i]));
    }
    const double tolerance = device.is_cuda() ? 1e-4 : 1e-5;
    std::printf(
        "%d ranks x %lld = 1 x %lld, the generator's average: largest relative difference %.2e (the models' "
        "%.2e; %lld steps)\n",
        world, static_cast<long long>(kBatch), static_cast<long long>(kBatch * world), largest, models,
        static_cast<long long>(kSteps));
    EXPECT_LE(largest, tolerance);
    EXPECT_GT(apart, 10 * tolerance) << "the average equals the model: nothing was averaged";
  }
  // Disturb the average on the last rank only: the check must name it.
  if (communicator->rank() == world - 1) {
    torch::NoGradGuard no_grad;
    parallel->ema()->translator()->parameters()[0].view(-1)[0].add_(1e-3);
  }
  try {
    parallel->verify_replicas();
    ADD_FAILURE() << "averages that differ between ranks were not detected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("G (EMA)"), std::string::npos) << e.what();
  }
}
