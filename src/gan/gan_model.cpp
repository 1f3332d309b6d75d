#include "pix2pix/gan/gan_model.hpp"

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/host_values.hpp"
#include "pix2pix/dist/fused_activation.hpp"

namespace pix2pix::gan {

torch::Tensor batch_norm_leaky_relu(torch::nn::Module& norm, const torch::Tensor& x, double slope) {
  if (auto* own = norm.as<torch::nn::BatchNorm2dImpl>()) return dist::batch_norm_leaky_relu(*own, x, slope);
  auto* synced = norm.as<nets::SyncBatchNorm2dImpl>();
  if (synced == nullptr) throw Error("batch norm and LeakyReLU: " + norm.name() + " is not a batch norm");
  if (synced->is_training() && synced->sum()) {
    if (auto y = dist::try_fused_batch_norm_over_ranks_leaky_relu(
            x, synced->weight, synced->bias, synced->running_mean, synced->running_var, nets::SyncBatchNorm2dImpl::kEps,
            nets::SyncBatchNorm2dImpl::kMomentum, synced->sum(), slope)) {
      synced->num_batches_tracked.add_(1);  // as its forward counts a training batch
      return *std::move(y);
    }
  }
  torch::Tensor y = synced->forward(x);
  return torch::leaky_relu_(y, slope);
}

torch::Tensor concat_batch_norm_relu(const torch::Tensor& skip, const torch::Tensor& inner, torch::nn::Module* norm) {
  if (norm == nullptr) return dist::concat_relu(skip, inner);
  if (auto* own = norm->as<torch::nn::BatchNorm2dImpl>()) return dist::concat_batch_norm_relu(*own, skip, inner);
  auto* synced = norm->as<nets::SyncBatchNorm2dImpl>();
  if (synced == nullptr) throw Error("concatenation, batch norm and ReLU: " + norm->name() + " is not a batch norm");
  if (synced->is_training() && synced->sum()) {
    if (auto out = dist::try_fused_concat_batch_norm_over_ranks_relu(
            skip, inner, synced->weight, synced->bias, synced->running_mean, synced->running_var,
            nets::SyncBatchNorm2dImpl::kEps, nets::SyncBatchNorm2dImpl::kMomentum, synced->sum())) {
      synced->num_batches_tracked.add_(1);  // as its forward counts a training batch
      return *std::move(out);
    }
  }
  return dist::concat_relu(skip, synced->forward(inner));
}

nets::GeneratorOptions generator_options(const ModelOptions& options, const ModelInputs& inputs) {
  nets::GeneratorOptions g{inputs.channels_a, inputs.channels_b, options.num_downs,
                           options.ngf,       options.norm,      options.dropout};
  g.arch = options.net_g;
  g.n_blocks = options.n_blocks;
  g.batch_stats_sum = inputs.batch_stats_sum;
  if (inputs.fused_kernels) {
    g.norm_activation = batch_norm_leaky_relu;
    g.concat_activation = concat_batch_norm_relu;
  }
  if (g.arch == nets::GeneratorArch::resnet) g.num_downs = 0;
  if (g.arch == nets::GeneratorArch::unet && g.num_downs == 0) g.num_downs = nets::unet_depth_for(inputs.train_side);
  nets::check_generator_input(g, inputs.train_side, inputs.train_side, "training images (after cropping)");
  nets::patch_output_side(inputs.train_side, options.n_layers_d);
  nets::check_generator_input(g, inputs.val_height, inputs.val_width, "val images");
  return g;
}

nets::DiscriminatorOptions discriminator_options(const ModelOptions& options, const ModelInputs& inputs,
                                                 std::int64_t channels) {
  nets::DiscriminatorOptions d{channels, options.ndf, options.n_layers_d, options.norm};
  d.batch_stats_sum = inputs.batch_stats_sum;
  if (inputs.fused_kernels) {
    d.first_layer_activation = dist::bias_leaky_relu;
    d.norm_activation = batch_norm_leaky_relu;
  }
  return d;
}

void set_requires_grad(const std::vector<torch::nn::Module*>& modules, bool flag) {
  for (auto* module : modules)
    for (auto& p : module->parameters()) p.set_requires_grad(flag);
}

torch::Tensor loss_value(const torch::Tensor& loss) {
  return loss.detach().to(torch::kFloat64);
}

std::vector<double> StepLosses::host() const {
  return host_doubles(values);
}

std::vector<bool> StepLosses::skipped_host() const {
  std::vector<bool> out;
  for (const double flag : host_doubles(skipped)) out.push_back(flag != 0);
  return out;
}

torch::Tensor skipped_flags(const std::vector<torch::Tensor>& skipped) {
  return torch::stack(skipped).to(torch::kFloat64);
}

}  // namespace pix2pix::gan
