#include "pix2pix/dist/communicator.hpp"

#include <atomic>
#include <cstring>

namespace pix2pix::dist {

namespace {
std::atomic<void*> the_compute_stream{nullptr};  // See Note [the compute stream]
}  // namespace

void* compute_stream() {
  return the_compute_stream.load();
}

ComputeStreamScope::ComputeStreamScope(void* stream) : previous_(the_compute_stream.exchange(stream)) {}

ComputeStreamScope::~ComputeStreamScope() {
  the_compute_stream.store(previous_);
}

void Communicator::allreduce_mean(torch::Tensor& tensor) {
  allreduce_sum(tensor);
  tensor.div_(world());
}

std::unique_ptr<PendingCollective> Communicator::start_allreduce_mean(torch::Tensor& tensor) {
  allreduce_mean(tensor);
  return std::make_unique<PendingCollective>();
}

double Communicator::allreduce_mean(double value) {
  auto t = torch::tensor({value}, torch::kFloat64);
  allreduce_mean(t);
  return t.item<double>();
}

double Communicator::allreduce_sum(double value) {
  auto t = torch::tensor({value}, torch::kFloat64);
  allreduce_sum(t);
  return t.item<double>();
}

double Communicator::allreduce_max(double value) {
  auto t = torch::tensor({value}, torch::kFloat64);
  allreduce_max(t);
  return t.item<double>();
}

bool Communicator::any(bool flag) {
  auto t = torch::tensor({flag ? 1.0 : 0.0}, torch::kFloat64);
  allreduce_max(t);
  return t.item<double>() > 0;
}

std::string Communicator::broadcast_string(const std::string& text, int root) {
  auto size = torch::tensor({static_cast<std::int64_t>(text.size())}, torch::kInt64);
  broadcast(size, root);
  auto bytes = torch::zeros({size.item<std::int64_t>()}, torch::kUInt8);
  if (rank() == root) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  broadcast(bytes, root);
  return std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel()));
}

}  // namespace pix2pix::dist
