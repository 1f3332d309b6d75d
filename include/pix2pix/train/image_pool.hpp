// CycleGAN's history of generated images (Shrivastava et al. 2017, as the reference's ImagePool):
// a discriminator is shown, for each new image, either that image or, with probability 1/2 once
// the pool is full, a stored older one (which the new image replaces). Per rank: Note [image
// pools per rank] in docs/distributed.md.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace pix2pix::train {

class ImagePool {
 public:
  explicit ImagePool(std::int64_t capacity) : capacity_(capacity) {}  // 0: off, query returns its input

  // `images` [n, C, H, W] (detached copies are stored); returns a batch of the same shape. Draws
  // from torch's global generator, which the run loop seeds per (step, rank).
  torch::Tensor query(const torch::Tensor& images);
  std::int64_t size() const { return static_cast<std::int64_t>(stored_.size()); }

 private:
  std::int64_t capacity_;
  std::vector<torch::Tensor> stored_;
};

}  // namespace pix2pix::train
