// See Note [cuDNN's autotuner and determinism]: what --cudnn-benchmark and --deterministic set in
// ATen's context for CPU and GPU ranks, and what they refuse. ATen's flags are plain settings, so
// a GPU rank's are checked here without a GPU (a cuda device is only named, never touched).
#include <gtest/gtest.h>

#include <string>

#include "pix2pix/common/cpu_convolutions.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/convolution_settings.hpp"
#include "support/cpu_device.hpp"
#include "support/fixtures.hpp"

using pix2pix::dist::apply_convolution_settings;
using pix2pix::dist::apply_inference_convolution_settings;
using pix2pix::dist::ConvolutionSettings;
using pix2pix::fixtures::contains;
using pix2pix::fixtures::error_of;

namespace {

using pix2pix::fixtures::kCpu;
const torch::Device kGpu(torch::kCUDA, 0);

ConvolutionSettings settings(std::optional<bool> autotune, bool deterministic) {
  ConvolutionSettings s;
  s.autotune = autotune;
  s.deterministic = deterministic;
  return s;
}

// The flags are the process's: each test leaves them as ATen starts.
class ConvolutionSettingsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    at::globalContext().setBenchmarkCuDNN(false);
    at::globalContext().setDeterministicCuDNN(false);
    at::globalContext().setDeterministicAlgorithms(false, false);
    at::globalContext().setAllowTF32CuDNN(true);
  }
};

}  // namespace

TEST_F(ConvolutionSettingsTest, GpuRanksTuneByDefaultAndNotWhenToldOff) {
  std::string line = apply_convolution_settings(settings(std::nullopt, false), kGpu);
  EXPECT_TRUE(at::globalContext().benchmarkCuDNN());
  EXPECT_FALSE(at::globalContext().deterministicCuDNN());
  EXPECT_TRUE(contains(line, "cuDNN autotuned for the fixed training shapes (--cudnn-benchmark auto")) << line;
  line = apply_convolution_settings(settings(true, false), kGpu);
  EXPECT_TRUE(at::globalContext().benchmarkCuDNN());
  EXPECT_TRUE(contains(line, "(--cudnn-benchmark on")) << line;
  line = apply_convolution_settings(settings(false, false), kGpu);
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
  EXPECT_TRUE(contains(line, "cuDNN's heuristic algorithms (--cudnn-benchmark off)")) << line;
}

// See Note [TF32 convolutions]: on for GPU ranks unless told off, and said; never on a CPU rank.
TEST_F(ConvolutionSettingsTest, GpuRanksUseTf32ConvolutionsUnlessToldOffAndCpuRanksRefuseThem) {
  ConvolutionSettings s;
  std::string line = apply_convolution_settings(s, kGpu);
  EXPECT_TRUE(at::globalContext().allowTF32CuDNN());
  EXPECT_TRUE(contains(line, "; float32 convolutions on TF32 tensor cores (--tf32 auto; off: in float32)")) << line;
  s.tf32 = false;
  line = apply_convolution_settings(s, kGpu);
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
  EXPECT_TRUE(contains(line, "; float32 convolutions in float32 (--tf32 off)")) << line;
  s.deterministic = true;
  line = apply_convolution_settings(s, kGpu);
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
  EXPECT_TRUE(contains(line, "kernels: deterministic") && contains(line, "(--tf32 off)")) << line;
  s = ConvolutionSettings{};
  s.tf32 = true;
  line = apply_convolution_settings(s, kGpu);
  EXPECT_TRUE(at::globalContext().allowTF32CuDNN());
  EXPECT_TRUE(contains(line, "(--tf32 on; off: in float32)")) << line;
  EXPECT_TRUE(contains(error_of([&] { apply_convolution_settings(s, kCpu); }), "--tf32 on needs GPU ranks"));
  s.tf32 = std::nullopt;
  EXPECT_FALSE(contains(apply_convolution_settings(s, kCpu), "TF32")) << "a CPU rank has nothing to say of it";
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
}

TEST_F(ConvolutionSettingsTest, DeterministicTurnsTheAutotunerOffAndAsksForDeterministicKernels) {
  for (const torch::Device& device : {kGpu, kCpu}) {
    const std::string line = apply_convolution_settings(settings(std::nullopt, true), device);
    EXPECT_FALSE(at::globalContext().benchmarkCuDNN()) << device;
    EXPECT_TRUE(at::globalContext().deterministicCuDNN()) << device;
    EXPECT_TRUE(at::globalContext().deterministicAlgorithms()) << device;
    EXPECT_TRUE(at::globalContext().deterministicAlgorithmsWarnOnly()) << device;
    EXPECT_TRUE(contains(line, "kernels: deterministic (--deterministic")) << line;
    EXPECT_EQ(contains(line, "cuDNN"), device.is_cuda()) << line;
  }
  // And a later job in the same process without it gets the defaults back.
  apply_convolution_settings(settings(std::nullopt, false), kCpu);
  EXPECT_FALSE(at::globalContext().deterministicCuDNN());
  EXPECT_FALSE(at::globalContext().deterministicAlgorithms());
}

// See Note [oneDNN's wrong input gradients]: a CPU rank says only where its convolutions run
// without oneDNN (the test main prepared this process, so this is its measurement).
TEST_F(ConvolutionSettingsTest, CpuRanksSayOnlyWhereOneDnnIsOffAndRefuseTheAutotuner) {
  const auto prepared = pix2pix::checked_cpu_convolutions();
  const std::string onednn_off = prepared.onednn_turned_off ? "CPU convolutions " + pix2pix::describe(prepared) : "";
  EXPECT_EQ(apply_convolution_settings(settings(std::nullopt, false), kCpu),
            onednn_off.empty() ? "" : "kernels: " + onednn_off);
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN()) << "auto is off for CPU ranks";
  EXPECT_EQ(apply_convolution_settings(settings(false, false), kCpu),
            onednn_off.empty() ? "" : "kernels: " + onednn_off);
  const std::string deterministic = apply_convolution_settings(settings(std::nullopt, true), kCpu);
  EXPECT_EQ(contains(deterministic, "; " + onednn_off), !onednn_off.empty()) << deterministic;
  EXPECT_EQ(at::globalContext().userEnabledMkldnn(), !prepared.onednn_turned_off);
  const std::string cpu = error_of([] { apply_convolution_settings(settings(true, false), kCpu); });
  EXPECT_TRUE(contains(cpu, "--cudnn-benchmark on needs GPU ranks (--device cuda)")) << cpu;
  const std::string both = error_of([] { apply_convolution_settings(settings(true, true), kGpu); });
  EXPECT_TRUE(contains(both, "--cudnn-benchmark on and --deterministic contradict each other")) << both;
  EXPECT_THROW(apply_convolution_settings(settings(true, true), kGpu), pix2pix::UsageError);
}

// See Note [inference kernels are deterministic]: after a training job's autotuned settings, too.
TEST_F(ConvolutionSettingsTest, InferenceAsksCuDnnForDeterministicAlgorithmsWithoutTheAutotuner) {
  apply_convolution_settings(settings(true, false), kGpu);
  const std::string line = apply_inference_convolution_settings(kGpu);
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
  EXPECT_TRUE(at::globalContext().deterministicCuDNN());
  EXPECT_TRUE(contains(line, "cuDNN's deterministic algorithms, no autotuning")) << line;
  at::globalContext().setDeterministicCuDNN(false);
  // A CPU says nothing unless oneDNN is off there (See Note [oneDNN's wrong input gradients]).
  const auto cpu = pix2pix::checked_cpu_convolutions();
  EXPECT_EQ(apply_inference_convolution_settings(kCpu),
            cpu.onednn_turned_off ? "kernels: CPU convolutions " + pix2pix::describe(cpu) : "");
  EXPECT_EQ(at::globalContext().userEnabledMkldnn(), !cpu.onednn_turned_off);
  EXPECT_TRUE(at::globalContext().deterministicCuDNN()) << "the flag is the process's, set on any device";
}
