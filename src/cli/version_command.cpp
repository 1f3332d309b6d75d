// `pix2pix --version`: what this binary was built with, for bug reports and scaling studies.
#include <torch/version.h>

#include <cstdio>

#include "pix2pix/build_info.hpp"
#include "pix2pix/cli/commands.hpp"
#include "pix2pix/data/h5_io.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/dist/cuda_device.hpp"
#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::cli {

int print_version() {
  std::printf("pix2pix-mpi %s (%s, %s)\n", build_info::kVersion, build_info::kBuildType, build_info::kCompiler);
  std::printf("  LibTorch  %s\n", TORCH_VERSION);
  std::printf("  HDF5      %s (%s)\n", data::h5::library_version().c_str(),
              data::mpio_driver_available() ? "parallel, mpio driver available" : "serial only");
  std::printf("  MPI       %s\n", dist::mpi_library_version().c_str());
  std::printf("  OpenCV    %s\n", build_info::kOpenCvVersion);
  std::printf("  ONNX      %s\n", build_info::kOnnxVersion);
  std::printf("  CUDA/NCCL %s\n", dist::cuda_build_summary().c_str());
  return 0;
}

}  // namespace pix2pix::cli
