// The single-generator variant of unpaired translation (--model onesided): one generator G (A to
// B) and one PatchGAN D that judges B-domain images, as CycleGAN's G_A and D_A, without G_B, D_B
// and the cycle. What keeps G(A) about A is a "deviation" loss on real B instead:
// lambda_deviation·|G(B) - B|, G must leave an image that is already in B as it is. G minimises
// the GAN loss (LSGAN by default) plus that; D sees generated images through an image pool. Half
// the networks of CycleGAN and two of its four generator passes: cheaper per step
// (docs/performance.md). No generator back: an unpaired val split is scored by the deviation
// PSNR of G(B) against B instead of the cycle (docs/training.md).
#pragma once

#include <memory>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/content_score.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/gan/image_pool.hpp"

namespace pix2pix::gan {

// What validation scores onesided by besides G(A) against B: the mean per-image PSNR of G(B)
// against B over the B images (how much of an image already in B the generator keeps; it has no
// generator back for a cycle). Unavailable when A and B differ in channels.
ContentScore deviation_score();

class OneSidedModel : public GanModel {
 public:
  OneSidedModel(const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                dist::Communicator& comm);

  StepLosses step(const data::Batch& batch) override;
  const std::vector<std::string>& loss_names() const override { return loss_names_; }
  std::string progress_status(const std::vector<double>& losses) const override;
  std::vector<NamedNetwork> networks() override;
  std::vector<optim::UpdateGroup*> update_groups() override { return {update_g_.get(), update_d_.get()}; }
  nets::Generator& translator() override { return generator_; }
  std::string capture_refusal() const override { return kImagePoolsChooseOnTheHost; }
  std::vector<std::pair<std::string, ImagePool*>> pools() override { return {{"fake_B", &fake_pool_}}; }
  std::string shape() const override;

 private:
  ModelOptions options_;
  double lambda_deviation_;  // --lambda-deviation
  torch::Device device_;
  std::vector<std::string> loss_names_;
  nets::Generator generator_{nullptr};
  nets::PatchDiscriminator discriminator_{nullptr};
  std::unique_ptr<optim::UpdateGroup> update_g_, update_d_;
  ImagePool fake_pool_;
};

}  // namespace pix2pix::gan
