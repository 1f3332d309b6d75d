#include "pix2pix/train/captured_step.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::train {

// Note [a step as one CUDA graph]: a GAN's training step launches some thousand kernels,
// collectives and copies, and at small batches the GPU finishes each sooner than the host launches
// the next (batch 1 at 256² on an H100: ~12 ms a step, launch-bound). With --cuda-graph on the
// step is recorded once as a CUDA graph and every later step is one launch of it: forward,
// backward, the gradient all-reduce (NCCL's collectives are captured with it:
// See Note [collectives inside a CUDA graph]), the check for non-finite gradients, fused Adam and
// the loss scale. What makes that exact rather than approximately the eager step:
//  - The step reads nothing on the host (See Note [no host reads in the step]) and decides its
//    updates on the device (See Note [updates decided on the device]): --device-update must be on.
//  - The graph reads its batch from tensors of its own (static_), which each step's batch is
//    copied into; a batch of other shapes runs eagerly (a full batch always has the same, so
//    only an odd caller's would).
//  - Dropout draws from the seed the run loop sets before each step: LibTorch's graph makes the
//    generator's seed and offset inputs of the replay (See Note [CUDA graphs need LibTorch's CUDA half]).
//  - Host values the capture holds as constants (Adam's learning rate) change only between
//    epochs, and the run loop captures anew when they do (set_learning_rate()).
//  - The first steps run eagerly on the graph's stream, so that cuDNN's autotuning, lazily made
//    state (the loss scale, Adam's step counts on the device) and the allocator's blocks exist
//    before the capture; Adam's moments are made before those steps
//    (See Note [the optimiser's state before the first step]).
// What the run loop does around the step stays outside: validation, checkpoints, the moving
// average, the stop poll and the losses' sums. A model whose step draws on the host (its image
// pools, say) says so (GanModel::capture_refusal); bench --phases and --collective-log observe
// each step's phases and collectives on the host, which a replay does not pass through: both are
// refused with it. auto is off until a GPU run has measured the graph against the eager step
// (docs/performance.md); on asks for it.
std::string cuda_graph_refusal(const CaptureConditions& c) {
  if (!c.graph_unavailable.empty()) return c.graph_unavailable;
  if (!c.model_refusal.empty()) return "the model's step cannot be captured: " + c.model_refusal;
  if (!c.updates_on_device)
    return "the step reads a flag on the host to decide each update; a graph needs --device-update on";
  if (c.collective_log) return "--collective-log records collectives as they are called, and a replay calls none";
  if (c.phases) return "--phases times each phase of a step on the host, and a replay has none";
  return "";
}

bool resolve_cuda_graph(const std::optional<bool>& option, const CaptureConditions& c) {
  if (!option.value_or(false)) return false;  // auto: See Note [a step as one CUDA graph]
  const std::string why = cuda_graph_refusal(c);
  if (!why.empty()) throw UsageError("--cuda-graph on: " + why);
  return true;
}

std::string describe_cuda_graph(const std::optional<bool>& option, bool on) {
  const std::string how = "(--cuda-graph " + on_off_auto_name(option) + ")";
  return on ? "one CUDA graph a step, captured after " + std::to_string(kEagerStepsBeforeCapture) +
                  " eager steps and replayed " + how
            : "each kernel launched by the host " + how;
}

std::string describe_capture_memory(const dist::CaptureMemory& m) {
  const auto mib = [](std::int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20); };
  return "MiB reserved after the eager steps " + mib(m.reserved_before) + " (allocated " + mib(m.allocated_before) +
         "), after emptying the cache " + mib(m.reserved_emptied) + ", after the capture " + mib(m.reserved_after) +
         " (allocated " + mib(m.allocated_after) + ")";
}

std::string CapturedStep::capture_memory() const {
  const std::optional<dist::CaptureMemory> memory = graph_->capture_memory();
  return memory ? describe_capture_memory(*memory) : "";
}

CapturedStep::CapturedStep(gan::GanModel& model, dist::Communicator& comm, std::unique_ptr<dist::StepGraph> graph,
                           int eager_steps)
    : model_(model), comm_(comm), graph_(std::move(graph)), eager_steps_(eager_steps) {
  if (!graph_) throw Error("CapturedStep: no graph");
  if (eager_steps_ < 1) throw Error("CapturedStep: at least one eager step comes before a capture");
}

bool CapturedStep::fits(const data::Batch& batch) const {
  const auto same = [](const torch::Tensor& a, const torch::Tensor& b) {
    return a.defined() == b.defined() &&
           (!a.defined() || (a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.device() == b.device()));
  };
  return same(static_.a, batch.a) && same(static_.b, batch.b) && same(static_.labels, batch.labels);
}

// Note [the optimiser's state before the first step]
// Adam makes its moments at a parameter's first step (8 bytes a parameter: 458 MB for Pix2Pix's
// networks), after that step's activations and cuDNN's workspaces were freed into the caching
// allocator, which then carves the moments out of those cached blocks: live moments scattered
// through the segments of the step's transient memory, which emptying the cache before a capture
// cannot give back (a segment goes back only whole), so that the graph's own pool takes as much
// again beside them: the likely cause of the graph's 9823 MiB at batch 1 on the H200 against the
// eager steps' 5341 (docs/performance.md). Made before the first step instead, on the current
// stream (the allocator keeps each stream's blocks apart, and the steps run on the graph's), the
// moments take segments of their own and the step's memory stays whole to give back. The values
// are those Adam makes; bench's line of the graph's memory says what emptying the cache gave back.
gan::StepLosses CapturedStep::run_eagerly(const data::Batch& batch) {
  gan::StepLosses out;
  if (eager_ == 0)
    for (optim::UpdateGroup* group : model_.update_groups()) group->make_optimizer_state();
  graph_->run_eagerly([&] {
    if (eager_ == 0)  // See Note [accumulators made on the step's stream]
      for (optim::UpdateGroup* group : model_.update_groups()) group->renew_hooks();
    out = model_.step(batch);
  });
  ++eager_;
  // The tensors a capture copies its losses into: made outside the graph's pool, so that they
  // outlive a new capture, and written in place by every replay.
  if (!output_.values.defined()) output_ = {torch::empty_like(out.values), torch::empty_like(out.skipped)};
  return out;
}

void CapturedStep::set_learning_rate(double lr) {
  for (optim::UpdateGroup* group : model_.update_groups()) group->set_learning_rate(lr);
  if (lr != lr_) captured_ = false;
  lr_ = lr;
}

gan::StepLosses CapturedStep::step(const data::Batch& batch) {
  if (eager_ < eager_steps_) return run_eagerly(batch);
  if (captured_ && !fits(batch)) return run_eagerly(batch);
  if (!captured_) {
    // The graph's own batch tensors, with this batch's shapes and layout; a capture runs nothing,
    // so the replay below is this batch's step.
    static_ = data::Batch{};
    static_.a = batch.a.clone();
    static_.b = batch.b.clone();
    if (batch.labels.defined()) static_.labels = batch.labels.clone();
    graph_->capture([&] {
      const gan::StepLosses out = model_.step(static_);
      output_.values.copy_(out.values);
      output_.skipped.copy_(out.skipped);
    });
    captured_ = true;
    ++captures_;
  } else {
    static_.a.copy_(batch.a);
    static_.b.copy_(batch.b);
    if (batch.labels.defined()) static_.labels.copy_(batch.labels);
  }
  graph_->replay();
  comm_.watch_replay("a replay of the step's CUDA graph");
  ++replays_;
  return {output_.values.clone(), output_.skipped.clone()};  // the next replay overwrites output_
}

}  // namespace pix2pix::train
