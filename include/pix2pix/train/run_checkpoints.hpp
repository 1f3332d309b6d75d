// The run's checkpoint files, for any model: what of the model they hold (its networks,
// optimisers, loss scalers, image pools and, with --ema-decay, the averages), writing them
// (last.pt with its predecessor kept, the rotated epoch_NNNN.pt, best.pt with best_generator.pt),
// and --resume: which file (with auto, the newest undamaged one of the run), whether this run may
// continue it, and reading it back into the model. The loop's own counters (epoch, step, early
// stopping, clocks) travel in checkpoint::TrainingState, which the Trainer fills and applies.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/train/generator_ema.hpp"
#include "pix2pix/train/test_faults.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::train {

class RunCheckpoints {
 public:
  // `ema` (null without --ema-decay) and `faults` (null in production) must outlive this.
  RunCheckpoints(const RunOptions& run, gan::GanModel& model, GeneratorEma* ema, torch::Device device,
                 dist::Communicator& comm, const FaultHook* faults);

  // Collective, before rank 0 saves: every rank's image pools to rank 0, which puts them in the
  // checkpoints it writes until the next call (See Note [checkpointed image pools]).
  void gather_pools();
  // Rank 0: `state` with the gathered pools as checkpoints/<name>; last.pt keeps its predecessor as
  // last.prev.pt. `end_of_epoch`: the epoch's own last.pt, where --test-*-in-checkpoint strike.
  void save(const std::string& name, checkpoint::TrainingState state, bool end_of_epoch = false);
  // Rank 0, at the end of an epoch: best.pt and best_generator.pt when `improved`, last.pt, and
  // with --keep-last N epoch_NNNN.pt, the one N epochs older removed.
  void save_epoch(const checkpoint::TrainingState& state, bool improved);
  // Rank 0: best.pt, and best_generator.pt (the average's generator with --ema-decay).
  void save_best(const checkpoint::TrainingState& state);

  // Collective: with --resume, the checkpoint rank 0 picked (every rank must read the same file),
  // checked against `now` (this run's state, Trainer::state(): what it must match is its
  // --aux-classifier identity, --es-metric, value types and recorded options) and read into the
  // model, the pools and the average; its state for the loop's counters, with the path in `path`.
  // nullopt: nothing to continue (a fresh start).
  std::optional<checkpoint::TrainingState> resume(const checkpoint::TrainingState& now, std::string& path);

 private:
  std::string path_of(const std::string& name) const;  // run_dir/checkpoints/name
  checkpoint::CheckpointParts parts();
  std::string pick();  // --resume auto: the newest undamaged one ("": none)
  void restore_pools(const checkpoint::TrainingState& s, const checkpoint::TrainedOn& now, const std::string& path);

  const RunOptions run_;
  gan::GanModel& model_;
  GeneratorEma* ema_;
  torch::Device device_;
  dist::Communicator& comm_;
  const FaultHook* faults_;
  // Rank 0: every rank's image pools as of the last gather_pools() (TrainingState::pools).
  std::vector<std::pair<std::string, std::vector<torch::Tensor>>> gathered_pools_;
};

}  // namespace pix2pix::train
