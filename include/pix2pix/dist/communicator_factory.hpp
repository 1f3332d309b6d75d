// The one place a command's communicator is chosen: from --comm and the rank's device for the
// training commands, MPI between ranks for the inference commands (host tensors only).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::dist {

class MpiSession;

// --comm: auto (NCCL for GPU ranks when compiled in, MPI otherwise), nccl, or mpi (GPU tensors
// staged through host memory).
enum class Backend { automatic, nccl, mpi };
Backend parse_backend(const std::string& choice);  // UsageError naming --comm for anything else

// A training job's communicator. A single process needs no communication at all unless a backend
// is named (tests name mpi to run MPI's collectives at a world of one). UsageError for nccl on a
// CPU rank. `timeout`: seconds a collective may take (See Note [polled collectives]).
std::unique_ptr<Communicator> make_communicator(Backend backend, const torch::Device& device, const MpiSession& mpi,
                                                double timeout);

// evaluate and translate: ranks exchange host tensors through MPI; a single process is alone.
std::unique_ptr<Communicator> make_host_communicator(const MpiSession& mpi, double timeout);

}  // namespace pix2pix::dist
