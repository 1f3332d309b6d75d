// CycleGAN (Zhu et al. 2017), as the reference's cycle_gan_model.py: G_A maps A to B and G_B B to
// A; D_A judges B-domain images (real B against G_A(A)), D_B A-domain ones. G_A and G_B are one
// update group, D_A and D_B another. The generators minimise the GAN losses (LSGAN by default),
// the cycle losses lambda_A·|G_B(G_A(A)) - A| and lambda_B·|G_A(G_B(B)) - B| and the identity
// losses lambda_B·lambda_idt·|G_A(B) - B| and lambda_A·lambda_idt·|G_B(A) - A|; each
// discriminator sees generated images through an image pool. The pairing of a batch is not used:
// A and B are two samples of two domains.
#pragma once

#include <memory>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/content_score.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/gan/image_pool.hpp"

namespace pix2pix::gan {

// What validation scores CycleGAN by besides G(A) against B: the mean per-image PSNR of
// A -> B -> A against A and B -> A -> B against B, over the images of both domains.
ContentScore cycle_score();

class CycleGanModel : public GanModel {
 public:
  CycleGanModel(const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                dist::Communicator& comm);

  StepLosses step(const data::Batch& batch) override;
  const std::vector<std::string>& loss_names() const override { return loss_names_; }
  std::string progress_status(const std::vector<double>& losses) const override;
  std::vector<NamedNetwork> networks() override;
  std::vector<optim::UpdateGroup*> update_groups() override { return {update_g_.get(), update_d_.get()}; }
  nets::Generator& translator() override { return g_a_; }
  nets::Generator* reverse_translator() override { return &g_b_; }
  std::string capture_refusal() const override { return kImagePoolsChooseOnTheHost; }
  std::vector<std::pair<std::string, ImagePool*>> pools() override {
    return {{"fake_A", &fake_a_pool_}, {"fake_B", &fake_b_pool_}};
  }
  std::string shape() const override;

  nets::Generator& g_a() { return g_a_; }

 private:
  ModelOptions options_;
  double lambda_a_, lambda_b_, lambda_identity_;  // --lambda-A, --lambda-B, --lambda-identity
  torch::Device device_;
  std::vector<std::string> loss_names_;
  nets::Generator g_a_{nullptr}, g_b_{nullptr};
  nets::PatchDiscriminator d_a_{nullptr}, d_b_{nullptr};
  std::unique_ptr<optim::UpdateGroup> update_g_, update_d_;
  ImagePool fake_a_pool_, fake_b_pool_;
};

}  // namespace pix2pix::gan
