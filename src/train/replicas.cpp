#include "pix2pix/train/replicas.hpp"

#include <cstdio>
#include <string>
#include <utility>

#include "pix2pix/common/error.hpp"

namespace pix2pix::train {

void broadcast_from_rank0(dist::Communicator& comm, const std::vector<gan::NamedNetwork>& networks, bool buffers_only) {
  if (comm.world() == 1) return;
  torch::NoGradGuard no_grad;
  for (const gan::NamedNetwork& network : networks) {
    if (!buffers_only)
      for (auto& p : network.module->parameters()) {
        auto data = p.detach();
        comm.broadcast(data, 0);
      }
    for (auto& b : network.module->buffers()) comm.broadcast(b, 0);
  }
}

void verify_replicas(dist::Communicator& comm, const std::vector<gan::NamedNetwork>& networks, std::int64_t step) {
  if (comm.world() == 1) return;
  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const gan::NamedNetwork& network : networks)
    for (const auto& p : network.module->named_parameters())
      named.emplace_back(network.label + "." + p.key(), p.value());
  // One collective for all: per parameter its sum and its negated sum, max-reduced. Equal
  // replicas give max(s) == -max(-s), i.e. max == min, for every parameter.
  std::vector<torch::Tensor> sums;
  for (const auto& [name, p] : named) sums.push_back(p.detach().to(torch::kFloat64).sum().reshape({1}));
  auto local = torch::cat(sums).cpu();
  auto extremes = torch::cat({local, -local});
  comm.allreduce_max(extremes);
  const auto n = static_cast<std::int64_t>(named.size());
  const auto highest = extremes.narrow(0, 0, n), lowest = -extremes.narrow(0, n, n);
  const auto differs = (highest != lowest).nonzero();
  if (differs.numel() == 0) return;
  // Which ranks: every rank's checksum of the first differing parameter (one more collective,
  // taken by every rank, since all of them saw the same global extremes).
  const auto first = differs[0].item<std::int64_t>();
  auto per_rank = torch::zeros({comm.world()}, torch::kFloat64);
  per_rank[comm.rank()] = local[first];
  comm.allreduce_sum(per_rank);
  std::string values, odd;
  for (int r = 0; r < comm.world(); ++r) {
    char value[64];
    std::snprintf(value, sizeof(value), "%srank %d %.17g", r == 0 ? "" : ", ", r, per_rank[r].item<double>());
    values += value;
    if (per_rank[r].item<double>() != per_rank[0].item<double>()) odd += (odd.empty() ? "" : " ") + std::to_string(r);
  }
  throw Error("replicas diverged at step " + std::to_string(step) + ": " + std::to_string(differs.size(0)) +
              " parameters differ between ranks; first " + named[static_cast<size_t>(first)].first + ", which ranks " +
              odd + " hold differently from rank 0 (checksums: " + values + ")");
}

}  // namespace pix2pix::train
