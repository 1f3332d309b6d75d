#include "pix2pix/train/gan_model.hpp"

namespace pix2pix::train {

std::vector<double> StepLosses::host() const {
  const auto c = values.to(torch::kCPU).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace pix2pix::train
