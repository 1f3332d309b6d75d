// Averages the gradients of a set of parameters over all ranks through buckets (PyTorch DDP's
// scheme: buckets of at most --bucket-mb, filled in reverse parameter order, which is roughly
// the order backward produces gradients). Each bucket is one flat buffer and one collective.
//
// Note [gradients as bucket views]: in a world of more than one, every parameter's .grad() is a
// view into its bucket's buffer (DDP's gradient_as_bucket_view), so backward accumulates straight
// into the buffer and the all-reduce runs in place: no concatenation before it and no copy back
// after it (two passes over every gradient per step). The views survive only if nothing replaces
// a gradient: the trainer clears gradients with zero_grad() here, never the optimizer's
// (LibTorch 2.x's Optimizer::zero_grad sets them to undefined).
//
// Note [overlapped all-reduce]: DDP's overlap. A post-hook on each parameter's gradient
// accumulator counts down its bucket; a bucket whose gradients are all in starts its
// all-reduce (Communicator::start_allreduce_mean) while backward goes on with earlier layers.
// Buckets start strictly in bucket order (a ready bucket waits for the ones before it), so every
// rank issues the same collectives in the same order whatever order its backward ran in, and
// average() starts what backward did not reach (those slices hold zero_grad's zeros) and waits
// for all. The first-ready bucket is small (1 MiB, as DDP's) so that communication starts early.
// On GPUs the all-reduce runs on NCCL's stream, ordered after the accumulation by an event; on
// CPUs MPI moves a started collective only inside MPI calls, so each hook also polls the oldest
// one in flight (progress, not a wait).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::dist {

class GradientSync {
 public:
  // With `overlap` (See Note [overlapped all-reduce]), a bucket's all-reduce starts during backward,
  // as soon as the last of its gradients is accumulated, and the first bucket is at most 1 MiB.
  // Float32 buckets travel as `wire_dtype` (kBFloat16: See Note [bf16 gradients on the wire]);
  // buckets of other dtypes travel as they are.
  GradientSync(Communicator& comm, std::vector<torch::Tensor> parameters, std::int64_t bucket_bytes,
               bool overlap = false, torch::ScalarType wire_dtype = torch::kFloat32);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Before a backward. A world of one drops the gradients (backward then writes them without an
  // add); a larger world fills each bucket with zeros and keeps the views.
  void zero_grad();
  // After backward: every gradient becomes the mean over ranks. A no-op for a world of one.
  void average();
  // After the update that read the gradients. A world of one drops them; a larger world keeps
  // its buckets and their views. See Note [gradients dropped after the update]
  void release();
  std::size_t bucket_count() const { return buckets_.size(); }
  // The flat buffer of bucket k (world > 1); parameters' gradients are views into it.
  const torch::Tensor& bucket_buffer(std::size_t k) const { return buffers_.at(k); }
  // The dtype bucket k's all-reduce sends (world > 1).
  torch::ScalarType wire_dtype(std::size_t k) const;
  // Whether all-reduces start during backward (asked for, world > 1, and the communicator can be
  // called from the thread that runs backward on these parameters' device).
  bool overlaps() const { return !accumulators_.empty(); }
  // Buckets whose all-reduce started during the last backward, before average() (tests, bench).
  std::size_t started_during_backward() const { return started_during_backward_; }
  // Drops the overlap's hooks and the accumulators they sit on, and makes both anew while the
  // stream that will run the step is current. See Note [accumulators made on the step's stream]
  void renew_hooks();

 private:
  class ReadyHook;
  // Called by parameter k's gradient accumulator once backward has added its gradient.
  void gradient_ready(std::size_t k);
  // Starts the all-reduce of every bucket before `end` not started yet, in bucket order.
  void start_buckets(std::size_t end);
  // What bucket b's all-reduce reduces: its buffer, or the buffer rounded into its wire copy.
  torch::Tensor& wire_for(std::size_t b);
  // After bucket b's all-reduce: a wire copy's mean back into the buffer.
  void finish_bucket(std::size_t b);
  void wait_started();
  void hook_accumulators();

  Communicator& comm_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::vector<std::size_t>> buckets_;  // indices into parameters_
  std::vector<torch::Tensor> buffers_;             // one flat gradient buffer per bucket (world > 1)
  std::vector<torch::Tensor> wire_copies_;         // per bucket: its compressed copy, or undefined

  // Overlap: the accumulators we hooked (and the hooks' keys), each parameter's bucket, how many
  // gradients each bucket still waits for in this backward, and the all-reduces in flight.
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, std::uintptr_t>> accumulators_;
  std::vector<std::size_t> bucket_of_;
  std::vector<std::size_t> missing_;
  std::vector<std::unique_ptr<PendingCollective>> in_flight_;  // buckets [0, in_flight_.size()) started
  std::size_t started_during_backward_ = 0;
};

}  // namespace pix2pix::dist
