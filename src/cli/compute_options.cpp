#include "pix2pix/cli/compute_options.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/dist/communicator_factory.hpp"

namespace pix2pix::cli {

po::options_description compute_option_description() {
  po::options_description compute("Ranks and kernels");
  compute.add_options()("comm", po::value<std::string>()->default_value("auto"),
                        "auto | nccl | mpi: the communicator between ranks (auto: NCCL for GPU ranks, MPI for CPU "
                        "ranks; mpi stages GPU tensors through host memory)")(
      "collective-timeout", po::value<double>()->default_value(600.0),
      "seconds a collective may take before the job is ended with a report")(
      "cudnn-benchmark", po::value<std::string>()->default_value("auto"),
      "on | off | auto: let cuDNN time its convolution algorithms for the fixed training shapes and keep the "
      "fastest (auto: on for GPU ranks)")(
      "deterministic", po::bool_switch(),
      "deterministic kernels (cuDNN's deterministic algorithms, no autotuning): two runs, and a run and its "
      "resume, give the same bits on GPUs; a little slower");
  return compute;
}

std::unique_ptr<dist::Communicator> communicator_from(const po::variables_map& vm, const torch::Device& device,
                                                      const dist::MpiSession& mpi) {
  return dist::make_communicator(dist::parse_backend(vm["comm"].as<std::string>()), device, mpi,
                                 real_option(vm, "collective-timeout", Range::above(0)));
}

dist::ConvolutionSettings convolution_settings_from(const po::variables_map& vm) {
  dist::ConvolutionSettings settings;
  settings.autotune = parse_on_off_auto(vm["cudnn-benchmark"].as<std::string>(), "--cudnn-benchmark");
  settings.deterministic = vm["deterministic"].as<bool>();
  return settings;
}

}  // namespace pix2pix::cli
