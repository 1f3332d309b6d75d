#include "support/mpi_devices.hpp"

#include <cstdlib>
#include <string>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/dist/mpi_communicator.hpp"
#include "pix2pix/dist/nccl_communicator.hpp"
#include "support/mpi_env.hpp"

namespace pix2pix::fixtures {

torch::Device test_device() {
  const char* chosen = std::getenv("PIX2PIX_TEST_DEVICE");
  const std::string name = chosen == nullptr ? "cpu" : chosen;
  if (name != "cpu" && name != "cuda") throw Error("PIX2PIX_TEST_DEVICE must be cpu or cuda; got '" + name + "'");
  return dist::choose_device(name, g_mpi->local_rank(), g_mpi->local_size());
}

std::unique_ptr<dist::Communicator> make_test_communicator(const torch::Device& device, double timeout_seconds) {
  if (device.is_cuda()) {
    dist::prepare_shared_gpus(g_mpi->rank(), g_mpi->local_size());  // See Note [ranks sharing a GPU]
    return std::make_unique<dist::NcclCommunicator>(device.index(), timeout_seconds);
  }
  return std::make_unique<dist::MpiCommunicator>(timeout_seconds);
}

void make_gpu_arithmetic_exact() {
  auto& context = at::globalContext();
  context.setAllowTF32CuDNN(false);
  context.setAllowTF32CuBLAS(false);
  context.setBenchmarkCuDNN(false);
  context.setDeterministicCuDNN(true);
}

}  // namespace pix2pix::fixtures
