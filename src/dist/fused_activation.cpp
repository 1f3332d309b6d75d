// See Note [fused bias and LeakyReLU], See Note [fused batch norm and LeakyReLU] and
// See Note [fused concatenation and ReLU] and See Note [fused concatenation, batch norm and ReLU]
// (dist/fused_activation.hpp). Which calls the kernels
// take, and ATen's operations for the rest; the kernels' autograd functions are the build's
// (fused_activation_cuda.cpp or _none.cpp).
#include "pix2pix/dist/fused_activation.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::dist {
namespace {

bool kernel_element_type(const torch::Tensor& t) {
  const auto type = t.scalar_type();
  return type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16;
}

bool nhwc_activation(const torch::Tensor& t) {
  return t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast) && kernel_element_type(t);
}

// A float32 [channels] tensor on `device`.
bool per_channel(const torch::Tensor& t, std::int64_t channels, const torch::Device& device) {
  return t.defined() && t.scalar_type() == torch::kFloat32 && t.dim() == 1 && t.size(0) == channels &&
         t.device() == device;
}

// "" where the bias kernels take (z, bias), else what they lack.
std::string bias_arguments_refused(const torch::Tensor& z, const torch::Tensor& bias) {
  if (!nhwc_activation(z) || !per_channel(bias, z.size(1), z.device()))
    return "an NHWC [N, C, H, W] tensor of float32, bf16 or fp16 and a float32 [C] bias on its device are needed";
  return "";
}

// "" where the batch norm kernels take x and a layer's parameters and running statistics, else what
// they lack.
std::string batch_norm_tensors_refused(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                       const torch::Tensor& running_mean, const torch::Tensor& running_var) {
  if (!nhwc_activation(x)) return "an NHWC [N, C, H, W] tensor of float32, bf16 or fp16 is needed";
  const std::int64_t c = x.size(1);
  if (!per_channel(weight, c, x.device()) || !per_channel(bias, c, x.device()) ||
      !per_channel(running_mean, c, x.device()) || !per_channel(running_var, c, x.device()))
    return "the layer's parameters and running statistics must be float32 [C] on the input's device";
  return "";
}

// "" where the batch norm kernels take (norm, x), else what they lack.
std::string batch_norm_arguments_refused(const torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x) {
  if (!norm.is_training()) return "the layer is in evaluation mode";
  if (!norm.options.affine() || !norm.options.track_running_stats() || !norm.options.momentum())
    return "the layer needs affine parameters, running statistics and a momentum";
  const std::string refused =
      batch_norm_tensors_refused(x, norm.weight, norm.bias, norm.running_mean, norm.running_var);
  if (!refused.empty()) return refused;
  if (x.numel() <= x.size(1)) return "batch norm in training needs more than one value a channel";
  return "";
}

// "" where the kernels over ranks take x and the layer's tensors: the other ranks' batches count
// too, so one value a channel is enough here, but not none.
std::string batch_norm_over_ranks_refused(const torch::Tensor& x, const torch::Tensor& weight,
                                          const torch::Tensor& bias, const torch::Tensor& running_mean,
                                          const torch::Tensor& running_var) {
  const std::string refused = batch_norm_tensors_refused(x, weight, bias, running_mean, running_var);
  if (!refused.empty()) return refused;
  if (x.numel() == 0) return "this rank's batch is empty";
  return "";
}

// "" where the concatenation kernels take (skip, inner), else what they lack.
std::string concat_arguments_refused(const torch::Tensor& skip, const torch::Tensor& inner) {
  if (!nhwc_activation(skip) || !nhwc_activation(inner) || skip.scalar_type() != inner.scalar_type() ||
      skip.device() != inner.device() || skip.size(0) != inner.size(0) || skip.size(2) != inner.size(2) ||
      skip.size(3) != inner.size(3))
    return "two NHWC [N, C, H, W] tensors of one type (float32, bf16 or fp16), N, H, W and device are needed";
  return "";
}

// Why the kernels do not run a call on `device` whose arguments they refuse as `arguments_refused`
// says: this build on this device first, then the arguments ("" where they run).
std::string kernels_refused(const torch::Device& device, const std::string& arguments_refused) {
  const std::string unavailable = fused_kernels_unavailable(device);
  return unavailable.empty() ? arguments_refused : unavailable;
}

bool kernels_take(const torch::Device& device, const std::string& arguments_refused) {
  return kernels_refused(device, arguments_refused).empty();
}

// Error naming `what` and why the kernels refuse, where they do.
void require_kernels(const std::string& what, const torch::Device& device, const std::string& arguments_refused) {
  const std::string why = kernels_refused(device, arguments_refused);
  if (!why.empty()) throw Error(what + ": " + why);
}

}  // namespace

std::string fused_kernels_unavailable(const torch::Device& device) {
  if (device.type() != detail::fused_kernels_device())
    return "the fused kernels are CUDA kernels, and this rank computes on " + device.str();
  return detail::fused_kernels_build_reason();
}

torch::Tensor composed_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope) {
  torch::Tensor sum = z + bias.to(z.scalar_type()).reshape({1, -1, 1, 1});
  return torch::leaky_relu_(sum, slope);
}

torch::Tensor bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope) {
  return kernels_take(z.device(), bias_arguments_refused(z, bias)) ? detail::apply_bias_leaky_relu(z, bias, slope)
                                                                   : composed_bias_leaky_relu(z, bias, slope);
}

torch::Tensor fused_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope) {
  require_kernels("bias and LeakyReLU in one kernel", z.device(), bias_arguments_refused(z, bias));
  return detail::apply_bias_leaky_relu(z, bias, slope);
}

torch::Tensor composed_batch_norm_leaky_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope) {
  torch::Tensor y = norm.forward(x);
  return torch::leaky_relu_(y, slope);
}

namespace {
torch::Tensor apply_batch_norm_leaky_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope) {
  norm.num_batches_tracked += 1;  // as BatchNorm2d's forward counts a training batch
  return detail::apply_batch_norm_leaky_relu(x, norm.weight, norm.bias, norm.running_mean, norm.running_var,
                                             norm.options.eps(), *norm.options.momentum(), slope);
}
}  // namespace

torch::Tensor batch_norm_leaky_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope) {
  return kernels_take(x.device(), batch_norm_arguments_refused(norm, x))
             ? apply_batch_norm_leaky_relu(norm, x, slope)
             : composed_batch_norm_leaky_relu(norm, x, slope);
}

torch::Tensor fused_batch_norm_leaky_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope) {
  require_kernels("batch norm and LeakyReLU in fused kernels", x.device(), batch_norm_arguments_refused(norm, x));
  return apply_batch_norm_leaky_relu(norm, x, slope);
}

std::optional<torch::Tensor> try_fused_batch_norm_over_ranks_leaky_relu(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, torch::Tensor running_mean,
    torch::Tensor running_var, double eps, double momentum, const SumOverRanks& sum, double slope) {
  if (!kernels_take(x.device(), batch_norm_over_ranks_refused(x, weight, bias, running_mean, running_var)))
    return std::nullopt;
  return detail::apply_batch_norm_over_ranks_leaky_relu(x, weight, bias, std::move(running_mean),
                                                        std::move(running_var), eps, momentum, sum, slope);
}

torch::Tensor fused_batch_norm_over_ranks_leaky_relu(const torch::Tensor& x, const torch::Tensor& weight,
                                                     const torch::Tensor& bias, torch::Tensor running_mean,
                                                     torch::Tensor running_var, double eps, double momentum,
                                                     const SumOverRanks& sum, double slope) {
  require_kernels("batch norm over ranks and LeakyReLU in fused kernels", x.device(),
                  batch_norm_over_ranks_refused(x, weight, bias, running_mean, running_var));
  return detail::apply_batch_norm_over_ranks_leaky_relu(x, weight, bias, std::move(running_mean),
                                                        std::move(running_var), eps, momentum, sum, slope);
}

torch::Tensor composed_concat_relu(const torch::Tensor& skip, const torch::Tensor& inner) {
  torch::Tensor both = torch::cat({skip, inner}, 1);
  return torch::relu_(both);
}

torch::Tensor concat_relu(const torch::Tensor& skip, const torch::Tensor& inner) {
  return kernels_take(skip.device(), concat_arguments_refused(skip, inner)) ? detail::apply_concat_relu(skip, inner)
                                                                            : composed_concat_relu(skip, inner);
}

torch::Tensor fused_concat_relu(const torch::Tensor& skip, const torch::Tensor& inner) {
  require_kernels("concatenation and ReLU in one kernel", skip.device(), concat_arguments_refused(skip, inner));
  return detail::apply_concat_relu(skip, inner);
}

namespace {
// "" where the kernels take (norm, skip, u), else what they lack.
std::string concat_batch_norm_arguments_refused(const torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                                const torch::Tensor& u) {
  const std::string refused = batch_norm_arguments_refused(norm, u);
  return refused.empty() ? concat_arguments_refused(skip, u) : refused;
}

torch::Tensor apply_concat_batch_norm_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                           const torch::Tensor& u) {
  norm.num_batches_tracked += 1;  // as BatchNorm2d's forward counts a training batch
  return detail::apply_concat_batch_norm_relu(skip, u, norm.weight, norm.bias, norm.running_mean, norm.running_var,
                                              norm.options.eps(), *norm.options.momentum());
}
}  // namespace

torch::Tensor composed_concat_batch_norm_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                              const torch::Tensor& u) {
  return composed_concat_relu(skip, norm.forward(u));
}

torch::Tensor concat_batch_norm_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                     const torch::Tensor& u) {
  if (kernels_take(u.device(), concat_batch_norm_arguments_refused(norm, skip, u)))
    return apply_concat_batch_norm_relu(norm, skip, u);
  return concat_relu(skip, norm.forward(u));
}

torch::Tensor fused_concat_batch_norm_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                           const torch::Tensor& u) {
  require_kernels("concatenation, batch norm and ReLU in fused kernels", u.device(),
                  concat_batch_norm_arguments_refused(norm, skip, u));
  return apply_concat_batch_norm_relu(norm, skip, u);
}

namespace {
std::string concat_batch_norm_over_ranks_refused(const torch::Tensor& skip, const torch::Tensor& u,
                                                 const torch::Tensor& weight, const torch::Tensor& bias,
                                                 const torch::Tensor& running_mean, const torch::Tensor& running_var) {
  const std::string refused = batch_norm_over_ranks_refused(u, weight, bias, running_mean, running_var);
  return refused.empty() ? concat_arguments_refused(skip, u) : refused;
}
}  // namespace

std::optional<torch::Tensor> try_fused_concat_batch_norm_over_ranks_relu(
    const torch::Tensor& skip, const torch::Tensor& u, const torch::Tensor& weight, const torch::Tensor& bias,
    torch::Tensor running_mean, torch::Tensor running_var, double eps, double momentum, const SumOverRanks& sum) {
  if (!kernels_take(u.device(), concat_batch_norm_over_ranks_refused(skip, u, weight, bias, running_mean, running_var)))
    return std::nullopt;
  return detail::apply_concat_batch_norm_over_ranks_relu(skip, u, weight, bias, std::move(running_mean),
                                                         std::move(running_var), eps, momentum, sum);
}

torch::Tensor fused_concat_batch_norm_over_ranks_relu(const torch::Tensor& skip, const torch::Tensor& u,
                                                      const torch::Tensor& weight, const torch::Tensor& bias,
                                                      torch::Tensor running_mean, torch::Tensor running_var, double eps,
                                                      double momentum, const SumOverRanks& sum) {
  require_kernels("concatenation, batch norm over ranks and ReLU in fused kernels", u.device(),
                  concat_batch_norm_over_ranks_refused(skip, u, weight, bias, running_mean, running_var));
  return detail::apply_concat_batch_norm_over_ranks_relu(skip, u, weight, bias, std::move(running_mean),
                                                         std::move(running_var), eps, momentum, sum);
}

bool resolve_fused_kernels(const std::optional<bool>& option, const torch::Device& device, bool channels_last) {
  if (!option.value_or(false)) return false;  // auto: off until measured on a GPU
  const std::string why = fused_kernels_unavailable(device);
  if (!why.empty()) throw UsageError("--fused-kernels on: " + why);
  if (!channels_last)
    throw UsageError("--fused-kernels on: the kernels work on NHWC activations; add --channels-last on");
  return true;
}

std::string describe_fused_kernels(const std::optional<bool>& option, bool on) {
  return std::string(
             on ? "CUDA kernels of their own for the discriminators' first bias and LeakyReLU, batch "
                  "norm (of a rank's batch or over ranks) and LeakyReLU, and the U-Net's concatenation with its "
                  "batch norm and ReLU"
                : "none, ATen's operations") +
         " (--fused-kernels " + on_off_auto_name(option) + ")";
}

}  // namespace pix2pix::dist
