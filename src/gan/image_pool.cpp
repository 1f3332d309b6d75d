#include "pix2pix/gan/image_pool.hpp"

#include <algorithm>

namespace pix2pix::gan {

torch::Tensor ImagePool::query(const torch::Tensor& images) {
  if (capacity_ == 0) return images;
  torch::NoGradGuard no_grad;
  if (!stored_.empty() && stored_.front().scalar_type() != images.scalar_type())
    for (torch::Tensor& image : stored_) image = image.to(images.scalar_type());  // restored from another --precision
  std::vector<torch::Tensor> out;
  for (std::int64_t i = 0; i < images.size(0); ++i) {
    const torch::Tensor image = images[i].detach().clone();
    if (size() < capacity_) {
      stored_.push_back(image);
      out.push_back(image);
      continue;
    }
    // The reference's draws: uniform for the coin, then an index in the pool.
    if (torch::rand({1}).item<double>() > 0.5) {
      const auto k = static_cast<std::size_t>(torch::randint(capacity_, {1}).item<std::int64_t>());
      out.push_back(stored_[k]);
      stored_[k] = image;
    } else {
      out.push_back(image);
    }
  }
  return torch::stack(out);
}

torch::Tensor ImagePool::images() const {
  if (stored_.empty()) return {};
  return torch::stack(stored_);
}

void ImagePool::restore(const torch::Tensor& images, const torch::Device& device) {
  stored_.clear();
  if (!images.defined()) return;
  const std::int64_t n = std::min(images.size(0), capacity_);
  for (std::int64_t i = 0; i < n; ++i) stored_.push_back(images[i].to(device).clone());
}

}  // namespace pix2pix::gan
