// Note [stream ordering without c10::cuda]: Debian's CPU LibTorch ships c10/cuda headers but no
// libc10_cuda, so LibTorch's current-stream API cannot be linked in CI. LibTorch computes on the
// legacy default stream unless told otherwise, so NCCL work is ordered against stream 0 with raw
// CUDA events: record on 0 -> NCCL stream waits -> collective -> record -> stream 0 waits.
#include "pix2pix/dist/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

#include "pix2pix/dist/cuda_check.hpp"
#include "pix2pix/dist/mpi_check.hpp"
#include "pix2pix/dist/mpi_session.hpp"

#define NCCL_CHECK(call)                                                                                \
  do {                                                                                                  \
    const ncclResult_t nccl_check_code_ = (call);                                                       \
    if (nccl_check_code_ != ncclSuccess)                                                                \
      throw ::pix2pix::Error(::pix2pix::describe_failed_call(                                           \
          "NCCL", #call, __FILE__, __LINE__,                                                            \
          std::string(ncclGetErrorString(nccl_check_code_)) + " (" + ncclGetLastError(nullptr) + ")")); \
  } while (0)

namespace pix2pix::dist {

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t compute_done = nullptr;
  cudaEvent_t collective_done = nullptr;
  int device = 0;
  bool aborted = false;
};

namespace {

ncclDataType_t nccl_type(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat32:
      return ncclFloat32;
    case torch::kFloat64:
      return ncclFloat64;
    case torch::kFloat16:
      return ncclFloat16;
    case torch::kBFloat16:
      return ncclBfloat16;
    case torch::kInt32:
      return ncclInt32;
    case torch::kInt64:
      return ncclInt64;
    case torch::kUInt8:
      return ncclUint8;
    default:
      throw Error("NcclCommunicator: unsupported tensor type " + std::string(c10::toString(type)));
  }
}

}  // namespace

bool nccl_compiled() {
  return true;
}

int nccl_data_type(torch::ScalarType type) {
  return static_cast<int>(nccl_type(type));
}

NcclCommunicator::NcclCommunicator(int device_index, double timeout_seconds)
    : state_(std::make_unique<State>()), timeout_seconds_(timeout_seconds) {
  if (!(timeout_seconds > 0)) throw Error("--collective-timeout must be > 0 seconds");
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_));
  state_->device = device_index;
  ncclUniqueId id{};
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
  CUDA_CHECK(cudaSetDevice(device_index));
  NCCL_CHECK(ncclCommInitRank(&state_->comm, world_, id, rank_));
  CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&state_->compute_done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&state_->collective_done, cudaEventDisableTiming));
}

NcclCommunicator::~NcclCommunicator() {
  // No throwing here: release what exists; an aborted communicator must not be destroyed again.
  if (state_->comm != nullptr && !state_->aborted) ncclCommDestroy(state_->comm);
  if (state_->collective_done != nullptr) cudaEventDestroy(state_->collective_done);
  if (state_->compute_done != nullptr) cudaEventDestroy(state_->compute_done);
  if (state_->stream != nullptr) cudaStreamDestroy(state_->stream);
}

std::string NcclCommunicator::name() const {
  int version = 0;
  ncclGetVersion(&version);
  return "nccl " + std::to_string(version);
}

void NcclCommunicator::run(torch::Tensor& tensor, Op op, int root, const char* what) {
  if (world_ == 1) return;
  // Host tensors (scalar helpers, decisions) travel through the GPU; device tensors stay put.
  const bool staged = !tensor.is_cuda() || !tensor.is_contiguous();
  torch::Tensor t = staged ? tensor.to(torch::Device(torch::kCUDA, state_->device)).contiguous() : tensor;
  if (t.numel() > std::numeric_limits<int>::max())
    throw Error("NcclCommunicator: tensor of " + std::to_string(t.numel()) + " elements is too large");
  const auto count = static_cast<size_t>(t.numel());
  const ncclDataType_t type = nccl_type(t.scalar_type());
  ++sequence_;

  CUDA_CHECK(cudaEventRecord(state_->compute_done, /*stream=*/0));
  CUDA_CHECK(cudaStreamWaitEvent(state_->stream, state_->compute_done, 0));
  switch (op) {
    case Op::sum:
      NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), count, type, ncclSum, state_->comm, state_->stream));
      break;
    case Op::max:
      NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), count, type, ncclMax, state_->comm, state_->stream));
      break;
    case Op::avg:
      NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), count, type, ncclAvg, state_->comm, state_->stream));
      break;
    case Op::broadcast:
      NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), count, type, root, state_->comm, state_->stream));
      break;
  }
  CUDA_CHECK(cudaEventRecord(state_->collective_done, state_->stream));
  CUDA_CHECK(cudaStreamWaitEvent(/*stream=*/0, state_->collective_done, 0));

  // Poll for completion and for NCCL's asynchronous errors (a peer that died or hangs).
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t polls = 0;; ++polls) {
    const cudaError_t status = cudaEventQuery(state_->collective_done);
    if (status == cudaSuccess) break;
    if (status != cudaErrorNotReady) CUDA_CHECK(status);
    ncclResult_t async = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(state_->comm, &async));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (async != ncclSuccess || waited > timeout_seconds_) {
      state_->aborted = true;
      ncclCommAbort(state_->comm);
      char message[512];
      std::snprintf(message, sizeof(message), "rank %d: NCCL collective #%lld (%s, %zu elements) %s; ending the job",
                    rank_, static_cast<long long>(sequence_), what, count,
                    async != ncclSuccess ? ncclGetErrorString(async) : "did not complete within --collective-timeout");
      MpiSession::abort_job(message, 1);
    }
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (staged) tensor.copy_(t);
}

void NcclCommunicator::allreduce_sum(torch::Tensor& tensor) {
  run(tensor, Op::sum, 0, "allreduce_sum");
}
void NcclCommunicator::allreduce_max(torch::Tensor& tensor) {
  run(tensor, Op::max, 0, "allreduce_max");
}
void NcclCommunicator::allreduce_mean(torch::Tensor& tensor) {
  run(tensor, Op::avg, 0, "allreduce_mean");
}
void NcclCommunicator::broadcast(torch::Tensor& tensor, int root) {
  run(tensor, Op::broadcast, root, "broadcast");
}

void NcclCommunicator::barrier() {
  auto token = torch::zeros({1}, torch::TensorOptions().device(torch::kCUDA, state_->device));
  run(token, Op::sum, 0, "barrier");
}

}  // namespace pix2pix::dist
