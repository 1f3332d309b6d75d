// Replica consistency across ranks, for any set of networks: rank 0's state to everyone, and
// checksums that prove every rank holds the same.
#pragma once

#include <cstdint>
#include <vector>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/named_network.hpp"

namespace pix2pix::train {

// Collective: rank 0's parameters (unless `buffers_only`) and buffers to every rank.
void broadcast_from_rank0(dist::Communicator& comm, const std::vector<gan::NamedNetwork>& networks, bool buffers_only);

// Collective: checksums of every parameter agree on all ranks; otherwise Error (on every rank)
// naming the first that differs (as label.parameter), which ranks hold it differently and `step`.
void verify_replicas(dist::Communicator& comm, const std::vector<gan::NamedNetwork>& networks, std::int64_t step);

}  // namespace pix2pix::train
