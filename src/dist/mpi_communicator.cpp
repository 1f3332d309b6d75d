// Note [polled collectives]: MPI has no timeout on a blocking collective. MPI_I* + MPI_Test in a
// loop (with a short sleep once the fast path is over) costs nothing measurable next to a
// training step and turns a hang into an error report that names the collective.
#include "pix2pix/dist/mpi_communicator.hpp"

#include <c10/util/BFloat16.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/dist/mpi_check.hpp"
#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::dist {
namespace {

MPI_Datatype mpi_type(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat32:
      return MPI_FLOAT;
    case torch::kFloat64:
      return MPI_DOUBLE;
    case torch::kInt32:
      return MPI_INT32_T;
    case torch::kInt64:
      return MPI_INT64_T;
    case torch::kUInt8:
      return MPI_UINT8_T;
    case torch::kBool:
      return MPI_C_BOOL;
    case torch::kBFloat16:
      return MPI_UINT16_T;  // bit patterns: summed by bf16_sum, copied as they are by broadcasts
    default:
      return MPI_DATATYPE_NULL;  // fp16: reduced in fp32 (see stage_in)
  }
}

// MPI_Op for bf16 sums: each partial sum in float, rounded to nearest even as ATen rounds.
void bf16_sum(void* in, void* inout, int* count, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const c10::BFloat16*>(in);
  auto* b = static_cast<c10::BFloat16*>(inout);
  for (int i = 0; i < *count; ++i) b[i] = c10::BFloat16(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

// A contiguous CPU tensor MPI can work on directly, or a staged copy. `bits_ok`: bf16 may stay
// bf16 (sums through bf16_sum, broadcasts); a max needs values MPI knows.
torch::Tensor stage_in(const torch::Tensor& t, bool bits_ok) {
  if (t.numel() > std::numeric_limits<int>::max())
    throw Error("MpiCommunicator: a tensor of " + std::to_string(t.numel()) + " elements exceeds MPI's int count");
  auto staged = t.device().is_cpu() ? t : t.cpu();
  const bool bits = staged.scalar_type() == torch::kBFloat16;
  if (mpi_type(staged.scalar_type()) == MPI_DATATYPE_NULL || (bits && !bits_ok)) staged = staged.to(torch::kFloat32);
  return staged.contiguous();
}

void stage_out(torch::Tensor& original, const torch::Tensor& staged) {
  if (staged.data_ptr() != original.data_ptr()) original.copy_(staged);
}

}  // namespace

MpiCommunicator::MpiCommunicator(double timeout_seconds) : timeout_seconds_(timeout_seconds) {
  if (!(timeout_seconds > 0)) throw Error("--collective-timeout must be > 0 seconds");
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &world_));
  MPI_CHECK(MPI_Op_create(&bf16_sum, /*commute=*/1, &bf16_sum_));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (bf16_sum_ != MPI_OP_NULL) MPI_Op_free(&bf16_sum_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::wait(MPI_Request& request, const char* what, std::int64_t bytes, std::int64_t sequence) {
  if (sequence < 0) sequence = sequence_;
  const auto start = std::chrono::steady_clock::now();
  int done = 0;
  for (std::int64_t polls = 0;; ++polls) {
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    const double waited = seconds_since(start);
    if (waited > timeout_seconds_) {
      char message[512];
      std::snprintf(message, sizeof(message),
                    "rank %d: collective #%lld (%s, %lld bytes) did not complete within --collective-timeout %.0f s: "
                    "another rank died, hangs, or took a different path; ending the job",
                    rank_, static_cast<long long>(sequence), what, static_cast<long long>(bytes), timeout_seconds_);
      MpiSession::abort_job(message, 1);
    }
  }
}

MPI_Request MpiCommunicator::start_allreduce(torch::Tensor& staged, MPI_Op op) {
  MPI_Request request = MPI_REQUEST_NULL;
  ++sequence_;
  if (staged.scalar_type() == torch::kBFloat16) {
    if (op != MPI_SUM) throw Error("MpiCommunicator: bf16 tensors are only summed");
    op = bf16_sum_;
  }
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, staged.data_ptr(), static_cast<int>(staged.numel()),
                           mpi_type(staged.scalar_type()), op, comm_, &request));
  return request;
}

void MpiCommunicator::allreduce(torch::Tensor& tensor, MPI_Op op, const char* what) {
  if (world_ == 1) return;
  auto staged = stage_in(tensor, /*bits_ok=*/op == MPI_SUM);
  MPI_Request request = start_allreduce(staged, op);
  wait(request, what, staged.numel() * static_cast<std::int64_t>(staged.element_size()));
  stage_out(tensor, staged);
}

class MpiCommunicator::PendingAllreduce final : public PendingCollective {
 public:
  PendingAllreduce(MpiCommunicator& comm, torch::Tensor& tensor)
      : comm_(comm),
        tensor_(tensor),
        staged_(stage_in(tensor, /*bits_ok=*/true)),
        request_(comm.start_allreduce(staged_, MPI_SUM)),
        sequence_(comm.sequence_) {}
  ~PendingAllreduce() override {
    // MPI may still write into the buffer: never let it go unfinished (wait() ends the job if it hangs).
    if (request_ != MPI_REQUEST_NULL) try {
        comm_.wait(request_, "allreduce_mean", bytes(), sequence_);
      } catch (const std::exception&) {
      }
  }
  bool poll() override {
    int done = 1;
    // A completed request becomes MPI_REQUEST_NULL, which tests as done.
    MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
    return done != 0;
  }
  void wait() override {
    comm_.wait(request_, "allreduce_mean", bytes(), sequence_);
    stage_out(tensor_, staged_);
    tensor_.div_(comm_.world());
  }

 private:
  std::int64_t bytes() const { return staged_.numel() * static_cast<std::int64_t>(staged_.element_size()); }

  MpiCommunicator& comm_;
  torch::Tensor tensor_, staged_;
  MPI_Request request_;
  std::int64_t sequence_;
};

std::unique_ptr<PendingCollective> MpiCommunicator::start_allreduce_mean(torch::Tensor& tensor) {
  if (world_ == 1) return std::make_unique<PendingCollective>();
  return std::make_unique<PendingAllreduce>(*this, tensor);
}

void MpiCommunicator::allreduce_sum(torch::Tensor& tensor) {
  allreduce(tensor, MPI_SUM, "allreduce_sum");
}
void MpiCommunicator::allreduce_max(torch::Tensor& tensor) {
  allreduce(tensor, MPI_MAX, "allreduce_max");
}

void MpiCommunicator::broadcast(torch::Tensor& tensor, int root) {
  if (world_ == 1) return;
  auto staged = stage_in(tensor, /*bits_ok=*/true);
  MPI_Request request = MPI_REQUEST_NULL;
  ++sequence_;
  MPI_CHECK(MPI_Ibcast(staged.data_ptr(), static_cast<int>(staged.numel()), mpi_type(staged.scalar_type()), root, comm_,
                       &request));
  wait(request, "broadcast", staged.numel() * static_cast<std::int64_t>(staged.element_size()));
  stage_out(tensor, staged);
}

void MpiCommunicator::barrier() {
  if (world_ == 1) return;
  MPI_Request request = MPI_REQUEST_NULL;
  ++sequence_;
  MPI_CHECK(MPI_Ibarrier(comm_, &request));
  wait(request, "barrier", 0);
}

}  // namespace pix2pix::dist
