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
    const std::int64_t bytes = parameters_[k].numel() * static_cast<std::int64_t>(parameters_[k].element_size());
    if (buckets_.empty() || filled + bytes > bucket_bytes) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().push_back(k);
    filled += bytes;
  }
}

void GradientSync::average() {
  if (comm_.world() == 1) return;
  torch::NoGradGuard no_grad;
  for (const auto& bucket : buckets_) {
    std::vector<torch::Tensor> grads;
    for (std::size_t k : bucket) {
      auto& p = parameters_[k];
      // A parameter unused in this backward still takes part, as zeros, so that every rank
      // sends buckets of the same layout.
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad().flatten());
    }
    auto flat = torch::cat(grads);
    comm_.allreduce_mean(flat);
    std::int64_t offset = 0;
    for (std::size_t k : bucket) {
      auto g = parameters_[k].grad();
      g.copy_(flat.narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
  }
}

}  // namespace pix2pix::dist
