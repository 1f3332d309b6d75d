// Note [stream ordering without c10::cuda]: Debian's CPU LibTorch ships c10/cuda headers but no
// libc10_cuda, so LibTorch's current-stream API cannot be linked in CI. LibTorch computes on the
// legacy default stream unless told otherwise, so NCCL work is ordered against that stream (or the
// one a CUDA graph captures on: See Note [the compute stream]) with raw CUDA events: record on it
// -> NCCL stream waits -> collective -> record -> it waits.
// Note [no host wait]: after enqueueing, run() returns; the collective's completion event goes to
// a CollectiveWatchdog thread that polls it and ncclCommGetAsyncError, and on an error or after
// --collective-timeout aborts the communicator, prints the report and ends the process (the
// launcher ends the job). The host waits only in barrier() (and callers that read a device
// result). Later work on the compute stream waits for the collective on the device, which is also
// what makes freeing a bucket right after run() safe: the caching allocator reuses its memory
// only for the compute stream's work, ordered after the collective.
// Note [host tensors over MPI]: host tensors (the stop poll at every step, epoch loss sums, rank
// 0's decisions, strings) go through MPI, not NCCL. Through NCCL such a tensor would be copied
// to the GPU and its collective ordered after all compute queued so far, and its result copied
// back: a full device synchronisation at every step's stop poll, which ends the host's lead over
// the device. MPI involves no device. The two channels never wait for each other: every rank
// issues the same sequence on each, and NCCL's are already queued when MPI's block.
#include "pix2pix/dist/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <limits>
#include <mutex>
#include <vector>

#include "pix2pix/dist/collective_watchdog.hpp"
#include "pix2pix/dist/cuda_check.hpp"
#include "pix2pix/dist/mpi_check.hpp"
#include "pix2pix/dist/mpi_communicator.hpp"
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
  int device = 0;
  std::atomic<bool> aborted{false};
  // One completion event per collective in flight, recycled by the watchdog when it completes.
  std::mutex events_mutex;
  std::vector<cudaEvent_t> free_events, all_events;
  std::unique_ptr<CollectiveWatchdog> watchdog;
  std::unique_ptr<MpiCommunicator> host;  // See Note [host tensors over MPI]

  cudaEvent_t take_event() {
    std::lock_guard<std::mutex> lock(events_mutex);
    if (!free_events.empty()) {
      cudaEvent_t e = free_events.back();
      free_events.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    all_events.push_back(e);
    return e;
  }
  void give_back(cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(events_mutex);
    free_events.push_back(e);
  }
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
  state_->host = std::make_unique<MpiCommunicator>(timeout_seconds);
  State* state = state_.get();
  state_->watchdog = std::make_unique<CollectiveWatchdog>(
      rank_, timeout_seconds,
      [state](const std::string& report) {
        // On the watchdog thread: MPI is FUNNELED (main thread only), so no MPI_Abort here; this
        // process ends and the launcher (mpirun, srun --kill-on-bad-exit) ends the others.
        state->aborted = true;
        ncclCommAbort(state->comm);
        std::fprintf(stderr, "NCCL: %s; ending the job\n", report.c_str());
        std::fflush(stderr);
        _exit(1);
      },
      [device_index] { cudaSetDevice(device_index); });
}

NcclCommunicator::~NcclCommunicator() {
  // No throwing here: release what exists; an aborted communicator must not be destroyed again.
  // Collectives still in flight finish first (or the watchdog ends the process).
  if (state_->watchdog && !state_->aborted) state_->watchdog->wait_all();
  state_->watchdog.reset();
  if (state_->comm != nullptr && !state_->aborted) ncclCommDestroy(state_->comm);
  for (cudaEvent_t e : state_->all_events) cudaEventDestroy(e);
  if (state_->compute_done != nullptr) cudaEventDestroy(state_->compute_done);
  if (state_->stream != nullptr) cudaStreamDestroy(state_->stream);
}

std::string NcclCommunicator::name() const {
  int version = 0;
  ncclGetVersion(&version);
  return "nccl " + std::to_string(version);
}

// A world of one runs its collectives too (NCCL makes them copies on the device): a one-GPU job
// goes through the same calls, events and watchdog as N GPUs, and gpu-smoke's check of a single GPU
// checks them. Training does not pay for it: GradientSync sends nothing when it is alone.
void NcclCommunicator::run(torch::Tensor& tensor, Op op, int root, const char* what) {
  enqueue(tensor, op, root, what, nullptr);
}

namespace {

// Note [overlap on the GPU]: a bucket's all-reduce started from a gradient hook runs on NCCL's
// stream, ordered after the bucket's gradients by an event recorded on the compute stream when
// the hook runs (backward queued their kernels there before it), while backward goes on queueing
// on the compute stream. The compute stream waits for the all-reduce only in wait(), when
// GradientSync::average() is about to hand the gradients to the optimizer: DDP's reducer does the
// same (work->wait() in finalize_backward). A blocking collective (run) makes the compute stream
// wait at once, which is right for everything else and would serialise the rest of backward
// behind each bucket.
class StartedCollective final : public PendingCollective {
 public:
  StartedCollective(std::function<void(cudaEvent_t)> give_back, cudaEvent_t ready)
      : give_back_(std::move(give_back)), ready_(ready) {}
  ~StartedCollective() override {
    if (ready_ != nullptr) release();  // never waited for: later work is still ordered after it
  }
  void wait() override {
    if (ready_ != nullptr) release();
  }

 private:
  void release() {
    // the host does not wait (See Note [no host wait]); See Note [the compute stream]
    cudaStreamWaitEvent(static_cast<cudaStream_t>(compute_stream()), ready_, 0);
    give_back_(ready_);
    ready_ = nullptr;
  }
  std::function<void(cudaEvent_t)> give_back_;
  cudaEvent_t ready_;
};

}  // namespace

std::unique_ptr<PendingCollective> NcclCommunicator::start_allreduce_mean(torch::Tensor& tensor) {
  // Host tensors (through MPI) and ones that need a contiguous copy take the blocking path.
  if (!tensor.is_cuda() || !tensor.is_contiguous()) return Communicator::start_allreduce_mean(tensor);
  cudaEvent_t ready = state_->take_event();
  enqueue(tensor, Op::avg, 0, "allreduce_mean (started in backward)", ready);
  State* state = state_.get();
  return std::make_unique<StartedCollective>([state](cudaEvent_t e) { state->give_back(e); }, ready);
}

void NcclCommunicator::enqueue(torch::Tensor& tensor, Op op, int root, const char* what, cudaEvent_t ready) {
  if (!tensor.is_cuda()) {  // See Note [host tensors over MPI]
    switch (op) {
      case Op::sum:
        state_->host->allreduce_sum(tensor);
        break;
      case Op::max:
        state_->host->allreduce_max(tensor);
        break;
      case Op::avg:
        state_->host->allreduce_mean(tensor);
        break;
      case Op::broadcast:
        state_->host->broadcast(tensor, root);
        break;
    }
    return;
  }
  const bool staged = !tensor.is_contiguous();
  torch::Tensor t = staged ? tensor.contiguous() : tensor;
  if (t.numel() > std::numeric_limits<int>::max())
    throw Error("NcclCommunicator: tensor of " + std::to_string(t.numel()) + " elements is too large");
  const auto count = static_cast<size_t>(t.numel());
  const ncclDataType_t type = nccl_type(t.scalar_type());
  ++sequence_;

  const auto compute = static_cast<cudaStream_t>(compute_stream());  // See Note [the compute stream]
  CUDA_CHECK(cudaEventRecord(state_->compute_done, compute));
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
  cudaEvent_t done = state_->take_event();
  CUDA_CHECK(cudaEventRecord(done, state_->stream));
  // See Note [overlap on the GPU]: a started collective leaves the compute stream free until wait().
  if (ready != nullptr)
    CUDA_CHECK(cudaEventRecord(ready, state_->stream));
  else
    CUDA_CHECK(cudaStreamWaitEvent(compute, done, 0));
  const auto bytes = static_cast<std::int64_t>(count) * static_cast<std::int64_t>(t.element_size());
  // See Note [collectives inside a CUDA graph]
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(compute, &capture));
  if (capture == cudaStreamCaptureStatusNone)
    watch(what, bytes, done);
  else
    state_->give_back(done);
  if (staged) tensor.copy_(t);  // on the compute stream, after the collective
}

// Note [collectives inside a CUDA graph]: while a graph is captured (dist/step_graph.hpp) nothing
// runs: a collective's events become edges of the graph, and querying them is an error, so the
// watchdog is not given them. Each replay runs them all, and the replay as a whole is watched
// instead (watch_replay: an event recorded after it on the compute stream), with the same timeout
// and NCCL's asynchronous errors polled meanwhile: a rank lost during a replay still ends the job.
void NcclCommunicator::watch_replay(const char* what) {
  ++sequence_;
  const auto compute = static_cast<cudaStream_t>(compute_stream());
  cudaEvent_t done = state_->take_event();
  CUDA_CHECK(cudaEventRecord(done, compute));
  watch(what, 0, done);
}

void NcclCommunicator::watch(const char* what, std::int64_t bytes, cudaEvent_t done) {
  // See Note [no host wait]: the watchdog thread follows it from here.
  State* state = state_.get();
  state_->watchdog->watch(
      sequence_, what, bytes,
      [state, done]() -> CollectiveWatchdog::Status {
        const cudaError_t status = cudaEventQuery(done);
        if (status == cudaSuccess) return {true, ""};
        if (status != cudaErrorNotReady) return {false, std::string("CUDA: ") + cudaGetErrorString(status)};
        ncclResult_t async = ncclSuccess;
        const ncclResult_t polled = ncclCommGetAsyncError(state->comm, &async);
        if (polled != ncclSuccess) return {false, std::string("ncclCommGetAsyncError: ") + ncclGetErrorString(polled)};
        if (async != ncclSuccess) return {false, std::string("NCCL: ") + ncclGetErrorString(async)};
        return {false, ""};
      },
      [state, done] { state->give_back(done); });
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
  // A barrier is a host synchronisation point (benchmarks time between two): wait for real.
  auto token = torch::zeros({1}, torch::TensorOptions().device(torch::kCUDA, state_->device));
  run(token, Op::sum, 0, "barrier");
  state_->watchdog->wait_all();
}

}  // namespace pix2pix::dist
