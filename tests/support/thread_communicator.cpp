#include "support/thread_communicator.hpp"

#include <exception>
#include <thread>

namespace pix2pix::fixtures {

torch::Tensor ThreadGroup::exchange(int rank, const torch::Tensor& mine,
                                    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& combine) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Wait until the previous collective has been collected by everyone.
  changed_.wait(lock, [this] { return departed_ == 0; });
  slots_[static_cast<size_t>(rank)] = mine.clone();
  const long generation = generation_;
  if (++arrived_ == world_) {
    result_ = combine(slots_);
    ++generation_;
    changed_.notify_all();
  } else {
    changed_.wait(lock, [&] { return generation_ != generation; });
  }
  torch::Tensor out = result_.clone();
  if (++departed_ == world_) {
    arrived_ = 0;
    departed_ = 0;
    changed_.notify_all();
  }
  return out;
}

void ThreadCommunicator::allreduce_sum(torch::Tensor& tensor) {
  tensor.copy_(group_->exchange(rank_, tensor, [](const std::vector<torch::Tensor>& all) {
    auto sum = all[0].clone();
    for (size_t i = 1; i < all.size(); ++i) sum += all[i];
    return sum;
  }));
}

void ThreadCommunicator::allreduce_max(torch::Tensor& tensor) {
  tensor.copy_(group_->exchange(rank_, tensor, [](const std::vector<torch::Tensor>& all) {
    auto top = all[0].clone();
    for (size_t i = 1; i < all.size(); ++i) top = torch::maximum(top, all[i]);
    return top;
  }));
}

void ThreadCommunicator::broadcast(torch::Tensor& tensor, int root) {
  tensor.copy_(group_->exchange(
      rank_, tensor, [root](const std::vector<torch::Tensor>& all) { return all[static_cast<size_t>(root)].clone(); }));
}

void ThreadCommunicator::barrier() {
  group_->exchange(rank_, torch::zeros({1}), [](const std::vector<torch::Tensor>& all) { return all[0]; });
}

void run_ranks(int world, const std::function<void(ThreadCommunicator&)>& body) {
  auto group = std::make_shared<ThreadGroup>(world);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        ThreadCommunicator comm(group, r);
        body(comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace pix2pix::fixtures
