// CPU-only build: there is no NCCL backend; --comm nccl is refused with a clear message.
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/nccl_communicator.hpp"

namespace pix2pix::dist {

struct NcclCommunicator::State {};

bool nccl_compiled() {
  return false;
}
int nccl_data_type(torch::ScalarType) {
  throw Error("this build has no NCCL support");
}

NcclCommunicator::NcclCommunicator(int, double) {
  throw Error("--comm nccl: this build has no NCCL support (configure with PIX2PIX_WITH_CUDA=ON)");
}
NcclCommunicator::~NcclCommunicator() = default;
std::string NcclCommunicator::name() const {
  return "nccl (not compiled)";
}
void NcclCommunicator::run(torch::Tensor&, Op, int, const char*) {}
void NcclCommunicator::enqueue(torch::Tensor&, Op, int, const char*, ::CUevent_st*) {}
void NcclCommunicator::watch(const char*, std::int64_t, ::CUevent_st*) {}
void NcclCommunicator::watch_replay(const char*) {}
std::unique_ptr<PendingCollective> NcclCommunicator::start_allreduce_mean(torch::Tensor& tensor) {
  return Communicator::start_allreduce_mean(tensor);
}
void NcclCommunicator::allreduce_sum(torch::Tensor&) {}
void NcclCommunicator::allreduce_max(torch::Tensor&) {}
void NcclCommunicator::allreduce_mean(torch::Tensor&) {}
void NcclCommunicator::broadcast(torch::Tensor&, int) {}
void NcclCommunicator::barrier() {}

}  // namespace pix2pix::dist
