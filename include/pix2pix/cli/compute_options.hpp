// How a training command's ranks compute and talk, declared once for train, bench and
// train-classifier: --comm, --collective-timeout, --cudnn-benchmark and --deterministic.
#pragma once

#include <memory>

#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/communicator_factory.hpp"
#include "pix2pix/dist/convolution_settings.hpp"

namespace pix2pix::dist {
class MpiSession;
}

namespace pix2pix::cli {

// The options' values once parsed.
struct ComputeChoices {
  dist::Backend backend = dist::Backend::automatic;  // --comm
  double collective_timeout = 600.0;                 // --collective-timeout (seconds)
  // --cudnn-benchmark and --deterministic (See Note [cuDNN's autotuner and determinism]).
  dist::ConvolutionSettings convolution;
};

// Declares the options, bound to `into` (See Note [an option is declared once]).
OptionGroup compute_options(ComputeChoices& into);

// The job's communicator (dist/communicator_factory.hpp).
std::unique_ptr<dist::Communicator> communicator_from(const ComputeChoices& choices, const torch::Device& device,
                                                      const dist::MpiSession& mpi);

}  // namespace pix2pix::cli
