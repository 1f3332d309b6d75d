// See Note [synchronised batch norm] (sync_batch_norm.hpp).
#include "pix2pix/nets/sync_batch_norm.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/moments_over_ranks.hpp"

namespace pix2pix::nets {
namespace {

const Choices<SyncBn> kSyncBnChoices = {{"auto", SyncBn::automatic}, {"on", SyncBn::on}, {"off", SyncBn::off}};

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Per channel of NCHW, as [1, C, 1, 1] for broadcasting.
torch::Tensor per_channel(const torch::Tensor& values) {
  return values.view({1, -1, 1, 1});
}

// The global batch's normalisation, its running statistics' update, and its backward, as ATen
// operations on float32 copies: any device (a CPU has no kernels of batch norm over ranks).
class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  // `sum`: the BatchStatsSum to use (a pointer that lives as long as the layer does).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& weight,
                               const torch::Tensor& bias, torch::Tensor running_mean, torch::Tensor running_var,
                               double eps, double momentum, const BatchStatsSum* sum) {
    const std::int64_t channels = input.size(1);
    const torch::Tensor x = input.to(torch::kFloat32);
    // Shifted by the running mean (equal on every rank) so that Σ(x - c)² - n·mean² does not cancel.
    const torch::Tensor shift = running_mean.to(torch::kFloat32);
    const torch::Tensor centred = x - per_channel(shift);
    const double count = static_cast<double>(input.numel() / channels);
    torch::Tensor sums =
        torch::cat({centred.sum({0, 2, 3}).to(torch::kFloat64), centred.square().sum({0, 2, 3}).to(torch::kFloat64),
                    torch::full({1}, count, centred.options().dtype(torch::kFloat64))});
    const dist::MomentsOverRanks m = dist::moments_over_ranks(std::move(sums), shift.to(torch::kFloat64), running_mean,
                                                              running_var, eps, momentum, *sum);
    const torch::Tensor normalised = (x - per_channel(m.mean)) * per_channel(m.invstd);
    ctx->save_for_backward({normalised, m.invstd, weight, m.count});
    ctx->saved_data["sum"] = reinterpret_cast<std::int64_t>(sum);
    ctx->saved_data["dtype"] = static_cast<std::int64_t>(input.scalar_type());
    return (normalised * per_channel(weight.to(torch::kFloat32)) + per_channel(bias.to(torch::kFloat32)))
        .to(input.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& normalised = saved[0];
    const torch::Tensor& invstd = saved[1];
    const torch::Tensor& weight = saved[2];
    const torch::Tensor& n = saved[3];  // See Note [the global count stays on the device]
    const auto* sum = reinterpret_cast<const BatchStatsSum*>(ctx->saved_data["sum"].toInt());
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    const torch::Tensor dy = grads[0].to(torch::kFloat32);
    const std::int64_t channels = normalised.size(1);
    // This rank's sums: the scale's and shift's gradients (averaged over ranks by the gradient sync).
    const torch::Tensor sum_dy = dy.sum({0, 2, 3});
    const torch::Tensor sum_dy_normalised = (dy * normalised).sum({0, 2, 3});
    torch::Tensor global = torch::cat({sum_dy, sum_dy_normalised}).to(torch::kFloat64);
    (*sum)(global);
    const torch::Tensor mean_dy = (global.narrow(0, 0, channels) / n).to(torch::kFloat32);
    const torch::Tensor mean_dy_normalised = (global.narrow(0, channels, channels) / n).to(torch::kFloat32);
    const torch::Tensor grad_input = (dy - per_channel(mean_dy) - normalised * per_channel(mean_dy_normalised)) *
                                     per_channel(invstd * weight.to(torch::kFloat32));
    return {grad_input.to(dtype),
            sum_dy_normalised.to(weight.scalar_type()),
            sum_dy.to(weight.scalar_type()),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

// Note [synchronised batch norm on a GPU]
// On a GPU the layer runs the CUDA kernels of PyTorch's own SyncBatchNorm: at::batch_norm_stats
// (this rank's mean and 1/sqrt(var + eps)), at::batch_norm_elemt (the normalisation and the affine
// step), at::batch_norm_backward_reduce and at::batch_norm_backward_elemt; each one pass over the
// activation in its own type and memory format (bf16 NHWC stays bf16 NHWC), and the input is what
// backward keeps. SyncBatchNormFunction, which a CPU needs (ATen has these kernels for CUDA only),
// makes float32 copies, passes over each activation some nine times each way and keeps a float32
// normalised copy for backward: about 60 bytes an element forward in bf16 against these kernels'
// 6 to 10, on every rank of a multi-GPU run (--sync-bn is on by default there). Between the
// kernels the layer keeps its one all-reduce of shifted float64 sums, not PyTorch's all-gather of
// every rank's moments: this rank's [Σ(x - c), Σ(x - c)², n] are n·(m - c) and n·(v + (m - c)²)
// from its mean m and biased variance v (recovered from 1/sqrt(v + eps) as PyTorch's
// batch_norm_gather_stats_with_counts recovers it), so a collective of 2C + 1 values at any world
// size, the Communicator without an all-gather, and the same global moments and running
// statistics as the CPU's, to float32's rounding of m and v (dist::moments_over_ranks_of_stats).
// Under --fused-kernels a layer followed by LeakyReLU takes our own kernels instead
// (See Note [fused batch norm and LeakyReLU]), split the same way: this rank's statistics, the
// all-reduce, one pass that normalises and applies LeakyReLU; backward one pass of this rank's
// sums, their all-reduce, one pass for the input's gradient.
class SyncBatchNormKernels : public torch::autograd::Function<SyncBatchNormKernels> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& weight,
                               const torch::Tensor& bias, torch::Tensor running_mean, torch::Tensor running_var,
                               double eps, double momentum, const BatchStatsSum* sum) {
    const torch::Tensor x = input.contiguous(input.suggest_memory_format());  // as the kernels read it
    const auto [local_mean, local_invstd] = at::batch_norm_stats(x, eps);
    const dist::MomentsOverRanks m =
        dist::moments_over_ranks_of_stats(local_mean, local_invstd, static_cast<double>(x.numel() / x.size(1)),
                                          running_mean, running_var, eps, momentum, *sum);
    const torch::Tensor weight32 = weight.to(torch::kFloat32);
    ctx->save_for_backward({x, weight32, m.mean, m.invstd, m.count.to(torch::kInt32)});
    ctx->saved_data["sum"] = reinterpret_cast<std::int64_t>(sum);
    ctx->saved_data["weight_dtype"] = static_cast<std::int64_t>(weight.scalar_type());
    return at::batch_norm_elemt(x, weight32, bias.to(torch::kFloat32), m.mean, m.invstd, eps);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &weight = saved[1], &mean = saved[2], &invstd = saved[3], &count = saved[4];
    const auto* sum = reinterpret_cast<const BatchStatsSum*>(ctx->saved_data["sum"].toInt());
    const torch::Tensor dy = grads[0].contiguous(x.suggest_memory_format());
    const std::int64_t channels = x.size(1);
    // This rank's sums, and from them the scale's and shift's gradients (averaged over ranks by
    // the gradient sync); the input's gradient needs the sums over every rank.
    const auto local = at::batch_norm_backward_reduce(dy, x, mean, invstd, weight, /*input_g=*/true,
                                                      /*weight_g=*/true, /*bias_g=*/true);
    torch::Tensor global = torch::cat({std::get<0>(local), std::get<1>(local)}).to(torch::kFloat64);
    (*sum)(global);
    global = global.to(torch::kFloat32);
    // `count` holds the global batch's n: the kernel divides by the sum of its entries, one a rank
    // in PyTorch's layer.
    const torch::Tensor grad_input = at::batch_norm_backward_elemt(
        dy, x, mean, invstd, weight, global.narrow(0, 0, channels), global.narrow(0, channels, channels), count);
    const auto weight_dtype = static_cast<torch::ScalarType>(ctx->saved_data["weight_dtype"].toInt());
    return {grad_input,
            std::get<2>(local).to(weight_dtype),
            std::get<3>(local).to(weight_dtype),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

// Whether ATen's kernels take this training batch: on a GPU, not empty, in a type they compute.
bool kernels_take(const torch::Tensor& input) {
  const auto type = input.scalar_type();
  return input.is_cuda() && input.numel() > 0 &&
         (type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16);
}

}  // namespace

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(std::int64_t channels, BatchStatsSum sum)
    : channels_(channels), sum_(std::move(sum)) {
  reset();
}

void SyncBatchNorm2dImpl::reset() {
  weight = register_parameter("weight", torch::ones({channels_}));
  bias = register_parameter("bias", torch::zeros({channels_}));
  running_mean = register_buffer("running_mean", torch::zeros({channels_}));
  running_var = register_buffer("running_var", torch::ones({channels_}));
  num_batches_tracked = register_buffer("num_batches_tracked", torch::tensor(0, torch::kLong));
}

void SyncBatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << "pix2pix::model::SyncBatchNorm2d(" << channels_ << ", eps=" << kEps << ", momentum=" << kMomentum
         << (sum_ ? ", over every rank)" : ", over this rank)");
}

torch::Tensor SyncBatchNorm2dImpl::forward(const torch::Tensor& input) {
  if (input.dim() != 4)
    throw Error("SyncBatchNorm2d: expected an NCHW input, got " + std::to_string(input.dim()) + " dimensions");
  if (is_training()) num_batches_tracked.add_(1);
  if (!is_training() || !sum_)
    return torch::batch_norm(input, weight, bias, running_mean, running_var, is_training(), kMomentum, kEps,
                             /*cudnn_enabled=*/true);
  // See Note [synchronised batch norm on a GPU]
  if (kernels_take(input))
    return SyncBatchNormKernels::apply(input, weight, bias, running_mean, running_var, kEps, kMomentum, &sum_);
  return SyncBatchNormFunction::apply(input, weight, bias, running_mean, running_var, kEps, kMomentum, &sum_);
}

SyncBn parse_sync_bn(const std::string& text) {
  return parse_choice(text, "--sync-bn", kSyncBnChoices);
}

std::string to_string(SyncBn choice) {
  return choice_name(choice, kSyncBnChoices);
}

bool resolve_sync_bn(SyncBn option, bool batch_norm, int world, bool any_thread, const std::string& communicator) {
  if (!batch_norm || world < 2 || option == SyncBn::off) return false;
  if (any_thread) return true;
  if (option == SyncBn::on)
    throw UsageError("--sync-bn on: batch norm's backward runs on LibTorch's GPU threads, and the " + communicator +
                     " communicator may only be called from the main thread; use --comm auto (NCCL) or --sync-bn off");
  return false;
}

}  // namespace pix2pix::nets
