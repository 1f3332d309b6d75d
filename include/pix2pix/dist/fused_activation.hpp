// A convolution's bias, or batch norm, and the LeakyReLU after it as one operation: CUDA kernels of
// their own on GPUs, where this build has them; ATen's operations everywhere else.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "pix2pix/dist/moments_over_ranks.hpp"

namespace pix2pix::dist {

// Note [fused bias and LeakyReLU]
// The PatchGAN's first layer is the only convolution of the Pix2Pix networks with a bias and no
// batch norm after it (the reference drops the bias where batch norm follows), and it works on the
// largest tensor the discriminator has ([N, 64, H/2, W/2]). ATen adds a convolution's bias after
// cuDNN's kernel with a broadcast add, which is not vectorised on NHWC memory, and then LeakyReLU
// reads and writes the tensor again: on an H200 at 256² batch 64 in bf16 the add alone took 555 µs
// of a 25.15 ms step (three calls: D on the fake pair for D, on the real pair, on the fake pair for
// G; docs/performance.md), and in backward LeakyReLU's gradient and the bias's sum read it twice
// more. Here the convolution runs without its bias and one kernel adds it and applies LeakyReLU;
// in backward one kernel writes the input's gradient and each block's sum of it per channel, and a
// second sums those in a fixed order (no atomics: the same bits every run, as --deterministic and
// the overlap's bit-identity ask). Each value is rounded as ATen's two kernels round it (z + bias
// in the element type, then the activation), so forward and the input's gradient are ATen's bit
// for bit; the bias's gradient is the same sum in another order. Only NHWC tensors take the
// kernels (channels-last runs: bf16 and fp16 on GPUs by default), others ATen's operations.
// PyTorch eager pays the same three passes; torch.compile fuses them.

// Note [fused batch norm and LeakyReLU]
// Batch norm in training mode followed by LeakyReLU is the discriminator's every inner layer and
// the U-Net encoder's every level (its LeakyReLU begins the next level's block). ATen runs it as
// four passes over the tensor forward (the statistics, the normalisation, LeakyReLU) and three
// backward (LeakyReLU's gradient, batch norm's two), and PyTorch eager pays the same; on an H200 at
// 256² batch 64 in bf16 these layers' LeakyReLU passes alone took 1.33 ms of a 25.15 ms step
// (docs/performance.md). Here ATen's own statistics kernel (at::batch_norm_stats), then one kernel
// that normalises and applies LeakyReLU; backward one pass that sums the activation's gradient and
// its product with x - mean per channel (per block, then added in block order: the same bits every
// run) and one that writes the input's gradient. The activation's sign is recomputed from x in
// backward with the forward's arithmetic, so no tensor is saved beyond what ATen's batch norm saves
// (its input), and the output, which the next convolution saves, is not read again. Forward is
// ATen's arithmetic, not always its bits: ATen's own batch norm takes 1/sqrt(var + eps) with the
// approximate rsqrt, the statistics kernel called here with a division, an ulp of float apart, so
// an output may differ by a rounding of the element type (the GPU test says how often); the
// gradients are the same sums in another order. The running statistics are updated as ATen's
// batch norm updates them, with the variance recovered from 1/sqrt(var + eps) as PyTorch's
// SyncBatchNorm recovers it. --sync-bn's layer over ranks takes the same kernels with every rank's
// moments and backward sums (See Note [synchronised batch norm on a GPU]). Only batch norm in
// training mode with affine parameters, running statistics and a momentum, on NHWC tensors;
// evaluation and everything else runs ATen's operations.

// Note [fused concatenation and ReLU]
// Each U-Net level above the innermost returns cat(x, inner(x)) on channels, and the level around
// it begins its up path with ReLU in place on that: ATen copies both halves into the concatenation
// and then reads and writes it again; in backward ReLU's gradient is a pass over it, and the skip's
// concatenation then copies the inner half out in one piece while the skip's half stays a strided
// view, which the encoder's gradient then adds without vectorised loads
// (See Note [the skip's gradient in one piece]). At 256² batch 64 these concatenations hold 257 M
// elements. Here one kernel writes ReLU(cat(x, inner)), and in backward one kernel writes both
// halves' gradients, each whole in its own NHWC tensor. Nothing is rounded (ReLU selects), so
// values and gradients are ATen's bit for bit. The output is saved for backward, as the
// convolution after it saves it anyway. NHWC tensors of one type only; others, and every CPU,
// take ATen's operations.

// Note [fused concatenation, batch norm and ReLU]
// The inner half of each such concatenation is, at every U-Net level without dropout, the output of
// that level's last layer, a batch norm (the innermost level and the three largest: at 256² batch
// 64, [64, 64, 128, 128], [64, 128, 64, 64] and [64, 256, 32, 32], 117 M elements; the dropout
// levels are 4² to 16²). ATen writes batch norm's output, the concatenation reads it, and backward
// writes its gradient, which batch norm's two passes then read: 10 bytes an element forward and 16
// backward in bf16, where 6 and 10 do (docs/performance.md). Here, where the inner level hands its
// batch norm to the concatenation (nets/networks.cpp), ATen's statistics kernel, then the skip's
// half ReLU'd into the output and batch norm's normalisation with ReLU written straight into the
// other half by the batch-norm kernels (See Note [fused batch norm and LeakyReLU]; here their
// activation ReLU, their output rows the concatenation's wider ones); backward the skip's half's
// gradient, then batch norm's two passes reading the inner half of the output's gradient in place,
// the activation's sign recomputed from the batch norm's input as there. No normalised tensor is
// made, and nothing is saved beyond what the layers save (batch norm its input, the next
// convolution the concatenation). Forward is ATen's arithmetic with the same caveat as there (its
// rsqrt against the statistics kernel's division); the skip's half and its gradient are ATen's bit
// for bit. --sync-bn's layer over ranks takes the same kernels with every rank's moments and
// backward sums, as its LeakyReLU twin does (See Note [synchronised batch norm on a GPU]).

// Why `device` has no fused kernels in this build ("" where it has them): a CPU, or a build
// without LibTorch's CUDA half or a CUDA compiler.
std::string fused_kernels_unavailable(const torch::Device& device);

// LeakyReLU(slope)(z + bias), z a convolution's output [N, C, H, W] without its bias and bias its
// [C]: through the kernels where fused_kernels_unavailable says "" for z's device and z is NHWC in
// float32, bf16 or fp16 with a float32 bias; ATen's add and leaky_relu otherwise. Differentiable in
// both.
torch::Tensor bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope);

// ATen's two operations, on any device: what the kernels compute (the bias cast to z's type first,
// as autocast casts a convolution's bias).
torch::Tensor composed_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope);

// LeakyReLU(slope)(norm(x)), the activation in place as the networks'
// (See Note [activations in place]): through the kernels where fused_kernels_unavailable says "" for
// x's device, `norm` is training with affine parameters, running statistics (float32, on x's device)
// and a momentum, and x is NHWC in float32, bf16 or fp16; ATen's batch norm and leaky_relu_ otherwise. Either way the
// layer counts the batch in num_batches_tracked and updates its running statistics, as its forward
// does.
torch::Tensor batch_norm_leaky_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope);

// norm's forward and ATen's leaky_relu_, on any device: what the kernels compute.
torch::Tensor composed_batch_norm_leaky_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope);

// LeakyReLU(slope)(batch norm of x over every rank's batch): --sync-bn's layer in training (its
// parameters and running statistics as tensors, `sum` its sum over ranks, which must outlive
// backward), through the same kernels with the moments and backward's sums of every rank
// (See Note [synchronised batch norm on a GPU]). Error naming why where the kernels do not take
// the arguments (batch_norm_leaky_relu's conditions); the caller counts the batch.
torch::Tensor fused_batch_norm_over_ranks_leaky_relu(const torch::Tensor& x, const torch::Tensor& weight,
                                                     const torch::Tensor& bias, torch::Tensor running_mean,
                                                     torch::Tensor running_var, double eps, double momentum,
                                                     const SumOverRanks& sum, double slope);
// The same where the kernels take the arguments, nothing where they do not (checked once): the
// model's stand-in, whose other path is the layer's own forward.
std::optional<torch::Tensor> try_fused_batch_norm_over_ranks_leaky_relu(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, torch::Tensor running_mean,
    torch::Tensor running_var, double eps, double momentum, const SumOverRanks& sum, double slope);

// ReLU(cat({skip, inner}, 1)) of two [N, C, H, W] tensors: through the kernels where
// fused_kernels_unavailable says "" for their device and both are NHWC of one type (float32, bf16,
// fp16) and N, H, W; ATen's cat and relu_ otherwise.
torch::Tensor concat_relu(const torch::Tensor& skip, const torch::Tensor& inner);
torch::Tensor composed_concat_relu(const torch::Tensor& skip, const torch::Tensor& inner);

// ReLU(cat({skip, norm(u)}, 1)): through the kernels where batch_norm_leaky_relu's conditions hold
// for (norm, u) and concat_relu's for (skip, u); else norm's forward, then concat_relu. Either way
// the layer counts the batch and updates its running statistics, as its forward does.
torch::Tensor concat_batch_norm_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                     const torch::Tensor& u);
// norm's forward, ATen's cat and relu_: what the kernels compute.
torch::Tensor composed_concat_batch_norm_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                              const torch::Tensor& u);

// --fused-kernels resolved for a rank on `device` whose activations are NHWC or not
// (`channels_last`): on where the kernels apply (UsageError naming what to change where not); off;
// auto: off until a GPU run has checked and measured them (docs/performance.md).
bool resolve_fused_kernels(const std::optional<bool>& option, const torch::Device& device, bool channels_last);
// The start-up line: which layers the kernels compute.
std::string describe_fused_kernels(const std::optional<bool>& option, bool on);

// The kernels' autograd functions themselves (Error naming why where they do not take the
// arguments): for tests that must know which ran.
torch::Tensor fused_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope);
torch::Tensor fused_batch_norm_leaky_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope);
torch::Tensor fused_concat_relu(const torch::Tensor& skip, const torch::Tensor& inner);
torch::Tensor fused_concat_batch_norm_relu(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& skip,
                                           const torch::Tensor& u);

// ReLU(cat({skip, batch norm of u over every rank's batch}, 1)): --sync-bn's layer in training (its
// parameters and running statistics as tensors, `sum` its sum over ranks, which must outlive
// backward) through the kernels where they take the arguments (concat_batch_norm_relu's conditions,
// one value a channel on this rank being enough), nothing where they do not (checked once); the
// caller counts the batch. The fused_ form: Error naming why in place of nothing.
std::optional<torch::Tensor> try_fused_concat_batch_norm_over_ranks_relu(
    const torch::Tensor& skip, const torch::Tensor& u, const torch::Tensor& weight, const torch::Tensor& bias,
    torch::Tensor running_mean, torch::Tensor running_var, double eps, double momentum, const SumOverRanks& sum);
torch::Tensor fused_concat_batch_norm_over_ranks_relu(const torch::Tensor& skip, const torch::Tensor& u,
                                                      const torch::Tensor& weight, const torch::Tensor& bias,
                                                      torch::Tensor running_mean, torch::Tensor running_var, double eps,
                                                      double momentum, const SumOverRanks& sum);

namespace detail {
// What a build supplies (fused_activation_cuda.cpp, or _none.cpp without the kernels).
// The device type its kernels run on: CUDA (the CPU only in the tests that compile them as C++,
// See Note [CUDA kernels on a CPU]).
torch::DeviceType fused_kernels_device();
// Why this build has no kernels ("" where it has them), for fused_kernels_unavailable.
std::string fused_kernels_build_reason();
// The autograd functions on arguments the kernels take.
torch::Tensor apply_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope);
torch::Tensor apply_batch_norm_leaky_relu(const torch::Tensor& x, const torch::Tensor& weight,
                                          const torch::Tensor& bias, torch::Tensor running_mean,
                                          torch::Tensor running_var, double eps, double momentum, double slope);
torch::Tensor apply_batch_norm_over_ranks_leaky_relu(const torch::Tensor& x, const torch::Tensor& weight,
                                                     const torch::Tensor& bias, torch::Tensor running_mean,
                                                     torch::Tensor running_var, double eps, double momentum,
                                                     const SumOverRanks& sum, double slope);
torch::Tensor apply_concat_relu(const torch::Tensor& skip, const torch::Tensor& inner);
torch::Tensor apply_concat_batch_norm_relu(const torch::Tensor& skip, const torch::Tensor& u,
                                           const torch::Tensor& weight, const torch::Tensor& bias,
                                           torch::Tensor running_mean, torch::Tensor running_var, double eps,
                                           double momentum);
torch::Tensor apply_concat_batch_norm_over_ranks_relu(const torch::Tensor& skip, const torch::Tensor& u,
                                                      const torch::Tensor& weight, const torch::Tensor& bias,
                                                      torch::Tensor running_mean, torch::Tensor running_var, double eps,
                                                      double momentum, const SumOverRanks& sum);
}  // namespace detail

}  // namespace pix2pix::dist
