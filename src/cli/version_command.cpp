// `pix2pix --version`: what this binary was built with and the libraries it runs with here, for
// bug reports and scaling studies.
#include <cstdio>

#include "pix2pix/build_info.hpp"
#include "pix2pix/cli/commands.hpp"
#include "pix2pix/common/cxx_runtime.hpp"
#include "pix2pix/data/h5_io.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/dist/cuda_device.hpp"
#include "pix2pix/dist/library_versions.hpp"
#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::cli {

int print_version() {
  std::printf("pix2pix-mpi %s (%s, %s)\n", build_info::kVersion, build_info::kBuildType, build_info::kCompiler);
  std::printf("  LibTorch  %s\n", dist::libtorch_summary().c_str());
  std::printf("  HDF5      %s (%s)\n", data::h5::library_version().c_str(),
              data::mpio_driver_available() ? "parallel, mpio driver available" : "serial only");
  std::printf("  MPI       %s\n", dist::mpi_library_version().c_str());
  std::printf("  OpenCV    %s\n", build_info::kOpenCvVersion);
  std::printf("  ONNX      %s\n", build_info::kOnnxVersion);
  std::printf("  CUDA/NCCL %s\n", dist::cuda_nccl_summary().c_str());
  const CxxRuntime runtime = inspect_cxx_runtime();  // See Note [two C++ runtimes in one process]
  std::printf("  C++       %s\n", runtime.library.empty() ? "libstdc++ linked in (no libstdc++.so.6 loaded)"
                                  : runtime.split.empty() ? (runtime.library + ", one runtime").c_str()
                                                          : ("split: " + runtime.split).c_str());
  const int gpus = dist::cuda_device_count();
  std::printf("  GPUs      %s\n", gpus == 0 ? "none visible" : (std::to_string(gpus) + " visible").c_str());
  for (int i = 0; i < gpus; ++i) std::printf("    cuda:%d  %s\n", i, dist::cuda_device_description(i).c_str());
  return 0;
}

}  // namespace pix2pix::cli
