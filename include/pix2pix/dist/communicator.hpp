// The collective operations the trainer needs, behind one small interface chosen once from the
// device: NCCL on GPUs, MPI on CPUs (issue #4), and LocalCommunicator for a single process.
// Tensors are reduced in place; every rank must call the same operations in the same order.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

namespace pix2pix::dist {

// Note [the compute stream]: device collectives order themselves after the work queued so far on
// the stream the step computes on, and make that stream wait for their result. That is LibTorch's
// legacy default stream (null here) unless a CUDA graph is being captured, which must happen on
// a stream of its own (dist/step_graph.hpp sets it for the capture's duration, and for the eager
// steps before it). A raw cudaStream_t, kept as void* so that this header needs no CUDA; one for
// the process, changed only between steps, when no collective is being started.
void* compute_stream();
class ComputeStreamScope {
 public:
  explicit ComputeStreamScope(void* stream);
  ~ComputeStreamScope();
  ComputeStreamScope(const ComputeStreamScope&) = delete;
  ComputeStreamScope& operator=(const ComputeStreamScope&) = delete;

 private:
  void* previous_;
};

// A collective that start_allreduce_mean began and nobody has waited for yet.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Lets it progress (MPI moves a non-blocking collective only inside MPI calls); true once done.
  virtual bool poll() { return true; }
  // Until the result is in the tensor (GPUs: until later work on the compute stream is ordered
  // after it). Call exactly once.
  virtual void wait() {}
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string name() const = 0;

  virtual void allreduce_sum(torch::Tensor& tensor) = 0;
  virtual void allreduce_max(torch::Tensor& tensor) = 0;
  virtual void broadcast(torch::Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;

  // Sum, then divide by the world size (backends with a native average may override).
  virtual void allreduce_mean(torch::Tensor& tensor);
  // allreduce_mean that returns before it completes; `tensor` must stay untouched until wait().
  // Collectives still complete in the order they were started. The default runs it now.
  virtual std::unique_ptr<PendingCollective> start_allreduce_mean(torch::Tensor& tensor);
  // Whether start_allreduce_mean may be called from a thread other than the one that drives
  // the job (LibTorch's backward runs CUDA work on its own device threads; MPI is FUNNELED).
  virtual bool starts_from_any_thread() const { return false; }
  // Whether collectives of device tensors may be called from LibTorch's GPU threads (where
  // backward runs: --sync-bn's sums): NCCL's may, those staged through MPI (FUNNELED) may not.
  virtual bool device_collectives_from_any_thread() const { return starts_from_any_thread(); }
  // Whether a collective of device tensors returns once it is queued on the device, before its
  // data moved (NCCL's), rather than once it is done (MPI's, staged through the host). The host's
  // time in it is then not the collective's: bench's sync_share and an epoch's sync_s are near 0,
  // and only a wait for the device (bench --phases) or a trace times it.
  virtual bool queues_on_device() const { return false; }
  // After a CUDA graph's replay was queued on the compute stream: the device collectives inside it
  // passed no watchdog, so follow the replay as one collective (`what`), ended within the
  // collective timeout like any other (NCCL's). Nothing to do where collectives block (MPI's).
  virtual void watch_replay(const char* what) { (void)what; }
  // Helpers for host scalars, built on the tensor operations.
  double allreduce_mean(double value);
  double allreduce_sum(double value);
  double allreduce_max(double value);
  bool any(bool flag);
  // `text` of `root` on every rank.
  std::string broadcast_string(const std::string& text, int root);
};

// World of one: every collective is the identity.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  std::string name() const override { return "local"; }
  void allreduce_sum(torch::Tensor&) override {}
  void allreduce_max(torch::Tensor&) override {}
  void broadcast(torch::Tensor&, int) override {}
  void barrier() override {}
  void allreduce_mean(torch::Tensor&) override {}
};

}  // namespace pix2pix::dist
