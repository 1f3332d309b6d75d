#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::dist {

void Communicator::allreduce_mean(torch::Tensor& tensor) {
  allreduce_sum(tensor);
  tensor.div_(world());
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

bool Communicator::any(bool flag) {
  auto t = torch::tensor({flag ? 1.0 : 0.0}, torch::kFloat64);
  allreduce_max(t);
  return t.item<double>() > 0;
}

}  // namespace pix2pix::dist
