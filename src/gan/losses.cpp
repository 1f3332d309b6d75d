#include "pix2pix/gan/losses.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::gan {

namespace {
const Choices<GanMode> kGanModeChoices = {{"vanilla", GanMode::vanilla}, {"lsgan", GanMode::lsgan}};
}  // namespace

GanMode parse_gan_mode(const std::string& text) {
  return parse_choice(text, "--gan-mode", kGanModeChoices);
}
std::string to_string(GanMode value) {
  return choice_name(value, kGanModeChoices);
}

torch::Tensor gan_loss(const torch::Tensor& logits, bool target_is_real, GanMode mode) {
  const auto x = logits.to(torch::kFloat32);
  const auto target = target_is_real ? torch::ones_like(x) : torch::zeros_like(x);
  if (mode == GanMode::vanilla) return torch::binary_cross_entropy_with_logits(x, target);
  return torch::mse_loss(x, target);
}

torch::Tensor pixel_l1_loss(const torch::Tensor& fake, const torch::Tensor& real) {
  return torch::l1_loss(fake.to(torch::kFloat32), real.to(torch::kFloat32));
}

}  // namespace pix2pix::gan
