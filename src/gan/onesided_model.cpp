#include "pix2pix/gan/onesided_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pix2pix/common/error.hpp"
#include "pix2pix/gan/losses.hpp"
#include "pix2pix/metrics/generator_scores.hpp"
#include "pix2pix/metrics/sample_sheet.hpp"
#include "pix2pix/nets/model_shape.hpp"

namespace pix2pix::gan {

OneSidedModel::OneSidedModel(const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                             dist::Communicator& comm)
    : options_(options),
      lambda_deviation_(parameter(options, "lambda-deviation")),
      device_(device),
      fake_pool_(static_cast<std::int64_t>(parameter(options, "pool-size"))) {
  if (lambda_deviation_ > 0 && inputs.channels_a != inputs.channels_b)
    throw Error(options_.data + ": A has " + std::to_string(inputs.channels_a) + " channels and B " +
                std::to_string(inputs.channels_b) +
                "; the deviation loss feeds B to G (A to B), so it needs equal channels (--model onesided has no "
                "other loss that keeps G(A) about A)");
  loss_names_ = {"loss_D", "loss_G", "loss_G_dev"};
  // In CycleGAN's order of its A-to-B half: G, then D (the seed decides their initial weights).
  generator_ = nets::make_generator(generator_options(options_, inputs));
  discriminator_ = nets::PatchDiscriminator(discriminator_options(options_, inputs, inputs.channels_b));
  for (torch::nn::Module* m :
       {static_cast<torch::nn::Module*>(generator_.get()), static_cast<torch::nn::Module*>(discriminator_.get())}) {
    nets::init_weights(*m);
    m->to(device_);
  }
  update_g_ =
      std::make_unique<optim::UpdateGroup>("G", "generator", generator_->parameters(), options_.update, device_, comm);
  update_d_ = std::make_unique<optim::UpdateGroup>("D", "discriminator", discriminator_->parameters(), options_.update,
                                                   device_, comm);
}

std::string OneSidedModel::shape() const {
  return nets::describe_unpaired_shape("onesided", generator_->options(), discriminator_->options());
}

std::vector<NamedNetwork> OneSidedModel::networks() {
  // The keys of Pix2Pix's two networks: inference and `export --discriminator-out` find them as
  // in any run (the model shape says D takes B images alone).
  return {{"G", "generator", generator_.get()}, {"D", "discriminator", discriminator_.get()}};
}

std::string OneSidedModel::progress_status(const std::vector<double>& losses) const {
  char status[96];
  std::snprintf(status, sizeof(status), "D %.3f G %.3f dev %.3f", losses.at(0), losses.at(1), losses.at(2));
  return status;
}

StepLosses OneSidedModel::step(const data::Batch& batch) {
  const auto& real_a = batch.a;
  const auto& real_b = batch.b;
  const GanMode mode = options_.gan_mode;
  begin_phases();
  torch::Tensor fake_b;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    fake_b = generator_->forward(real_a);
  }
  end_phase(StepPhase::forward_g);

  // The generator first, with the discriminator frozen.
  set_requires_grad({discriminator_.get()}, false);
  update_g_->zero_grad();
  torch::Tensor pred_fake, same_b;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    pred_fake = discriminator_->forward(fake_b);
    if (lambda_deviation_ > 0) same_b = generator_->forward(real_b);
  }
  const auto g_loss = gan_loss(pred_fake, true, mode);
  const auto deviation_loss =
      lambda_deviation_ > 0 ? pixel_l1_loss(same_b, real_b) * lambda_deviation_ : torch::zeros({}, real_a.options());
  update_g_->backward(g_loss + deviation_loss);
  end_phase(StepPhase::g_step);
  update_g_->average();
  end_phase(StepPhase::g_sync);
  const torch::Tensor skipped_g = update_g_->step();
  end_phase(StepPhase::g_optimizer);

  // The discriminator: real B towards 1, pooled generated images towards 0.
  set_requires_grad({discriminator_.get()}, true);
  update_d_->zero_grad();
  const torch::Tensor pooled = fake_pool_.query(fake_b.detach());
  torch::Tensor real_pred, fake_pred;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    real_pred = discriminator_->forward(real_b);
    fake_pred = discriminator_->forward(pooled);
  }
  const auto d_loss = 0.5 * (gan_loss(real_pred, true, mode) + gan_loss(fake_pred, false, mode));
  update_d_->backward(d_loss);
  end_phase(StepPhase::d_step);
  update_d_->average();
  end_phase(StepPhase::d_sync);
  const torch::Tensor skipped_d = update_d_->step();
  end_phase(StepPhase::d_optimizer);

  // See Note [no host reads in the step]
  StepLosses out;
  out.values = torch::stack({loss_value(d_loss), loss_value(g_loss), loss_value(deviation_loss)});
  out.skipped = skipped_flags({skipped_g, skipped_d});  // update_groups() order
  return out;
}

ContentScore deviation_score() {
  ContentScore score;
  score.name = "deviation";
  score.metric = "deviation PSNR";
  score.why_unpaired =
      " of G(B) against B (the val split is unpaired and the model has no generator back; it measures what G "
      "keeps of an image, not the translation: see the samples)";
  score.reported = "deviation (G(B) against B)";
  score.unavailable = [](std::int64_t channels_a, std::int64_t channels_b) -> std::string {
    if (channels_a == channels_b) return "";
    // G takes A's channels: it cannot translate a B image.
    return "needs A and B of one channel count, G translating B images (A has " + std::to_string(channels_a) + ", B " +
           std::to_string(channels_b) + ")";
  };
  score.score = [](const ValImages& v) {
    ContentResult result;
    double sum = 0;  // score_pairs of B with itself
    for (std::int64_t first = 0; first < v.b.size(0); first += v.batch_size) {
      const auto b = v.b.narrow(0, first, std::min(v.batch_size, v.b.size(0) - first));
      sum += metrics::score_pairs(*v.generator, b, b, v.device, v.precision, v.samples_b, v.samples_b)
                 .psnr.sum()
                 .item<double>();
    }
    result.psnr = sum / static_cast<double>(v.b.size(0));
    // What an unpaired split shows without a generator back: A | G(A) | a B image (the target's look).
    const std::int64_t take = std::min({v.sample_count, v.a.size(0), v.b.size(0)});
    if (take > 0) {
      const auto a = v.a.narrow(0, 0, take);
      result.rows.push_back(metrics::sample_rows(
          metrics::display_pixels(a, v.samples_a),
          metrics::score_pairs(*v.generator, a, a, v.device, v.precision, v.samples_a, v.samples_b).fake_pixels,
          metrics::display_pixels(v.b.narrow(0, 0, take), v.samples_b)));
      result.labels = {"input A", "G(A)", "a B image"};
    }
    return result;
  };
  return score;
}

}  // namespace pix2pix::gan
