// See Note [a step as one CUDA graph]: when --cuda-graph applies and why not, the step that
// captures and replays (on CPUs with a stand-in graph, on a GPU with LibTorch's), and the option
// as a user meets it.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/step_graph.hpp"
#include "pix2pix/train/captured_step.hpp"
#include "support/fixtures.hpp"
#include "train/tiny_training.hpp"

namespace {

using pix2pix::dist::LocalCommunicator;
using pix2pix::train::CaptureConditions;
using pix2pix::train::CapturedStep;
using pix2pix::train::cuda_graph_refusal;
using pix2pix::train::Trainer;
using pix2pix::train_tests::all_equal;
using pix2pix::train_tests::copies;
using pix2pix::train_tests::kCpu;
using pix2pix::train_tests::TempDir;
using pix2pix::train_tests::tiny_options;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CudaGraphOption, IsRefusedWhereTheStepCannotBeCapturedNamingWhatToChange) {
  const CaptureConditions fine{"", true, "", false, false};
  EXPECT_EQ(cuda_graph_refusal(fine), "");
  CaptureConditions c = fine;
  c.graph_unavailable = "a CPU rank has no CUDA graphs";
  EXPECT_EQ(cuda_graph_refusal(c), "a CPU rank has no CUDA graphs");
  c = fine;
  c.model_refusal = "its image pools choose on the host";
  EXPECT_TRUE(has(cuda_graph_refusal(c), "the model's step cannot be captured: its image pools"))
      << cuda_graph_refusal(c);
  c = fine;
  c.updates_on_device = false;
  EXPECT_TRUE(has(cuda_graph_refusal(c), "--device-update on")) << cuda_graph_refusal(c);
  c = fine;
  c.collective_log = true;
  EXPECT_TRUE(has(cuda_graph_refusal(c), "--collective-log")) << cuda_graph_refusal(c);
  c = fine;
  c.phases = true;
  EXPECT_TRUE(has(cuda_graph_refusal(c), "--phases")) << cuda_graph_refusal(c);

  // on refuses with the reason; off and auto (off until measured) never capture.
  c = fine;
  c.updates_on_device = false;
  try {
    pix2pix::train::resolve_cuda_graph(true, c);
    ADD_FAILURE() << "--cuda-graph on was taken with the host deciding updates";
  } catch (const pix2pix::UsageError& e) {
    EXPECT_TRUE(has(e.what(), "--cuda-graph on: the step reads a flag on the host")) << e.what();
  }
  EXPECT_TRUE(pix2pix::train::resolve_cuda_graph(true, fine));
  EXPECT_FALSE(pix2pix::train::resolve_cuda_graph(false, fine));
  EXPECT_FALSE(pix2pix::train::resolve_cuda_graph(std::nullopt, fine));
  EXPECT_FALSE(pix2pix::train::resolve_cuda_graph(std::nullopt, c));
}

// A stand-in for a CUDA graph on CPUs: a capture keeps the work without running it, a replay runs
// what was kept. It checks what CapturedStep owns: the graph's batch tensors refreshed before each
// replay, losses copied out, eager steps before a capture and for batches of other shapes, a new
// capture after a new learning rate. What only a GPU shows (the kernels recorded, dropout's generator, the
// private memory pool) the test below checks there.
class ReplayingGraph final : public pix2pix::dist::StepGraph {
 public:
  void run_eagerly(const std::function<void()>& work) override { work(); }
  void capture(const std::function<void()>& work) override {
    kept_ = work;
    memory_ = pix2pix::dist::CaptureMemory{3 << 20, 2 << 20, 1 << 20, 5 << 20, (4 << 20) + 1};
  }
  void replay() override { kept_(); }
  std::optional<pix2pix::dist::CaptureMemory> capture_memory() const override { return memory_; }

 private:
  std::function<void()> kept_;
  std::optional<pix2pix::dist::CaptureMemory> memory_;
};

// Steps 0-1 eager, 2 captured and replayed, 3-4 replayed, a new learning rate before 5 (captured
// anew), 6 a half batch (eager): every step's losses and the weights after are the eager run's.
void expect_replays_give_the_eager_steps(const torch::Device& device, std::unique_ptr<pix2pix::dist::StepGraph> graph,
                                         pix2pix::train::TrainOptions o, const TempDir& dir, double tolerance) {
  LocalCommunicator comm;
  o.run_dir = dir / "eager";
  Trainer eager(o, device, comm);
  o.run_dir = dir / "graphed";
  Trainer graphed(o, device, comm);
  CapturedStep captured(graphed.model(), comm, std::move(graph), /*eager_steps=*/2);
  eager.loader().start_epoch(0);
  std::vector<torch::Tensor> eager_losses, graphed_losses;
  for (int s = 0; s < 7; ++s) {
    auto batch = eager.loader().next();
    ASSERT_TRUE(batch.has_value());
    if (s == 5) {
      for (auto* group : eager.model().update_groups()) group->set_learning_rate(1e-3);
      captured.set_learning_rate(1e-3);
    }
    if (s == 6) {
      batch->a = batch->a.narrow(0, 0, batch->a.size(0) / 2);
      batch->b = batch->b.narrow(0, 0, batch->b.size(0) / 2);
    }
    torch::manual_seed(100 + s);  // dropout's masks, as the run loop seeds each step
    eager_losses.push_back(eager.model().step(*batch).values);
    torch::manual_seed(100 + s);
    graphed_losses.push_back(captured.step(*batch).values);
  }
  EXPECT_EQ(captured.eager(), 3);
  EXPECT_EQ(captured.captures(), 2);
  EXPECT_EQ(captured.replays(), 4);
  // The allocator's figures around the last capture (on a GPU LibTorch's own): the capture's pool
  // holds what the step allocated.
  EXPECT_NE(captured.capture_memory().find("after the capture"), std::string::npos) << captured.capture_memory();
  // Compared at the end: a step's losses are its own, not a view a later replay overwrites.
  for (size_t s = 0; s < eager_losses.size(); ++s)
    EXPECT_TRUE(torch::allclose(graphed_losses[s].cpu(), eager_losses[s].cpu(), tolerance, tolerance))
        << "step " << s << ": " << graphed_losses[s] << " against " << eager_losses[s];
  const auto a = copies(eager.model().update_groups()[0]->parameters());
  const auto b = copies(graphed.model().update_groups()[0]->parameters());
  ASSERT_EQ(a.size(), b.size());
  if (tolerance == 0) {
    EXPECT_TRUE(all_equal(a, b));
  }
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::allclose(a[i].cpu(), b[i].cpu(), tolerance, tolerance)) << "parameter " << i;
}

// A stand-in graph that asks, before each eager step, whether every parameter of every update group
// has its Adam state already, zero as a first step makes it.
// See Note [the optimiser's state before the first step].
class StateWatchingGraph final : public pix2pix::dist::StepGraph {
 public:
  explicit StateWatchingGraph(pix2pix::gan::GanModel& model) : model_(model) {}
  void run_eagerly(const std::function<void()>& work) override {
    bool ready = true;
    for (auto* group : model_.update_groups()) {
      const auto& states = group->optimizer().state();
      ready = ready && states.size() == group->parameters().size();
      for (const auto& entry : states) {
        const auto& state = static_cast<const torch::optim::AdamParamState&>(*entry.second);
        ready = ready && state.step() == 0 && state.exp_avg().eq(0).all().item<bool>() &&
                state.exp_avg_sq().eq(0).all().item<bool>();
      }
    }
    before_each_eager_step.push_back(ready);
    work();
  }
  void capture(const std::function<void()>& work) override { kept_ = work; }
  void replay() override { kept_(); }
  std::optional<pix2pix::dist::CaptureMemory> capture_memory() const override { return std::nullopt; }
  std::vector<bool> before_each_eager_step;

 private:
  pix2pix::gan::GanModel& model_;
  std::function<void()> kept_;
};

TEST(CapturedStep, MakesTheOptimisersStateBeforeItsFirstStep) {
  TempDir dir;
  LocalCommunicator comm;
  Trainer trainer(tiny_options(dir / "run"), kCpu, comm);
  auto graph = std::make_unique<StateWatchingGraph>(trainer.model());
  StateWatchingGraph& watching = *graph;
  CapturedStep captured(trainer.model(), comm, std::move(graph), /*eager_steps=*/2);
  trainer.loader().start_epoch(0);
  captured.step(*trainer.loader().next());
  captured.step(*trainer.loader().next());
  // Before the first step: made, and zero; before the second: Adam's own after a step.
  EXPECT_EQ(watching.before_each_eager_step, (std::vector<bool>{true, false}));
}

// bench's line of the graph's memory: none before a capture, the allocator's figures in MiB after.
TEST(CapturedStep, SaysTheGraphsMemoryAroundItsCapture) {
  TempDir dir;
  LocalCommunicator comm;
  auto o = tiny_options(dir / "run");
  Trainer trainer(o, kCpu, comm);
  CapturedStep captured(trainer.model(), comm, std::make_unique<ReplayingGraph>(), /*eager_steps=*/1);
  trainer.loader().start_epoch(0);
  captured.step(*trainer.loader().next());
  EXPECT_EQ(captured.capture_memory(), "") << "eager so far";
  captured.step(*trainer.loader().next());
  ASSERT_EQ(captured.captures(), 1);
  EXPECT_EQ(captured.capture_memory(),
            "MiB reserved after the eager steps 3 (allocated 2), after emptying the cache 1, after the capture 5 "
            "(allocated 4)");
}

TEST(CapturedStep, ReplaysGiveTheEagerStepsLossesAndWeights) {
  TempDir dir;
  expect_replays_give_the_eager_steps(kCpu, std::make_unique<ReplayingGraph>(), tiny_options(dir / "unused"), dir, 0);
}

// On a GPU with a LibTorch that has CUDA graphs (scripts/gpu-smoke.sh runs it): the same with
// LibTorch's graph, the updates decided on the device, deterministic convolutions without TF32.
TEST(CapturedStep, OnAGpuTheCudaGraphGivesTheEagerSteps) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !pix2pix::dist::cuda_graph_unavailable(gpu).empty())
    GTEST_SKIP() << "no GPU, or no CUDA graphs in this LibTorch: "
                 << (torch::cuda::is_available() ? pix2pix::dist::cuda_graph_unavailable(gpu) : "no GPU");
  auto& context = at::globalContext();
  const bool deterministic = context.deterministicCuDNN(), tf32 = context.allowTF32CuDNN();
  context.setDeterministicCuDNN(true);
  context.setAllowTF32CuDNN(false);
  TempDir dir;
  auto o = tiny_options(dir / "unused");
  o.device_update = true;
  expect_replays_give_the_eager_steps(gpu, pix2pix::dist::make_cuda_step_graph(gpu), o, dir, 1e-5);
  context.setDeterministicCuDNN(deterministic);
  context.setAllowTF32CuDNN(tf32);
}

TEST(CudaGraphCli, IsOffUnlessAskedAndRefusedByNameWhereItCannotApply) {
  using pix2pix::cli_tests::smoke_train_command;
  using pix2pix::fixtures::run_cli;
  TempDir dir;
  pix2pix::fixtures::make_fashion_edges_dataset(dir / "d.h5", 20, 32);
  auto r = run_cli(smoke_train_command(dir, "auto", "--max-epochs 1"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "each kernel launched by the host (--cuda-graph auto)")) << r.output;
  r = run_cli(smoke_train_command(dir, "on", "--max-epochs 1 --device cpu --cuda-graph on"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--cuda-graph on: a CPU rank has no CUDA graphs")) << r.output;
  r = run_cli(smoke_train_command(dir, "bad", "--cuda-graph sideways"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--cuda-graph must be one of")) << r.output;
}

}  // namespace
