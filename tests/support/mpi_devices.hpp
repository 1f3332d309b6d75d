// The device and communicator of the multi-rank tests. CI runs them on CPUs over MPI; a GPU node
// runs the same tests on its GPUs over NCCL (scripts/gpu-smoke.sh sets PIX2PIX_TEST_DEVICE=cuda),
// so that what CI proves on CPUs is proven there on the communicator training uses.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::fixtures {

// PIX2PIX_TEST_DEVICE: unset or "cpu" -> the CPU; "cuda" -> this rank's node-local GPU (an error
// when it has none). Anything else is an error naming the variable.
torch::Device test_device();

// The communicator training picks for `device` with more than one process: NCCL on a GPU (an
// NcclCommunicator at any world size, one included), MPI on the CPU.
std::unique_ptr<dist::Communicator> make_test_communicator(const torch::Device& device, double timeout_seconds = 60.0);

// Makes GPU arithmetic as repeatable as the CPU's for comparisons across processes: no TF32,
// deterministic cuDNN algorithms without autotuning. Nothing changes on the CPU.
void make_gpu_arithmetic_exact();

}  // namespace pix2pix::fixtures
