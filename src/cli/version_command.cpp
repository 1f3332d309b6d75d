// `pix2pix --version`: what this binary was built with and the libraries it runs with here, for
// bug reports and scaling studies.
#include <cstdio>
#include <string>

#include "pix2pix/build_info.hpp"
#include "pix2pix/cli/commands.hpp"
#include "pix2pix/common/cxx_runtime.hpp"
#include "pix2pix/data/h5_io.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/dist/cuda_device.hpp"
#include "pix2pix/dist/library_versions.hpp"
#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::cli {

std::string version_text() {
  std::string text;
  const auto line = [&](const char* format, auto... values) {
    char buffer[1024];
    std::snprintf(buffer, sizeof(buffer), format, values...);
    text += buffer;
  };
  line("pix2pix-mpi %s (%s, %s)\n", build_info::kVersion, build_info::kBuildType, build_info::kCompiler);
  line("  LibTorch  %s\n", dist::libtorch_summary().c_str());
  line("  HDF5      %s (%s)\n", data::h5::library_version().c_str(),
       data::mpio_driver_available() ? "parallel, mpio driver available" : "serial only");
  line("  MPI       %s\n", dist::mpi_library_version().c_str());
  line("  OpenCV    %s\n", build_info::kOpenCvVersion);
  line("  ONNX      %s\n", build_info::kOnnxVersion);
  line("  CUDA/NCCL %s\n", dist::cuda_nccl_summary().c_str());
  const CxxRuntime runtime = inspect_cxx_runtime();  // See Note [two C++ runtimes in one process]
  std::string cxx = "libstdc++ linked in (no libstdc++.so.6 loaded)";
  if (!runtime.split.empty())
    cxx = "split: " + runtime.split;
  else if (!runtime.library.empty())
    cxx = runtime.library + ", one runtime" +
          (restarted_with_whole_runtime() ? " (restarted with it preloaded: the link order did not take)" : "");
  line("  C++       %s\n", cxx.c_str());
  const int gpus = dist::cuda_device_count();
  line("  GPUs      %s\n", gpus == 0 ? "none visible" : (std::to_string(gpus) + " visible").c_str());
  for (int i = 0; i < gpus; ++i) line("    cuda:%d  %s\n", i, dist::cuda_device_description(i).c_str());
  return text;
}

int print_version() {
  std::fputs(version_text().c_str(), stdout);
  return 0;
}

}  // namespace pix2pix::cli
