// What --version and the start-up table say about the libraries this process runs with: the
// version codes of CUDA, NCCL and cuDNN written as people write them, and the summaries built from
// what the loaded libraries report (on this machine: a CUDA build without a driver or a GPU).
#include <gtest/gtest.h>
#include <torch/version.h>

#include <ATen/detail/CUDAHooksInterface.h>

#include "pix2pix/dist/cuda_device.hpp"
#include "pix2pix/dist/library_versions.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix::dist;

using pix2pix::fixtures::contains;

TEST(LibraryVersions, CodesAreWrittenAsTheLibrariesNumberThem) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(11080), "11.8");
  EXPECT_EQ(nccl_version_string(22809), "2.28.9");  // NCCL_VERSION(2, 28, 9) from 2.9 on
  EXPECT_EQ(nccl_version_string(21903), "2.19.3");
  EXPECT_EQ(nccl_version_string(2804), "2.8.4");    // and before
  EXPECT_EQ(cudnn_version_string(90100), "9.1.0");  // cuDNN 9
  EXPECT_EQ(cudnn_version_string(8907), "8.9.7");   // cuDNN 8
}

TEST(LibraryVersions, LibtorchSummarySaysWhetherItCanRunOnGpus) {
  const std::string summary = libtorch_summary();
  EXPECT_EQ(summary.rfind(TORCH_VERSION, 0), 0u) << summary;
  const bool cuda_libtorch = at::detail::getCUDAHooks().hasCUDART();
  EXPECT_EQ(contains(summary, "CPU only"), !cuda_libtorch) << summary;
  EXPECT_EQ(contains(summary, "built for CUDA "), cuda_libtorch) << summary;
}

TEST(LibraryVersions, CudaSummaryNamesWhatWasCompiledAndWhatIsLoaded) {
  const std::string summary = cuda_nccl_summary();
  if (!cuda_compiled()) {
    EXPECT_EQ(summary, "not compiled in");
    EXPECT_EQ(cuda_loaded_versions().runtime, 0);
    return;
  }
  const CudaLibraries compiled = cuda_compiled_versions(), loaded = cuda_loaded_versions();
  EXPECT_GE(compiled.runtime, 11000);
  EXPECT_GE(compiled.nccl, 2000);
  // The runtime and NCCL answer without a driver or a GPU; the driver's version is 0 without one.
  EXPECT_GE(loaded.runtime, 11000);
  EXPECT_GE(loaded.nccl, 2000);
  EXPECT_TRUE(contains(summary, "compiled for CUDA runtime " + cuda_version_string(compiled.runtime) + " and NCCL " +
                                    nccl_version_string(compiled.nccl)))
      << summary;
  EXPECT_TRUE(contains(summary, "loaded CUDA runtime " + cuda_version_string(loaded.runtime) + ", NCCL " +
                                    nccl_version_string(loaded.nccl)))
      << summary;
  EXPECT_TRUE(contains(summary, loaded.driver > 0 ? "driver " + cuda_version_string(loaded.driver) : "driver none"))
      << summary;
}
