// Note [buckets]: one collective per parameter would pay the latency of ~100 small messages per
// step; one for everything would wait for the whole backward. Buckets of ~25 MiB sit between.
#include "pix2pix/dist/gradient_sync.hpp"

#include <torch/csrc/autograd/function_hook.h>

#include <algorithm>

#include "pix2pix/common/error.hpp"

namespace pix2pix::dist {
namespace {
constexpr std::int64_t kFirstBucketBytes = 1 << 20;  // DDP's first bucket
constexpr std::int64_t kTinyBytes = 64 << 10;        // See Note [no tiny buckets]
}  // namespace

class GradientSync::ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(GradientSync& sync, std::size_t parameter) : sync_(sync), parameter_(parameter) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    sync_.gradient_ready(parameter_);
    return outputs;
  }

 private:
  GradientSync& sync_;
  std::size_t parameter_;
};

GradientSync::GradientSync(Communicator& comm, std::vector<torch::Tensor> parameters, std::int64_t bucket_bytes,
                           bool overlap, torch::ScalarType wire_dtype)
    : comm_(comm), parameters_(std::move(parameters)) {
  if (bucket_bytes < 1) throw Error("--bucket-mb must be > 0");
  overlap = overlap && comm_.world() > 1;
  std::int64_t filled = 0;
  for (std::size_t k = parameters_.size(); k-- > 0;) {
    const auto& p = parameters_[k];
    const std::int64_t bytes = p.numel() * static_cast<std::int64_t>(p.element_size());
    const auto& first = buckets_.empty() ? p : parameters_[buckets_.back().front()];
    const bool small_first = overlap && buckets_.size() == 1;
    const std::int64_t cap = small_first ? std::min(bucket_bytes, kFirstBucketBytes) : bucket_bytes;
    // Note [no tiny buckets]: a parameter larger than --bucket-mb (a 33.6 MB decoder weight of the
    // reference U-Net) fills a bucket alone, and the 2 KB bias after it then made a bucket of its
    // own: a collective that moves nothing and pays a ring's full latency, 2(N-1) hops (at 64
    // ranks most of the latency term: docs/performance.md). A tensor of at most `tiny` bytes
    // (64 KiB, or 1/64 of the cap) never opens a bucket: it joins the open one, past the cap if
    // need be; and a bucket that holds only tiny tensors takes the next tensor whatever its size,
    // except the small first bucket of an overlapped sync, small on purpose so that it starts early.
    const std::int64_t tiny = std::min(kTinyBytes, cap / 64);
    const bool over = filled + bytes > cap && bytes > tiny && (filled > tiny || small_first);
    // A bucket is one buffer: one dtype and one device.
    if (buckets_.empty() || over || p.scalar_type() != first.scalar_type() || p.device() != first.device()) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().push_back(k);
    filled += bytes;
  }
  if (comm_.world() == 1) return;
  // See Note [gradients as bucket views]
  torch::NoGradGuard no_grad;
  bucket_of_.resize(parameters_.size());
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const auto& bucket = buckets_[b];
    std::int64_t numel = 0;
    for (std::size_t k : bucket) numel += parameters_[k].numel();
    const auto& first = parameters_[bucket.front()];
    auto buffer = torch::zeros({numel}, torch::TensorOptions().dtype(first.scalar_type()).device(first.device()));
    std::int64_t offset = 0;
    for (std::size_t k : bucket) {
      auto& p = parameters_[k];
      // A dense parameter in another layout (NHWC: See Note [channels-last parameters]) gets a
      // view with its own strides, so that autograd accumulates into it without a copy.
      auto view = buffer.narrow(0, offset, p.numel()).as_strided(p.sizes(), p.strides());
      if (p.grad().defined()) view.copy_(p.grad());
      p.mutable_grad() = view;
      offset += p.numel();
      bucket_of_[k] = b;
    }
    // Note [bf16 gradients on the wire]
    // With --grad-dtype bf16, a float32 bucket is all-reduced as a bf16 copy and the mean widened
    // back into it (DDP's bf16_compress_hook): half the bytes on the network, for two passes over
    // the gradients and a sum rounded to 8 significant bits. Every rank gets the same bits, so the
    // replicas stay identical. Buckets of another dtype travel as they are.
    const bool compress = first.scalar_type() == torch::kFloat32 && wire_dtype != torch::kFloat32;
    wire_copies_.push_back(compress ? torch::empty({numel}, buffer.options().dtype(wire_dtype)) : torch::Tensor());
    buffers_.push_back(buffer);
  }
  // See Note [overlapped all-reduce]: CPU backward runs on the thread that calls it; CUDA backward
  // on LibTorch's device threads, which only some communicators may be called from: for buckets
  // on the GPU, those whose device collectives may start there (NCCL's, which order them after
  // the gradients with an event on the compute stream). Asking starts_from_any_thread() alone
  // left NCCL's overlap off while --overlap-grad-sync said on (issue 46).
  const bool all_cpu = std::all_of(parameters_.begin(), parameters_.end(), [](const auto& p) { return p.is_cpu(); });
  const bool all_cuda = std::all_of(parameters_.begin(), parameters_.end(), [](const auto& p) { return p.is_cuda(); });
  if (!overlap ||
      !(all_cpu || comm_.starts_from_any_thread() || (all_cuda && comm_.device_collectives_from_any_thread())))
    return;
  hook_accumulators();
  missing_.resize(buckets_.size());
  zero_grad();
}

void GradientSync::hook_accumulators() {
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    auto accumulator = torch::autograd::impl::grad_accumulator(parameters_[k]);
    if (!accumulator) throw Error("GradientSync: parameter " + std::to_string(k) + " does not require a gradient");
    const auto key = accumulator->add_post_hook(std::make_unique<ReadyHook>(*this, k));
    accumulators_.emplace_back(std::move(accumulator), key);
  }
}

// Note [accumulators made on the step's stream]
// Autograd's accumulator of a parameter's gradient is made once and kept while something holds
// it: the overlap's hooks do, from construction on. It runs on the CUDA stream that was current
// when it was made (its input's metadata), and autograd makes that stream wait for the stream
// that produced the gradient. Made on the legacy default stream, as at construction, a step
// captured on another stream (a CUDA graph: dist/step_graph.hpp) fails there: "operation would
// make the legacy stream depend on a capturing blocking stream" (the first GPU run of 2 ranks
// with --cuda-graph on). PyTorch asks the same of DDP: construct it on the side stream the graph
// is captured on. Here the step's first eager run renews the accumulators on that stream, once
// no autograd graph holds the old ones.
void GradientSync::renew_hooks() {
  if (accumulators_.empty()) return;
  std::vector<std::weak_ptr<torch::autograd::Node>> old;
  for (auto& [accumulator, key] : accumulators_) {
    accumulator->del_post_hook(key);
    old.push_back(accumulator);
  }
  accumulators_.clear();  // the last holders: each accumulator goes with its shared pointer
  for (std::size_t k = 0; k < old.size(); ++k)
    if (!old[k].expired())
      throw Error("GradientSync: parameter " + std::to_string(k) +
                  "'s gradient accumulator is still held by an autograd graph, so it cannot be made anew on the "
                  "step's stream (See Note [accumulators made on the step's stream])");
  hook_accumulators();
}

GradientSync::~GradientSync() {
  for (auto& [accumulator, key] : accumulators_) accumulator->del_post_hook(key);
  in_flight_.clear();  // each waits for its collective first: MPI may still write into a buffer
}

void GradientSync::zero_grad() {
  if (comm_.world() == 1) {
    for (auto& p : parameters_) p.mutable_grad().reset();
    return;
  }
  wait_started();  // a backward that average() did not follow: its collectives still complete, in order
  for (auto& buffer : buffers_) buffer.zero_();
  if (!overlaps()) return;
  for (std::size_t b = 0; b < buckets_.size(); ++b) missing_[b] = buckets_[b].size();
  started_during_backward_ = 0;
}

// Note [gradients dropped after the update]
// In a world of one, a gradient lives from the backward that makes it to zero_grad() before the
// next backward into it, so the generator's gradients (54 M float32 parameters of the reference
// U-Net, 208 MiB) were still held through the next step's forward passes and the whole
// discriminator step, where the step's memory peaks (docs/performance.md). Nothing reads them
// after the update: the update group drops them there, and the peak no longer holds them. A
// larger world keeps them, as views of buckets that last the run, as DDP's
// gradient_as_bucket_view does. See Note [gradients as bucket views]
void GradientSync::release() {
  if (comm_.world() > 1) return;
  for (auto& p : parameters_) p.mutable_grad().reset();
}

void GradientSync::gradient_ready(std::size_t k) {
  const std::size_t b = bucket_of_[k];
  if (missing_[b] == 0)
    throw Error("GradientSync: parameter " + std::to_string(k) +
                " received a second gradient in one step (two backward passes between zero_grad and average are not "
                "supported with the overlapped all-reduce)");
  if (--missing_[b] == 0) {
    std::size_t end = in_flight_.size();
    while (end < buckets_.size() && missing_[end] == 0) ++end;
    start_buckets(end);
    started_during_backward_ = in_flight_.size();
  }
  // MPI progresses a started collective only inside its calls: one poll per accumulated gradient.
  for (auto& pending : in_flight_)
    if (!pending->poll()) break;
}

torch::ScalarType GradientSync::wire_dtype(std::size_t k) const {
  return wire_copies_.at(k).defined() ? wire_copies_[k].scalar_type() : buffers_.at(k).scalar_type();
}

torch::Tensor& GradientSync::wire_for(std::size_t b) {
  if (!wire_copies_[b].defined()) return buffers_[b];
  wire_copies_[b].copy_(buffers_[b]);
  return wire_copies_[b];
}

void GradientSync::finish_bucket(std::size_t b) {
  if (wire_copies_[b].defined()) buffers_[b].copy_(wire_copies_[b]);
}

void GradientSync::start_buckets(std::size_t end) {
  torch::NoGradGuard no_grad;
  while (in_flight_.size() < end) in_flight_.push_back(comm_.start_allreduce_mean(wire_for(in_flight_.size())));
}

void GradientSync::wait_started() {
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < in_flight_.size(); ++b) {
    in_flight_[b]->wait();
    finish_bucket(b);
  }
  in_flight_.clear();
}

void GradientSync::average() {
  if (comm_.world() == 1) return;
  torch::NoGradGuard no_grad;
  // Every rank sends buckets of the same layout, also for a parameter that this backward did not
  // reach: its slice holds the zeros of zero_grad().
  if (!overlaps()) {
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      comm_.allreduce_mean(wire_for(b));
      finish_bucket(b);
    }
    return;
  }
  start_buckets(buckets_.size());
  wait_started();
  for (std::size_t b = 0; b < buckets_.size(); ++b) missing_[b] = buckets_[b].size();
}

}  // namespace pix2pix::dist
