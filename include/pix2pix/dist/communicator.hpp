// The collective operations the trainer needs, behind one small interface chosen once from the
// device: NCCL on GPUs, MPI on CPUs (issue #4), and LocalCommunicator for a single process.
// Tensors are reduced in place; every rank must call the same operations in the same order.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

namespace pix2pix::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string name() const = 0;

  virtual void allreduce_sum(torch::Tensor& tensor) = 0;
  virtual void allreduce_max(torch::Tensor& tensor) = 0;
  virtual void broadcast(torch::Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;

  // Sum, then divide by the world size (backends with a native average may override).
  virtual void allreduce_mean(torch::Tensor& tensor);
  // Helpers for host scalars, built on the tensor operations.
  double allreduce_mean(double value);
  double allreduce_sum(double value);
  bool any(bool flag);
  // `text` of `root` on every rank.
  std::string broadcast_string(const std::string& text, int root);
};

// World of one: every collective is the identity.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  std::string name() const override { return "local"; }
  void allreduce_sum(torch::Tensor&) override {}
  void allreduce_max(torch::Tensor&) override {}
  void broadcast(torch::Tensor&, int) override {}
  void barrier() override {}
  void allreduce_mean(torch::Tensor&) override {}
};

}  // namespace pix2pix::dist
