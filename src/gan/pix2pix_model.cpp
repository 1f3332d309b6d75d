#include "pix2pix/gan/pix2pix_model.hpp"

#include <cstdio>

#include "pix2pix/common/error.hpp"
#include "pix2pix/gan/losses.hpp"
#include "pix2pix/interop/reference_state_dict.hpp"
#include "pix2pix/nets/model_shape.hpp"

namespace pix2pix::gan {

Pix2PixModel::Pix2PixModel(const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                           dist::Communicator& comm, RecognitionLoss* recognition)
    : options_(options), lambda_l1_(parameter(options, "lambda-l1")), device_(device), recognition_(recognition) {
  loss_names_ = {"loss_D", "loss_G_gan", "loss_G_l1"};
  if (recognition_) loss_names_.push_back("loss_G_aux");
  generator_ = nets::make_generator(generator_options(options_, inputs));
  discriminator_ =
      nets::PatchDiscriminator(discriminator_options(options_, inputs, inputs.channels_a + inputs.channels_b));
  nets::init_weights(*generator_);
  nets::init_weights(*discriminator_);
  // --init-generator/--init-discriminator (e.g. weights the PyTorch reference trained): every rank
  // reads the file, so a bad one fails every rank alike; a resumed run then replaces them.
  const auto& init_g = options_.init_generator;
  const auto& init_d = options_.init_discriminator;
  if (!init_g.empty()) interop::load_state_dict(*generator_, interop::read_torch_state_dict(init_g), init_g);
  if (!init_d.empty()) interop::load_state_dict(*discriminator_, interop::read_torch_state_dict(init_d), init_d);
  generator_->to(device_);
  discriminator_->to(device_);
  update_g_ =
      std::make_unique<optim::UpdateGroup>("G", "generator", generator_->parameters(), options_.update, device_, comm);
  update_d_ = std::make_unique<optim::UpdateGroup>("D", "discriminator", discriminator_->parameters(), options_.update,
                                                   device_, comm);
}

std::string Pix2PixModel::shape() const {
  return nets::describe_model_shape(generator_->options(), discriminator_->options());
}

std::vector<NamedNetwork> Pix2PixModel::networks() {
  return {{"G", "generator", generator_.get()}, {"D", "discriminator", discriminator_.get()}};
}

std::string Pix2PixModel::progress_status(const std::vector<double>& losses) const {
  char status[128];
  std::snprintf(status, sizeof(status), "D %.3f G %.3f L1 %.3f", losses.at(0), losses.at(1), losses.at(2));
  return status;
}

StepLosses Pix2PixModel::step(const data::Batch& batch) {
  const auto& b = batch.b;
  // See Note [the batch cast once]: A is read by three forward passes, B by one (its L1 loss
  // keeps the float32 B).
  const torch::Tensor a = optim::in_compute_dtype(batch.a, options_.update.precision);
  begin_phases();
  torch::Tensor fake_b;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    fake_b = generator_->forward(a);
  }
  end_phase(StepPhase::forward_g);

  // D: real pairs towards 1, generated pairs towards 0.
  set_requires_grad({discriminator_.get()}, true);
  update_d_->zero_grad();
  torch::Tensor pred_fake, pred_real;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    pred_fake = discriminator_->forward(torch::cat({a, fake_b.detach()}, 1));
    pred_real = discriminator_->forward(torch::cat({a, optim::in_compute_dtype(b, options_.update.precision)}, 1));
  }
  const auto loss_d =
      0.5 * (gan_loss(pred_fake, false, options_.gan_mode) + gan_loss(pred_real, true, options_.gan_mode));
  update_d_->backward(loss_d);
  end_phase(StepPhase::d_step);
  update_d_->average();
  end_phase(StepPhase::d_sync);
  const torch::Tensor skipped_d = update_d_->step();
  end_phase(StepPhase::d_optimizer);

  // G: fool D, and stay close to B in L1.
  set_requires_grad({discriminator_.get()}, false);
  update_g_->zero_grad();
  torch::Tensor pred;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    pred = discriminator_->forward(torch::cat({a, fake_b}, 1));
  }
  const auto loss_g_gan = gan_loss(pred, true, options_.gan_mode);
  const auto loss_g_l1 = pixel_l1_loss(fake_b, b) * lambda_l1_;
  torch::Tensor loss_g = loss_g_gan + loss_g_l1, loss_g_aux;
  if (recognition_) {
    if (!batch.labels.defined()) throw Error(options_.data + ": a train batch without labels");
    loss_g_aux = (*recognition_)(fake_b, batch.labels,
                                 options_.update.precision);  // See Note [recognition loss over the global batch]
    loss_g = loss_g + loss_g_aux;
  }
  update_g_->backward(loss_g);
  end_phase(StepPhase::g_step);
  update_g_->average();
  end_phase(StepPhase::g_sync);
  const torch::Tensor skipped_g = update_g_->step();
  set_requires_grad({discriminator_.get()}, true);
  end_phase(StepPhase::g_optimizer);

  // See Note [no host reads in the step]
  StepLosses out;
  std::vector<torch::Tensor> values = {loss_value(loss_d), loss_value(loss_g_gan), loss_value(loss_g_l1)};
  if (recognition_) values.push_back(loss_value(loss_g_aux));
  out.values = torch::stack(values);
  out.skipped = skipped_flags({skipped_g, skipped_d});  // update_groups() order
  return out;
}

}  // namespace pix2pix::gan
