// How a training command's ranks compute and talk, declared once for train, bench and
// train-classifier: --comm, --collective-timeout, --cudnn-benchmark and --deterministic.
#pragma once

#include <memory>

#include "pix2pix/cli/options.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/convolution_settings.hpp"

namespace pix2pix::dist {
class MpiSession;
}

namespace pix2pix::cli {

po::options_description compute_option_description();

// The job's communicator from --comm and --collective-timeout (dist/communicator_factory.hpp).
std::unique_ptr<dist::Communicator> communicator_from(const po::variables_map& vm, const torch::Device& device,
                                                      const dist::MpiSession& mpi);

// --cudnn-benchmark and --deterministic, parsed (See Note [cuDNN's autotuner and determinism]).
dist::ConvolutionSettings convolution_settings_from(const po::variables_map& vm);

}  // namespace pix2pix::cli
