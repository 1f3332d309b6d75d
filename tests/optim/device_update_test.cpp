// See Note [updates decided on the device]: an update group that decides on the device takes and
// skips the updates the host decision takes and skips, moves the fp16 loss scale the same way,
// trains the same values to float rounding (ATen's fused Adam against ours) and saves the state a
// host group continues from. On CPUs, so that CI runs the path GPU ranks take by default: with
// LibTorch 2.4 or newer (the Debian 13 and GPU-bundle legs); before 2.4 it is refused.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <vector>

#include "optim/optimizer_fixtures.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/optim/fused_adam.hpp"
#include "pix2pix/optim/update_group.hpp"
#include "support/thread_communicator.hpp"

using pix2pix::optim_tests::copy_values;
using pix2pix::optim_tests::saved;
using pix2pix::optim_tests::small_net;

namespace {

using pix2pix::optim::UpdateGroup;
using pix2pix::optim::UpdateOptions;

void expect_close(torch::nn::Sequential& a, torch::nn::Sequential& b, const std::string& what) {
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    const torch::Tensor x = a->parameters()[i];
    const torch::Tensor y = b->parameters()[i];
    EXPECT_TRUE(torch::allclose(x, y, 1e-5, 1e-7))
        << what << ", parameter " << i << ": max difference " << (x - y).abs().max().item<float>();
  }
}

std::vector<torch::Tensor> copies(torch::nn::Sequential& net) {
  std::vector<torch::Tensor> out;
  for (const auto& p : net->parameters()) out.push_back(p.detach().clone());
  return out;
}

bool unchanged(const std::vector<torch::Tensor>& before, torch::nn::Sequential& net) {
  for (size_t i = 0; i < before.size(); ++i)
    if (!torch::equal(before[i], net->parameters()[i])) return false;
  return true;
}

// Two groups over copies of one network, one deciding on the host and one on `device`, through
// five steps of which the third has NaN gradients (on every rank, after averaging).
void compare_with_host(pix2pix::dist::Communicator& comm, const torch::Device& device, bool scaling) {
  const std::string what = std::string(scaling ? "with" : "without") + " loss scaling on " + device.str();
  torch::manual_seed(5);
  auto host_net = small_net();
  auto device_net = small_net();
  copy_values(device_net, host_net);
  host_net->to(device);
  device_net->to(device);
  UpdateOptions options;
  options.bucket_bytes = 512;  // several buckets
  options.force_loss_scaling = scaling;
  options.device_update = false;
  UpdateGroup host("G", "generator", host_net->parameters(), options, device, comm);
  options.device_update = true;
  UpdateGroup on_device("G", "generator", device_net->parameters(), options, device, comm);
  ASSERT_FALSE(host.decides_on_device());
  ASSERT_TRUE(on_device.decides_on_device());
  torch::manual_seed(200 + comm.rank());
  const int steps = 5, broken = 2;  // step 2's input holds a NaN on the last rank: every averaged gradient does
  for (int step = 0; step < steps; ++step) {
    auto x = torch::randn({2, 3, 8, 8});
    if (step == broken && comm.rank() == comm.world() - 1) x[0][0][0][0] = std::numeric_limits<float>::quiet_NaN();
    x = x.to(device);
    const auto before = copies(device_net);
    for (auto* group : {&host, &on_device}) group->zero_grad();
    host.backward(host_net->forward(x).square().mean());
    on_device.backward(device_net->forward(x).square().mean());
    for (auto* group : {&host, &on_device}) group->average();
    const torch::Tensor host_skipped = host.step(), device_skipped = on_device.step();
    ASSERT_EQ(device_skipped.numel(), 1);
    EXPECT_EQ(device_skipped.device(), device) << what << ": the flag stays where it was decided";
    EXPECT_EQ(device_skipped.item<float>(), host_skipped.item<float>()) << what << ", step " << step;
    EXPECT_EQ(device_skipped.item<float>(), step == broken ? 1.f : 0.f) << what << ", step " << step;
    EXPECT_EQ(unchanged(before, device_net), step == broken) << what << ", step " << step;
    EXPECT_EQ(on_device.scaler().state(), host.scaler().state()) << what << ", step " << step;
    expect_close(device_net, host_net, what + ", step " + std::to_string(step));
  }
  const auto& adam = static_cast<const pix2pix::optim::FusedAdam&>(on_device.optimizer());
  EXPECT_EQ(adam.last_kernel(), pix2pix::optim::FusedAdam::Kernel::fused_on_device);
  EXPECT_EQ(on_device.scaler().scale(), scaling ? 32768.0 : 1.0) << "2^16 halved once by the skipped step";
  EXPECT_EQ(on_device.scaler().skipped_steps(), scaling ? 1 : 0);
  // The step counts on the device are what a save writes: 4 updates taken of 5, as the host's.
  // The save reads them and leaves them where they are: a CUDA graph of the step holds their
  // addresses (See Note [a step as one CUDA graph]).
  const auto parameters = device_net->parameters();
  std::vector<const void*> counts;
  for (const auto& p : parameters) {
    const torch::Tensor* count = adam.device_step_count(p);
    ASSERT_NE(count, nullptr) << what;
    counts.push_back(count->data_ptr());
  }
  EXPECT_FALSE(saved(on_device.optimizer()).empty());
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor* count = adam.device_step_count(parameters[i]);
    ASSERT_NE(count, nullptr) << what << ": a save dropped parameter " << i << "'s count";
    EXPECT_EQ(count->data_ptr(), counts[i]) << what << ": a save moved parameter " << i << "'s count";
  }
  ASSERT_EQ(on_device.optimizer().state().size(), device_net->parameters().size());
  for (auto* group : {&host, &on_device})
    for (const auto& [key, state] : group->optimizer().state())
      EXPECT_EQ(static_cast<const torch::optim::AdamParamState&>(*state).step(), steps - 1) << what;
  if (scaling) return;
  // A host step after them continues from those counts (Adam's bias corrections follow them).
  for (auto* group : {&host, &on_device}) group->zero_grad();
  const auto x = torch::randn({2, 3, 8, 8}).to(device);
  host.backward(host_net->forward(x).square().mean());
  on_device.backward(device_net->forward(x).square().mean());
  for (auto* group : {&host, &on_device}) group->average();
  host.step();
  on_device.optimizer().step();
  expect_close(device_net, host_net, what + ", a host step after");
}

}  // namespace

// On the CPU with two ranks (threads), so that the gradients are averaged bucket views; on a GPU
// too where there is one (scripts/gpu-smoke.sh runs it there).
TEST(DeviceUpdate, TakesAndSkipsWhatTheHostDecisionDoesAndSavesTheSameState) {
  if (!pix2pix::compat::kFusedAdamWithSkip)
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no fused Adam with a skip flag (2.4): the refusal is "
                 << "DeviceUpdate.IsRefusedBeforeLibTorch2_4's";
  for (const bool scaling : {false, true}) {
    pix2pix::fixtures::run_ranks(
        2, [scaling](pix2pix::fixtures::ThreadCommunicator& comm) { compare_with_host(comm, torch::kCPU, scaling); });
    if (torch::cuda::is_available()) {
      // Deterministic convolutions without TF32, so that both networks get the same gradients and
      // only the two Adams differ, as on the CPU.
      auto& context = at::globalContext();
      const bool deterministic = context.deterministicCuDNN(), tf32 = context.allowTF32CuDNN();
      context.setDeterministicCuDNN(true);
      context.setAllowTF32CuDNN(false);
      pix2pix::dist::LocalCommunicator comm;
      compare_with_host(comm, torch::Device(torch::kCUDA, 0), scaling);
      context.setDeterministicCuDNN(deterministic);
      context.setAllowTF32CuDNN(tf32);
    }
  }
}

TEST(DeviceUpdate, IsRefusedBeforeLibTorch2_4) {
  if (pix2pix::compat::kFusedAdamWithSkip)
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has fused Adam with a skip flag: "
                 << "DeviceUpdate.TakesAndSkipsWhatTheHostDecisionDoesAndSavesTheSameState runs it";
  pix2pix::dist::LocalCommunicator comm;
  auto net = small_net();
  UpdateOptions options;
  options.device_update = true;
  EXPECT_THROW(UpdateGroup("G", "generator", net->parameters(), options, torch::kCPU, comm), pix2pix::Error);
  options.device_update.reset();  // auto: off here
  EXPECT_FALSE(UpdateGroup("G", "generator", net->parameters(), options, torch::kCPU, comm).decides_on_device());
}
