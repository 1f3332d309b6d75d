#include "pix2pix/dist/recording_communicator.hpp"

#include <filesystem>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/stopwatch.hpp"

namespace pix2pix::dist {
namespace {
std::int64_t bytes_of(const torch::Tensor& t) {
  return t.numel() * static_cast<std::int64_t>(t.element_size());
}
}  // namespace

RecordingCommunicator::RecordingCommunicator(std::unique_ptr<Communicator> inner, const std::string& path)
    : inner_(std::move(inner)) {
  std::error_code ec;
  const auto folder = std::filesystem::path(path).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder, ec);
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw Error("--collective-log: cannot write " + path);
  std::fprintf(file_, "event\tseq\tcollective\tbytes\tseconds\n");
  std::fflush(file_);
}

RecordingCommunicator::~RecordingCommunicator() {
  if (file_) std::fclose(file_);
}

void RecordingCommunicator::write(const char* event, std::int64_t seq, const char* name, std::int64_t bytes) {
  const double seconds = seconds_since(start_);
  std::fprintf(file_, "%s\t%lld\t%s\t%lld\t%.6f\n", event, static_cast<long long>(seq), name,
               static_cast<long long>(bytes), seconds);
  std::fflush(file_);
}

void RecordingCommunicator::record(const char* name, std::int64_t bytes, const std::function<void()>& run) {
  const std::int64_t seq = ++sequence_;
  // Flushed before the call: a rank that never returns has still written where it stopped.
  write("begin", seq, name, bytes);
  run();
  write("end", seq, name, bytes);
}

class RecordingCommunicator::PendingRecord final : public PendingCollective {
 public:
  PendingRecord(RecordingCommunicator& owner, std::int64_t seq, std::int64_t bytes,
                std::unique_ptr<PendingCollective> inner)
      : owner_(owner), seq_(seq), bytes_(bytes), inner_(std::move(inner)) {}
  bool poll() override { return inner_->poll(); }
  void wait() override {
    inner_->wait();
    owner_.write("end", seq_, "allreduce_mean", bytes_);
  }

 private:
  RecordingCommunicator& owner_;
  std::int64_t seq_, bytes_;
  std::unique_ptr<PendingCollective> inner_;
};

std::unique_ptr<PendingCollective> RecordingCommunicator::start_allreduce_mean(torch::Tensor& tensor) {
  const std::int64_t seq = ++sequence_;
  write("begin", seq, "allreduce_mean", bytes_of(tensor));
  return std::make_unique<PendingRecord>(*this, seq, bytes_of(tensor), inner_->start_allreduce_mean(tensor));
}

void RecordingCommunicator::allreduce_sum(torch::Tensor& tensor) {
  record("allreduce_sum", bytes_of(tensor), [&] { inner_->allreduce_sum(tensor); });
}
void RecordingCommunicator::allreduce_max(torch::Tensor& tensor) {
  record("allreduce_max", bytes_of(tensor), [&] { inner_->allreduce_max(tensor); });
}
void RecordingCommunicator::allreduce_mean(torch::Tensor& tensor) {
  record("allreduce_mean", bytes_of(tensor), [&] { inner_->allreduce_mean(tensor); });
}
void RecordingCommunicator::broadcast(torch::Tensor& tensor, int root) {
  record("broadcast", bytes_of(tensor), [&] { inner_->broadcast(tensor, root); });
}
void RecordingCommunicator::barrier() {
  record("barrier", 0, [&] { inner_->barrier(); });
}

}  // namespace pix2pix::dist
