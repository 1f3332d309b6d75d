#include "pix2pix/dist/communicator_factory.hpp"

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/dist/mpi_communicator.hpp"
#include "pix2pix/dist/mpi_session.hpp"
#include "pix2pix/dist/nccl_communicator.hpp"

namespace pix2pix::dist {

Backend parse_backend(const std::string& choice) {
  if (choice == "auto") return Backend::automatic;
  if (choice == "nccl") return Backend::nccl;
  if (choice == "mpi") return Backend::mpi;
  throw UsageError("--comm must be one of auto, nccl, mpi; got '" + choice + "'");
}

std::unique_ptr<Communicator> make_communicator(Backend backend, const torch::Device& device, const MpiSession& mpi,
                                                double timeout) {
  if (backend == Backend::nccl && !device.is_cuda()) throw UsageError("--comm nccl needs GPU ranks (--device cuda)");
  if (backend == Backend::automatic && mpi.world() == 1) return std::make_unique<LocalCommunicator>();
  if (backend == Backend::nccl || (backend == Backend::automatic && device.is_cuda() && nccl_compiled())) {
    prepare_shared_gpus(mpi.rank(), mpi.local_size());  // See Note [ranks sharing a GPU]: before NCCL starts
    return std::make_unique<NcclCommunicator>(device.index(), timeout);
  }
  return std::make_unique<MpiCommunicator>(timeout);
}

std::unique_ptr<Communicator> make_host_communicator(const MpiSession& mpi, double timeout) {
  if (mpi.world() == 1) return std::make_unique<LocalCommunicator>();
  return std::make_unique<MpiCommunicator>(timeout);
}

}  // namespace pix2pix::dist
