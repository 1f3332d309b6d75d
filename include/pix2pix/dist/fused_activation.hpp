// A convolution's bias and the LeakyReLU after it as one operation: one CUDA kernel each way on
// GPUs, where this build has them; ATen's two operations everywhere else.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

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

// --fused-kernels resolved for a rank on `device` whose activations are NHWC or not
// (`channels_last`): on where the kernels apply (UsageError naming what to change where not); off;
// auto: off until a GPU run has checked and measured them (docs/performance.md).
bool resolve_fused_kernels(const std::optional<bool>& option, const torch::Device& device, bool channels_last);
// The start-up line: which kernels compute the discriminators' first bias and LeakyReLU.
std::string describe_fused_kernels(const std::optional<bool>& option, bool on);

// The kernels' autograd function itself (Error where unavailable): for tests that must know which ran.
torch::Tensor fused_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope);

}  // namespace pix2pix::dist
