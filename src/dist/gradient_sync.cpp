// Note [buckets]: one collective per parameter would pay the latency of ~100 small messages per
// step; one for everything would wait for the whole backward. Buckets of ~25 MiB sit between.
#include "pix2pix/dist/gradient_sync.hpp"

#include "pix2pix/common/error.hpp"

namespace pix2pix::dist {

GradientSync::GradientSync(Communicator& comm, std::vector<torch::Tensor> parameters, std::int64_t bucket_bytes)
    : comm_(comm), parameters_(std::move(parameters)) {
  if (bucket_bytes < 1) throw Error("--bucket-mb must be > 0");
  std::int64_t filled = 0;
  for (std::size_t k = parameters_.size(); k-- > 0;) {
    const auto& p = parameters_[k];
    const std::int64_t bytes = p.numel() * static_cast<std::int64_t>(p.element_size());
    const auto& first = buckets_.empty() ? p : parameters_[buckets_.back().front()];
    // A bucket is one buffer: one dtype and one device.
    if (buckets_.empty() || filled + bytes > bucket_bytes || p.scalar_type() != first.scalar_type() ||
        p.device() != first.device()) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().push_back(k);
    filled += bytes;
  }
  if (comm_.world() == 1) return;
  // Note [gradients as bucket views]
  torch::NoGradGuard no_grad;
  for (const auto& bucket : buckets_) {
    std::int64_t numel = 0;
    for (std::size_t k : bucket) numel += parameters_[k].numel();
    const auto& first = parameters_[bucket.front()];
    auto buffer = torch::zeros({numel}, torch::TensorOptions().dtype(first.scalar_type()).device(first.device()));
    std::int64_t offset = 0;
    for (std::size_t k : bucket) {
      auto& p = parameters_[k];
      auto view = buffer.narrow(0, offset, p.numel()).view_as(p);
      if (p.grad().defined()) view.copy_(p.grad());
      p.mutable_grad() = view;
      offset += p.numel();
    }
    buffers_.push_back(buffer);
  }
}

void GradientSync::zero_grad() {
  if (comm_.world() == 1) {
    for (auto& p : parameters_) p.mutable_grad().reset();
    return;
  }
  for (auto& buffer : buffers_) buffer.zero_();
}

void GradientSync::average() {
  if (comm_.world() == 1) return;
  torch::NoGradGuard no_grad;
  // Every rank sends buckets of the same layout, also for a parameter that this backward did not
  // reach: its slice holds the zeros of zero_grad().
  for (auto& buffer : buffers_) comm_.allreduce_mean(buffer);
}

}  // namespace pix2pix::dist
