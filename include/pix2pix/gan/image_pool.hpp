// CycleGAN's history of generated images (Shrivastava et al. 2017, as the reference's ImagePool):
// a discriminator is shown, for each new image, either that image or, with probability 1/2 once
// the pool is full, a stored older one (which the new image replaces). Checkpoints keep every
// rank's images, so that a resumed run draws from the pool an uninterrupted one would
// (See Note [checkpointed image pools]).
//
// Note [image pools per rank]
// Each rank keeps its own pool, filled with the images its generators made from its shard. A pool
// is a stochastic history, not part of the gradient: with W ranks a discriminator's pooled
// half-batch draws from W x capacity recent images spread over the ranks instead of one
// process's, and the draw is seeded per (step, rank). So a run with a pool is not bit-equal to one
// process (nor would two processes of the reference's be); docs/distributed.md says more.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pix2pix::gan {

class ImagePool {
 public:
  explicit ImagePool(std::int64_t capacity) : capacity_(capacity) {}  // 0: off, query returns its input

  // `images` [n, C, H, W] (detached copies are stored); returns a batch of the same shape. Draws
  // from torch's global generator, which the run loop seeds per (step, rank).
  torch::Tensor query(const torch::Tensor& images);
  std::int64_t size() const { return static_cast<std::int64_t>(stored_.size()); }
  std::int64_t capacity() const { return capacity_; }

  // The stored images in pool order, [size(), C, H, W] (undefined while empty): what a checkpoint keeps.
  torch::Tensor images() const;
  // Replaces the stored images by the first capacity() of `images` [n, C, H, W] (any device;
  // copies land on `device`), in pool order. An undefined or empty tensor empties the pool.
  void restore(const torch::Tensor& images, const torch::Device& device);

 private:
  std::int64_t capacity_;
  std::vector<torch::Tensor> stored_;
};

}  // namespace pix2pix::gan
