// What one optimizer step costs on the reference generator's parameters (U-Net, ngf 64, 8 down-
// samplings: 54.4 M parameters): torch::optim::Adam against FusedAdam, interleaved, after one
// untimed step each (state allocation), with random gradients. Prints min/median/max ms per step.
//   OMP_NUM_THREADS=1 build/bin/optimizer_bench [rounds]     (docs/performance.md, "Optimizer")
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "pix2pix/model/networks.hpp"
#include "pix2pix/train/fused_adam.hpp"

namespace {

double seconds_of_step(torch::optim::Optimizer& optimizer) {
  const auto start = std::chrono::steady_clock::now();
  optimizer.step();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void print(const char* name, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%-18s ms/step min %.1f median %.1f max %.1f\n", name, ms.front(), ms[ms.size() / 2], ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 5;
  using pix2pix::model::UnetGenerator;
  const pix2pix::model::GeneratorOptions shape{3, 3, 8, 64, pix2pix::model::Norm::batch, true};
  UnetGenerator reference_net(shape), fused_net(shape);
  for (auto* net : {&reference_net, &fused_net})
    for (auto& p : (*net)->parameters()) p.mutable_grad() = torch::randn_like(p) * 1e-3;
  const auto options = torch::optim::AdamOptions(2e-4).betas({0.5, 0.999});
  torch::optim::Adam reference(reference_net->parameters(), options);
  pix2pix::train::FusedAdam fused(fused_net->parameters(), options);
  seconds_of_step(reference);
  seconds_of_step(fused);
  std::vector<double> reference_ms, fused_ms;
  for (int r = 0; r < rounds; ++r) {
    reference_ms.push_back(1e3 * seconds_of_step(reference));
    fused_ms.push_back(1e3 * seconds_of_step(fused));
  }
  std::printf("# Adam step on %lld parameters, %d rounds, %d thread(s)\n",
              static_cast<long long>(pix2pix::model::count_parameters(*reference_net)), rounds, at::get_num_threads());
  print("torch::optim::Adam", reference_ms);
  print("FusedAdam", fused_ms);
  return 0;
}
