// Averages the gradients of a set of parameters over all ranks through flattened buckets
// (PyTorch DDP's scheme: buckets of at most --bucket-mb, filled in reverse parameter order,
// which is roughly the order backward produces gradients). Each bucket is one collective.
// Designed so that launching a bucket as soon as its gradients are ready (overlap with backward)
// can replace average() later without changing the trainer.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::dist {

class GradientSync {
 public:
  GradientSync(Communicator& comm, std::vector<torch::Tensor> parameters, std::int64_t bucket_bytes);
  // After backward: every gradient becomes the mean over ranks. A no-op for a world of one.
  void average();
  std::size_t bucket_count() const { return buckets_.size(); }

 private:
  Communicator& comm_;
  std::vector<torch::Tensor> parameters_;
  std::vector<std::vector<std::size_t>> buckets_;  // indices into parameters_
};

}  // namespace pix2pix::dist
