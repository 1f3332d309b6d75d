// Replica consistency across ranks, for any set of networks: rank 0's state to everyone, and
// checksums that prove every rank holds the same; and rank 0's stop decision, which every rank
// then follows (both trainers: one stop protocol).
#pragma once

#include <cstdint>
#include <vector>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/named_network.hpp"
#include "pix2pix/train/early_stopping.hpp"

namespace pix2pix::train {

// Collective: rank 0's parameters (unless `buffers_only`) and buffers to every rank.
void broadcast_from_rank0(dist::Communicator& comm, const std::vector<gan::NamedNetwork>& networks, bool buffers_only);

// Collective: checksums of every parameter agree on all ranks; otherwise Error (on every rank)
// naming the first that differs (as label.parameter), which ranks hold it differently and `step`.
void verify_replicas(dist::Communicator& comm, const std::vector<gan::NamedNetwork>& networks, std::int64_t step);

// Collective: `decision` as rank 0 took it (stop, improved, best epoch and value, a non-finite value; the reason stays
// rank 0's, which reports it). What the other ranks pass in is ignored.
Decision decision_from_rank0(dist::Communicator& comm, Decision decision);

// Collective, polled by every rank at the same point: the stop signal any rank received (the
// highest number), 0 when none. A signal that reached only some ranks stops all of them there,
// and every rank names it.
int stop_signal_of_any_rank(dist::Communicator& comm);

}  // namespace pix2pix::train
