// --cuda-graph: the training step captured once as a CUDA graph and replayed at every later step
// (See Note [a step as one CUDA graph]). Whether it applies to a run, and the step that does it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/step_graph.hpp"
#include "pix2pix/gan/gan_model.hpp"

namespace pix2pix::train {

// What a run knows that decides whether its step can be captured.
struct CaptureConditions {
  std::string graph_unavailable;   // dist::cuda_graph_unavailable for the rank's device ("": available)
  bool updates_on_device = false;  // every update group decides on the device (--device-update)
  std::string model_refusal;       // GanModel::capture_refusal ("": capturable)
  bool collective_log = false;     // --collective-log records each collective as it is called
  bool phases = false;             // bench --phases times each phase of each step on the host
};

// Why --cuda-graph cannot apply to a run with `c`, naming what to change; "" where it can.
std::string cuda_graph_refusal(const CaptureConditions& c);
// --cuda-graph resolved: on, where it applies (UsageError with the refusal where not); off; auto:
// off (See Note [a step as one CUDA graph]).
bool resolve_cuda_graph(const std::optional<bool>& option, const CaptureConditions& c);
// The start-up line: "one CUDA graph a step, replayed (--cuda-graph on)" or "...".
std::string describe_cuda_graph(const std::optional<bool>& option, bool on);

// "MiB reserved after the eager steps ..., after emptying the cache ..., after the capture ...
// (allocated ... and ...)": `m` in MiB, for bench's report of a captured step.
std::string describe_capture_memory(const dist::CaptureMemory& m);

// How many steps run eagerly before the capture, so that what a step makes lazily exists before it
// (See Note [a step as one CUDA graph]).
constexpr int kEagerStepsBeforeCapture = 2;

class CapturedStep {
 public:
  // `graph`: a CUDA graph (dist::make_cuda_step_graph), or a stand-in in tests. The first
  // `eager_steps` (>= 1) steps run eagerly on the graph's stream; the next is captured and replayed.
  CapturedStep(gan::GanModel& model, dist::Communicator& comm, std::unique_ptr<dist::StepGraph> graph,
               int eager_steps = kEagerStepsBeforeCapture);
  // One step on `batch`: a replay where it has the captured batch's shapes, else eager. Its losses
  // are the step's own (copies, which later replays leave alone).
  gan::StepLosses step(const data::Batch& batch);
  // The learning rate of the model's update groups from the next step on. A capture holds it as a
  // constant (in Adam's kernels), so a rate other than the captured one is captured anew.
  void set_learning_rate(double lr);

  std::int64_t eager() const { return eager_; }
  std::int64_t captures() const { return captures_; }
  std::int64_t replays() const { return replays_; }
  // The graph's memory around its last capture (dist::CaptureMemory), as a line for a report; ""
  // where the graph gives none.
  std::string capture_memory() const;

 private:
  gan::StepLosses run_eagerly(const data::Batch& batch);
  bool fits(const data::Batch& batch) const;

  gan::GanModel& model_;
  dist::Communicator& comm_;
  std::unique_ptr<dist::StepGraph> graph_;
  int eager_steps_;
  data::Batch static_;      // the tensors the graph reads its batch from
  gan::StepLosses output_;  // the tensors the graph copies its losses into
  bool captured_ = false;
  double lr_ = std::numeric_limits<double>::quiet_NaN();  // the rate set last, which a capture holds
  std::int64_t eager_ = 0, captures_ = 0, replays_ = 0;
};

}  // namespace pix2pix::train
