// Pix2Pix (Isola et al. 2017): a U-Net G and a PatchGAN D on (A, B) pairs; D learns real pairs
// from generated ones, G fools D and stays close to B in L1 (times --lambda-l1), and with
// --aux-classifier also minimises the recognition loss of G(A) (recognition_loss.hpp).
#pragma once

#include <memory>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/gan/recognition_loss.hpp"

namespace pix2pix::gan {

class Pix2PixModel : public GanModel {
 public:
  // Builds and initialises G and D (--init-generator/--init-discriminator replace the initial
  // weights) on `device`, with their update groups. `recognition` (may be null) must outlive it.
  Pix2PixModel(const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
               dist::Communicator& comm, RecognitionLoss* recognition);

  StepLosses step(const data::Batch& batch) override;
  std::string capture_refusal() const override { return ""; }  // See Note [no host reads in the step]
  const std::vector<std::string>& loss_names() const override { return loss_names_; }
  std::string progress_status(const std::vector<double>& losses) const override;
  std::vector<NamedNetwork> networks() override;
  std::vector<optim::UpdateGroup*> update_groups() override { return {update_g_.get(), update_d_.get()}; }
  nets::Generator& translator() override { return generator_; }
  std::string shape() const override;

  nets::Generator& generator() { return generator_; }
  nets::PatchDiscriminator& discriminator() { return discriminator_; }

 private:
  ModelOptions options_;
  double lambda_l1_;  // --lambda-l1
  torch::Device device_;
  RecognitionLoss* recognition_;
  std::vector<std::string> loss_names_;
  nets::Generator generator_{nullptr};
  nets::PatchDiscriminator discriminator_{nullptr};
  std::unique_ptr<optim::UpdateGroup> update_g_, update_d_;
};

}  // namespace pix2pix::gan
