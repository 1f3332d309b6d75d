// A training step recorded once and replayed: on GPUs a CUDA graph (LibTorch's), which queues the
// whole step's kernels and collectives with one launch instead of one launch each. The run loop's
// side of it (what is captured, when, and what the step must not do) is train/captured_step.hpp.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace pix2pix::dist {

// The caching allocator's bytes on the graph's device around its last capture: what the eager
// steps before it left reserved, what emptying the cache gave back, and what the capture's own
// pool took. Where the graph's memory goes (docs/performance.md: 9823 MiB at batch 1 against the
// eager steps' 5341 on an H200).
struct CaptureMemory {
  std::int64_t reserved_before = 0, allocated_before = 0;  // after the eager steps
  std::int64_t reserved_emptied = 0;                       // after emptying the cache
  std::int64_t reserved_after = 0, allocated_after = 0;    // after the capture (its pool included)
};

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
  // The allocator's figures around the last capture; none where nothing was captured or the graph
  // has no allocator to ask (a test's stand-in).
  virtual std::optional<CaptureMemory> capture_memory() const { return std::nullopt; }
};

// Why this build cannot capture CUDA graphs on `device`; "" where it can.
std::string cuda_graph_unavailable(const torch::Device& device);
// A CUDA graph of `device` (Error where cuda_graph_unavailable says why).
std::unique_ptr<StepGraph> make_cuda_step_graph(const torch::Device& device);

}  // namespace pix2pix::dist
