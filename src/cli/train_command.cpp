// `pix2pix train`: options → TrainOptions → Trainer::run, and the exit status of the run.
#include <cmath>
#include <cstdio>

#include <unistd.h>  // environ

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/heap.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/dist/mpi_session.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::cli {

int run_train(int argc, char** argv) {
  const CommandSpec spec{"train", "pix2pix train --data FILE.h5 [options]",
                         "Trains an image-to-image GAN (--model " + gan::model_names(" | ") + "; default " +
                             gan::default_model().name +
                             ") with validation\n"
                             "early stopping; writes metrics, samples and checkpoints to --run-dir.\n"
                             "A --run-dir that is not empty is refused unless --resume continues the run there\n"
                             "or --overwrite replaces it.\n"
                             "Exit status: 0 done (early stop or --max-epochs), 1 error, 2 usage, 75 stopped\n"
                             "gracefully by SIGINT/SIGTERM/SIGUSR1 (at a step: checkpoint written; during set-up:\n"
                             "nothing written); --resume auto continues."};
  const TrainCommandLine command_line;
  const auto parsed = parse_command(spec, command_line.options(), po::positional_options_description(), argc, argv,
                                    &command_line.hidden());
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  retain_freed_memory(environ);  // See Note [freed memory stays in the heap]: before MPI and torch allocate
  dist::MpiSession mpi(&argc, &argv);
  install_interrupt_handlers();
  // Stopped during set-up: no step ran, nothing was written that --resume auto would not continue
  // from, so this is the same graceful stop as at a step boundary.
  const char* after_interrupt = "; nothing was written (--resume auto continues from the existing checkpoints, if any)";
  return run_training_job("train", mpi, after_interrupt, [&] {
    TrainJob job = make_train_job(command_line, vm, mpi);
    const train::TrainOptions& options = job.options;
    train::Trainer trainer(options, job.device, *job.comm, job.faults);
    const train::RunResult result = trainer.run();
    if (mpi.rank() == 0) {
      std::printf("stopped: %s\n", result.stop_reason.c_str());
      if (result.best_epoch >= 0 && options.es_metric == train::EsMetric::psnr && std::isnan(result.baseline_psnr)) {
        std::printf("best epoch %lld, smoothed %s %.3f dB\n", static_cast<long long>(result.best_epoch),
                    result.watched.c_str(), result.best_smoothed);
      } else if (result.best_epoch >= 0 && options.es_metric == train::EsMetric::psnr) {
        std::printf("best epoch %lld, smoothed validation PSNR %.3f dB (baseline %.3f dB)\n",
                    static_cast<long long>(result.best_epoch), result.best_smoothed, result.baseline_psnr);
      } else if (result.best_epoch >= 0) {
        std::printf("best epoch %lld, smoothed recognition accuracy of G(A) %.4f (real B images %.4f)\n",
                    static_cast<long long>(result.best_epoch), result.best_smoothed, result.real_recognition);
      }
      std::printf("run directory: %s (metrics.csv, samples/, checkpoints/best_generator.pt, summary.json)\n",
                  options.run_dir.c_str());
    }
    return result.exit_code;
  });
}

}  // namespace pix2pix::cli
