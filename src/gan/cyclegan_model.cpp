#include "pix2pix/gan/cyclegan_model.hpp"

#include <algorithm>
#include <cstdio>

#include "pix2pix/common/error.hpp"
#include "pix2pix/gan/losses.hpp"
#include "pix2pix/metrics/generator_scores.hpp"
#include "pix2pix/metrics/sample_sheet.hpp"
#include "pix2pix/nets/model_shape.hpp"

namespace pix2pix::gan {
namespace {

std::vector<torch::Tensor> joined(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  std::vector<torch::Tensor> all = a;
  all.insert(all.end(), b.begin(), b.end());
  return all;
}

}  // namespace

CycleGanModel::CycleGanModel(const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                             dist::Communicator& comm)
    : options_(options),
      lambda_a_(parameter(options, "lambda-A")),
      lambda_b_(parameter(options, "lambda-B")),
      lambda_identity_(parameter(options, "lambda-identity")),
      device_(device),
      fake_a_pool_(static_cast<std::int64_t>(parameter(options, "pool-size"))),
      fake_b_pool_(static_cast<std::int64_t>(parameter(options, "pool-size"))) {
  if (lambda_identity_ > 0 && inputs.channels_a != inputs.channels_b)
    throw Error(options_.data + ": A has " + std::to_string(inputs.channels_a) + " channels and B " +
                std::to_string(inputs.channels_b) +
                "; the identity loss feeds B to G_A (A to B) and A to G_B, so it needs equal channels: pass "
                "--lambda-identity 0");
  loss_names_ = {"loss_D_A", "loss_G_A", "loss_cycle_A", "loss_idt_A",
                 "loss_D_B", "loss_G_B", "loss_cycle_B", "loss_idt_B"};

  const nets::GeneratorOptions ab = generator_options(options_, inputs);
  nets::GeneratorOptions ba = ab;
  std::swap(ba.in_channels, ba.out_channels);

  // In the reference's order: G_A, G_B, D_A, D_B (the seed decides their initial weights).
  g_a_ = nets::make_generator(ab);
  g_b_ = nets::make_generator(ba);
  d_a_ = nets::PatchDiscriminator(discriminator_options(options_, inputs, inputs.channels_b));
  d_b_ = nets::PatchDiscriminator(discriminator_options(options_, inputs, inputs.channels_a));
  for (torch::nn::Module* m :
       {static_cast<torch::nn::Module*>(g_a_.get()), static_cast<torch::nn::Module*>(g_b_.get()),
        static_cast<torch::nn::Module*>(d_a_.get()), static_cast<torch::nn::Module*>(d_b_.get())}) {
    nets::init_weights(*m);
    m->to(device_);
  }
  update_g_ = std::make_unique<optim::UpdateGroup>("G", "generators", joined(g_a_->parameters(), g_b_->parameters()),
                                                   options_.update, device_, comm);
  update_d_ = std::make_unique<optim::UpdateGroup>(
      "D", "discriminators", joined(d_a_->parameters(), d_b_->parameters()), options_.update, device_, comm);
}

std::string CycleGanModel::shape() const {
  return nets::describe_unpaired_shape("cyclegan", g_a_->options(), d_a_->options());
}

std::vector<NamedNetwork> CycleGanModel::networks() {
  // G_A is "generator", so inference finds the A-to-B translator in any checkpoint of the run.
  return {{"G_A", "generator", g_a_.get()},
          {"G_B", "generator_ba", g_b_.get()},
          {"D_A", "discriminator_b", d_a_.get()},
          {"D_B", "discriminator_a", d_b_.get()}};
}

std::string CycleGanModel::progress_status(const std::vector<double>& losses) const {
  char status[160];
  std::snprintf(status, sizeof(status), "D %.3f/%.3f G %.3f/%.3f cyc %.3f/%.3f", losses.at(0), losses.at(4),
                losses.at(1), losses.at(5), losses.at(2), losses.at(6));
  return status;
}

StepLosses CycleGanModel::step(const data::Batch& batch) {
  const auto& real_a = batch.a;
  const auto& real_b = batch.b;
  const GanMode mode = options_.gan_mode;
  begin_phases();
  torch::Tensor fake_b, rec_a, fake_a, rec_b;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    fake_b = g_a_->forward(real_a);
    rec_a = g_b_->forward(fake_b);
    fake_a = g_b_->forward(real_b);
    rec_b = g_a_->forward(fake_a);
  }
  end_phase(StepPhase::forward_g);

  // The generators first (the reference's order), with the discriminators frozen.
  set_requires_grad({d_a_.get(), d_b_.get()}, false);
  update_g_->zero_grad();
  torch::Tensor idt_a_loss, idt_b_loss, pred_fake_b, pred_fake_a;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    pred_fake_b = d_a_->forward(fake_b);
    pred_fake_a = d_b_->forward(fake_a);
  }
  if (lambda_identity_ > 0) {
    torch::Tensor idt_a, idt_b;
    {
      optim::AutocastGuard autocast(device_, options_.update.precision);
      idt_a = g_a_->forward(real_b);
      idt_b = g_b_->forward(real_a);
    }
    idt_a_loss = pixel_l1_loss(idt_a, real_b) * (lambda_b_ * lambda_identity_);
    idt_b_loss = pixel_l1_loss(idt_b, real_a) * (lambda_a_ * lambda_identity_);
  } else {
    idt_a_loss = idt_b_loss = torch::zeros({}, real_a.options());
  }
  const auto g_a_loss = gan_loss(pred_fake_b, true, mode);
  const auto g_b_loss = gan_loss(pred_fake_a, true, mode);
  const auto cycle_a_loss = pixel_l1_loss(rec_a, real_a) * lambda_a_;
  const auto cycle_b_loss = pixel_l1_loss(rec_b, real_b) * lambda_b_;
  update_g_->backward(g_a_loss + g_b_loss + cycle_a_loss + cycle_b_loss + idt_a_loss + idt_b_loss);
  end_phase(StepPhase::g_step);
  update_g_->average();
  end_phase(StepPhase::g_sync);
  const torch::Tensor skipped_g = update_g_->step();
  end_phase(StepPhase::g_optimizer);

  // The discriminators: real towards 1, pooled generated images towards 0.
  set_requires_grad({d_a_.get(), d_b_.get()}, true);
  update_d_->zero_grad();
  const torch::Tensor pooled_b = fake_b_pool_.query(fake_b.detach());
  const torch::Tensor pooled_a = fake_a_pool_.query(fake_a.detach());
  torch::Tensor real_b_pred, fake_b_pred, real_a_pred, fake_a_pred;
  {
    optim::AutocastGuard autocast(device_, options_.update.precision);
    real_b_pred = d_a_->forward(real_b);
    fake_b_pred = d_a_->forward(pooled_b);
    real_a_pred = d_b_->forward(real_a);
    fake_a_pred = d_b_->forward(pooled_a);
  }
  const auto d_a_loss = 0.5 * (gan_loss(real_b_pred, true, mode) + gan_loss(fake_b_pred, false, mode));
  const auto d_b_loss = 0.5 * (gan_loss(real_a_pred, true, mode) + gan_loss(fake_a_pred, false, mode));
  update_d_->backward(d_a_loss + d_b_loss);
  end_phase(StepPhase::d_step);
  update_d_->average();
  end_phase(StepPhase::d_sync);
  const torch::Tensor skipped_d = update_d_->step();
  end_phase(StepPhase::d_optimizer);

  // See Note [no host reads in the step]
  StepLosses out;
  out.values =
      torch::stack({loss_value(d_a_loss), loss_value(g_a_loss), loss_value(cycle_a_loss), loss_value(idt_a_loss),
                    loss_value(d_b_loss), loss_value(g_b_loss), loss_value(cycle_b_loss), loss_value(idt_b_loss)});
  out.skipped = skipped_flags({skipped_g, skipped_d});  // update_groups() order
  return out;
}

ContentScore cycle_score() {
  ContentScore score;
  score.name = "cycle";
  score.metric = "cycle-reconstruction PSNR";
  score.why_unpaired = " of A -> B -> A and B -> A -> B (the val split is unpaired)";
  score.reported = "cycle-reconstruction";
  score.score = [](const ValImages& v) {
    if (v.generator == nullptr || v.back == nullptr)
      throw Error("the cycle-reconstruction PSNR needs both generators, A to B and back");
    ContentResult result;
    double sum = 0;
    for (const bool from_a : {true, false}) {
      const torch::Tensor& images = from_a ? v.a : v.b;
      for (std::int64_t first = 0; first < images.size(0); first += v.batch_size) {
        const std::int64_t count = std::min(v.batch_size, images.size(0) - first);
        const auto x = images.narrow(0, first, count);
        const metrics::CycleScores scores =
            from_a ? metrics::score_cycle(*v.generator, *v.back, x, v.device, v.precision, v.samples_a)
                   : metrics::score_cycle(*v.back, *v.generator, x, v.device, v.precision, v.samples_b);
        sum += scores.psnr.sum().item<double>();
        if (from_a && first < v.sample_count) {
          const std::int64_t take = std::min(count, v.sample_count - first);
          result.rows.push_back(metrics::sample_rows(metrics::display_pixels(x.narrow(0, 0, take), v.samples_a),
                                                     scores.there_pixels.narrow(0, 0, take),
                                                     scores.back_pixels.narrow(0, 0, take)));
          result.labels = {"input A", "G(A)", "back to A"};
        }
      }
    }
    result.psnr = sum / static_cast<double>(v.a.size(0) + v.b.size(0));
    return result;
  };
  return score;
}

}  // namespace pix2pix::gan
