// See Note [channels-last parameters]: an update group that lays out its convolutions NHWC trains
// the values the NCHW one does, its gradients stay views of the all-reduce buckets with their
// parameter's strides, and FusedAdam's step is the same arithmetic in either layout. On CPUs, so
// that CI runs the layout path GPU ranks take by default in bf16 and fp16.
#include <gtest/gtest.h>

#include <vector>

#include "optim/optimizer_fixtures.hpp"
#include "pix2pix/optim/fused_adam.hpp"
#include "pix2pix/optim/update_group.hpp"
#include "support/thread_communicator.hpp"

using pix2pix::optim_tests::copy_values;
using pix2pix::optim_tests::small_net;

namespace {

bool inside(const torch::Tensor& view, const torch::Tensor& buffer) {
  const auto* begin = static_cast<const char*>(buffer.data_ptr());
  const auto* end = begin + buffer.numel() * buffer.element_size();
  const auto* first = static_cast<const char*>(view.data_ptr());
  return first >= begin && first + view.numel() * view.element_size() <= end;
}

}  // namespace

TEST(ChannelsLast, AGroupLaysOutItsConvolutionsNhwcAndTrainsTheValuesNchwTrains) {
  // Two ranks (threads) with different inputs, so the averaged gradients are not each rank's own.
  pix2pix::fixtures::run_ranks(2, [](pix2pix::fixtures::ThreadCommunicator& comm) {
    torch::manual_seed(3);
    auto nchw = small_net();
    auto nhwc = small_net();
    copy_values(nhwc, nchw);
    pix2pix::optim::UpdateOptions options;
    options.bucket_bytes = 512;  // several buckets
    options.channels_last = false;
    pix2pix::optim::UpdateGroup plain("G", "generator", nchw->parameters(), options, torch::kCPU, comm);
    options.channels_last = true;
    pix2pix::optim::UpdateGroup laid_out("G", "generator", nhwc->parameters(), options, torch::kCPU, comm);
    for (const auto& p : nhwc->parameters()) {
      if (p.dim() == 4) {
        EXPECT_TRUE(p.is_contiguous(torch::MemoryFormat::ChannelsLast));
        EXPECT_FALSE(p.is_contiguous());
      }
    }
    for (const auto& p : nchw->parameters()) EXPECT_TRUE(p.is_contiguous()) << "off keeps NCHW";
    torch::manual_seed(100 + comm.rank());
    for (int step = 0; step < 3; ++step) {
      const auto x = torch::randn({2, 3, 8, 8});
      for (auto* group : {&plain, &laid_out}) group->zero_grad();
      plain.backward(nchw->forward(x).square().mean());
      laid_out.backward(nhwc->forward(x).square().mean());
      for (auto* group : {&plain, &laid_out}) group->average();
      for (std::size_t i = 0; i < nhwc->parameters().size(); ++i) {
        const torch::Tensor p = nhwc->parameters()[i];
        EXPECT_EQ(p.grad().strides(), p.strides()) << "parameter " << i << ": its gradient has its layout";
        bool in_a_bucket = false;
        for (std::size_t k = 0; k < laid_out.gradient_sync().bucket_count(); ++k)
          in_a_bucket |= inside(p.grad(), laid_out.gradient_sync().bucket_buffer(k));
        EXPECT_TRUE(in_a_bucket) << "parameter " << i << ": a view of a bucket";
        EXPECT_TRUE(torch::allclose(p.grad(), nchw->parameters()[i].grad(), 1e-5, 1e-7)) << "parameter " << i;
      }
      ASSERT_EQ(plain.step().item<float>(), 0.f) << "the update was taken";
      ASSERT_EQ(laid_out.step().item<float>(), 0.f);
    }
    for (std::size_t i = 0; i < nhwc->parameters().size(); ++i) {
      EXPECT_TRUE(torch::allclose(nhwc->parameters()[i], nchw->parameters()[i], 1e-5, 1e-7)) << "parameter " << i;
      EXPECT_FALSE(torch::equal(nhwc->parameters()[i], nhwc->parameters()[i].detach().clone().zero_()));
    }
  });
}

TEST(ChannelsLast, FusedAdamStepsEitherLayoutBitForBitAndTakesMomentsOfTheOther) {
  torch::manual_seed(9);
  const auto values = torch::randn({6, 5, 3, 3});
  const auto nchw = values.clone().requires_grad_(true);
  const auto nhwc = values.contiguous(torch::MemoryFormat::ChannelsLast).requires_grad_(true);
  ASSERT_TRUE(torch::equal(nchw, nhwc));
  const auto adam = torch::optim::AdamOptions(1e-2).betas({0.5, 0.999});
  pix2pix::optim::FusedAdam plain({nchw}, adam), laid_out({nhwc}, adam);
  for (int step = 0; step < 3; ++step) {
    const auto gradient = torch::randn({6, 5, 3, 3});
    nchw.mutable_grad() = gradient.clone();
    nhwc.mutable_grad() = step == 1 ? gradient.clone() : gradient.contiguous(torch::MemoryFormat::ChannelsLast);
    plain.step();
    laid_out.step();  // step 1: a gradient in the other layout is taken as well
    ASSERT_EQ(plain.last_kernel(), pix2pix::optim::FusedAdam::Kernel::cpu_loop);
    ASSERT_EQ(laid_out.last_kernel(), pix2pix::optim::FusedAdam::Kernel::cpu_loop) << "NHWC takes the fused loop too";
    EXPECT_TRUE(torch::equal(nchw, nhwc)) << "step " << step;
    EXPECT_TRUE(nhwc.is_contiguous(torch::MemoryFormat::ChannelsLast)) << "step " << step;
  }
  // Moments saved by a run in the other layout (a resume that changes --channels-last).
  auto& state = static_cast<torch::optim::AdamParamState&>(*laid_out.state().begin()->second);
  state.exp_avg(state.exp_avg().contiguous());
  state.exp_avg_sq(state.exp_avg_sq().contiguous());
  const auto gradient = torch::randn({6, 5, 3, 3});
  nchw.mutable_grad() = gradient.clone();
  nhwc.mutable_grad() = gradient.contiguous(torch::MemoryFormat::ChannelsLast);
  plain.step();
  laid_out.step();
  EXPECT_TRUE(torch::equal(nchw, nhwc));
  EXPECT_EQ(state.exp_avg().strides(), nhwc.strides()) << "the moments take the parameter's layout";
}
