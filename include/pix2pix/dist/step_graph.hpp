// A training step recorded once and replayed: on GPUs a CUDA graph (LibTorch's), which queues the
// whole step's kernels and collectives with one launch instead of one launch each. The run loop's
// side of it (what is captured, when, and what the step must not do) is train/captured_step.hpp.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

namespace pix2pix::dist {

class StepGraph {
 public:
  virtual ~StepGraph() = default;
  // Runs `work` now, on the stream a capture uses, ordered after the work queued so far and before
  // what is queued after it (the eager steps before a capture run so: lazily made state, cuDNN's
  // autotuning and the allocator's blocks are then in place for the stream the capture runs on).
  virtual void run_eagerly(const std::function<void()>& work) = 0;
  // Records `work` as the graph replay() runs; nothing of it runs now. A new capture replaces the
  // last (its memory is given back first). Error, naming what failed, where `work` cannot be
  // captured (a host read in it, say); the graph is then empty.
  virtual void capture(const std::function<void()>& work) = 0;
  // Queues the captured work on the current stream, with the tensors it was captured on.
  virtual void replay() = 0;
};

// Why this build cannot capture CUDA graphs on `device`; "" where it can.
std::string cuda_graph_unavailable(const torch::Device& device);
// A CUDA graph of `device` (Error where cuda_graph_unavailable says why).
std::unique_ptr<StepGraph> make_cuda_step_graph(const torch::Device& device);

}  // namespace pix2pix::dist
