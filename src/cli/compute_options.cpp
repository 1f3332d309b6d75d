#include "pix2pix/cli/compute_options.hpp"

namespace pix2pix::cli {

OptionGroup compute_options(ComputeChoices& into) {
  OptionGroup g("Ranks and kernels");
  g.choice("comm", into.backend, "auto", dist::parse_backend,
           "auto | nccl | mpi: the communicator between ranks (auto: NCCL for GPU ranks, MPI for CPU ranks; mpi "
           "stages GPU tensors through host memory)")
      .how_the_job_runs();
  g.real("collective-timeout", into.collective_timeout, Range::above(0),
         "seconds a collective may take before the job is ended with a report")
      .how_the_job_runs()
      .rank_local();
  g.on_off_auto("cudnn-benchmark", into.convolution.autotune,
                "on | off | auto: let cuDNN time its convolution algorithms for the fixed training shapes and keep the "
                "fastest (auto: on for GPU ranks)")
      .how_the_job_runs();
  g.on_off_auto("tf32", into.convolution.tf32,
                "on | off | auto: float32 convolutions on a GPU's TF32 tensor cores, faster and about 3 digits less "
                "precise (auto: on for GPU ranks, as in PyTorch; off: in float32, for comparing runs bit-close)")
      .how_the_job_runs();
  // The same values, the same bits on GPUs: not what is learned.
  g.flag("deterministic", into.convolution.deterministic,
         "deterministic kernels (cuDNN's deterministic algorithms, no autotuning): two runs, and a run and its "
         "resume, give the same bits on GPUs; a little slower")
      .how_the_job_runs();
  return g;
}

std::unique_ptr<dist::Communicator> communicator_from(const ComputeChoices& choices, const torch::Device& device,
                                                      const dist::MpiSession& mpi) {
  return dist::make_communicator(choices.backend, device, mpi, choices.collective_timeout);
}

}  // namespace pix2pix::cli
