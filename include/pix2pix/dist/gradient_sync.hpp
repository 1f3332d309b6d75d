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
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::dist {

class GradientSync {
 public:
  GradientSync(Communicator& comm, std::vector<torch::Tensor> parameters, std::int64_t bucket_bytes);
  // Before a backward. A world of one drops the gradients (backward then writes them without an
  // add); a larger world fills each bucket with zeros and keeps the views.
  void zero_grad();
  // After backward: every gradient becomes the mean over ranks. A no-op for a world of one.
  void average();
  std::size_t bucket_count() const { return buckets_.size(); }
  // The flat buffer of bucket k (world > 1); parameters' gradients are views into it.
  const torch::Tensor& bucket_buffer(std::size_t k) const { return buffers_.at(k); }

 private:
  Communicator& comm_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::vector<std::size_t>> buckets_;  // indices into parameters_
  std::vector<torch::Tensor> buffers_;             // one flat gradient buffer per bucket (world > 1)
};

}  // namespace pix2pix::dist
