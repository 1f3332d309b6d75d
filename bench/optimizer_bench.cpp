// What one optimizer step costs on the reference generator's parameters (U-Net, ngf 64, 8 down-
// samplings: 54.4 M parameters): torch::optim::Adam against FusedAdam, interleaved, after one
// untimed step each (state allocation), with random gradients. Prints min/median/max ms per step
// and which of FusedAdam's kernels ran (CPUs: its vectorised loop; GPUs: the _foreach ops,
// See Note [foreach Adam]). On a GPU each step is timed to a device synchronisation.
//   OMP_NUM_THREADS=1 build/bin/optimizer_bench [rounds] [cpu|cuda]   (docs/performance.md, "Optimizer")
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "pix2pix/nets/networks.hpp"
#include "pix2pix/optim/fused_adam.hpp"

namespace {

double seconds_of_step(torch::optim::Optimizer& optimizer, const torch::Tensor& any_parameter) {
  const auto start = std::chrono::steady_clock::now();
  optimizer.step();
  if (any_parameter.is_cuda()) (void)any_parameter.sum().item<float>();  // waits for the device
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const char* kernel_name(pix2pix::optim::FusedAdam::Kernel kernel) {
  using Kernel = pix2pix::optim::FusedAdam::Kernel;
  switch (kernel) {
    case Kernel::cpu_loop:
      return "CPU loop";
    case Kernel::foreach_ops:
      return "_foreach ops";
    case Kernel::torch_adam:
      return "torch::optim::Adam";
    case Kernel::fused_on_device:
      return "ATen's fused Adam, skip decided on the device";
    case Kernel::none:
      break;
  }
  return "none";
}

void print(const char* name, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%-18s ms/step min %.1f median %.1f max %.1f\n", name, ms.front(), ms[ms.size() / 2], ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 5;
  const torch::Device device(argc > 2 ? argv[2] : "cpu");
  using pix2pix::nets::UnetGenerator;
  const pix2pix::nets::GeneratorOptions shape{3, 3, 8, 64, pix2pix::nets::Norm::batch, true};
  UnetGenerator reference_net(shape), fused_net(shape);
  for (auto* net : {&reference_net, &fused_net}) {
    (*net)->to(device);
    for (auto& p : (*net)->parameters()) p.mutable_grad() = torch::randn_like(p) * 1e-3;
  }
  const torch::Tensor probe = reference_net->parameters().front();
  const auto options = torch::optim::AdamOptions(2e-4).betas({0.5, 0.999});
  torch::optim::Adam reference(reference_net->parameters(), options);
  pix2pix::optim::FusedAdam fused(fused_net->parameters(), options);
  seconds_of_step(reference, probe);
  seconds_of_step(fused, probe);
  std::vector<double> reference_ms, fused_ms;
  for (int r = 0; r < rounds; ++r) {
    reference_ms.push_back(1e3 * seconds_of_step(reference, probe));
    fused_ms.push_back(1e3 * seconds_of_step(fused, probe));
  }
  std::printf("# Adam step on %lld parameters (%zu tensors) on %s, %d rounds, %d thread(s); FusedAdam ran %s\n",
              static_cast<long long>(pix2pix::nets::count_parameters(*reference_net)),
              reference_net->parameters().size(), device.str().c_str(), rounds, at::get_num_threads(),
              kernel_name(fused.last_kernel()));
  print("torch::optim::Adam", reference_ms);
  print("FusedAdam", fused_ms);
  return 0;
}
