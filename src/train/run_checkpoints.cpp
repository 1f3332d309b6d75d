#include "pix2pix/train/run_checkpoints.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <tuple>

#include "pix2pix/checkpoint/checkpoint_seal.hpp"
#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/train/option_changes.hpp"

namespace pix2pix::train {
namespace {
constexpr const char* kFolder = "checkpoints";  // in the run directory (metrics::RunDirectory::kEntries)
}  // namespace

RunCheckpoints::RunCheckpoints(const RunOptions& run, gan::GanModel& model, GeneratorEma* ema, torch::Device device,
                               dist::Communicator& comm, const FaultHook* faults)
    : run_(run), model_(model), ema_(ema), device_(device), comm_(comm), faults_(faults) {}

std::string RunCheckpoints::path_of(const std::string& name) const {
  return (std::filesystem::path(run_.run_dir) / kFolder / name).string();
}

checkpoint::CheckpointParts RunCheckpoints::parts() {
  checkpoint::CheckpointParts parts;
  for (const gan::NamedNetwork& network : model_.networks()) parts.networks.emplace_back(network.key, network.module);
  // A run may start keeping an average on resume (See Note [the generator's moving average]).
  if (ema_)
    for (const gan::NamedNetwork& average : ema_->networks())
      parts.optional_networks.emplace_back(average.key, average.module);
  for (optim::UpdateGroup* group : model_.update_groups())
    parts.optimizers.emplace_back(group->checkpoint_key(), &group->optimizer());
  for (const auto& [key, pool] : model_.pools()) parts.pools.push_back(key);
  return parts;
}

// Note [checkpointed image pools]: a discriminator's pool (image_pool.hpp) is state of its rank,
// not of the replicated networks: each rank's holds the images its generators made from its
// shard. Its draws are seeded per (step, rank) like every other, so a resumed run repeats an
// uninterrupted one exactly only if every rank gets its own pool back. Rank 0 writes the
// checkpoints, so the pools travel there first: one broadcast per rank and pool (the existing
// collective, on every backend; the images of one rank in flight at a time), every epoch end
// and at a graceful stop. The cost is a checkpoint larger by world × pools × pool size images
// (50 RGB 256² float images are 39 MB; a model may have two pools) and that much traffic to each
// rank; docs/distributed.md says it. A run on another world size gives rank r the pool of rank
// r mod the old world: not exact (nothing of an elastic resume is), but each discriminator
// keeps a full history of images from the run.
void RunCheckpoints::gather_pools() {
  gathered_pools_.clear();
  const bool root = comm_.rank() == 0;
  for (const auto& [key, pool] : model_.pools()) {
    const torch::Tensor mine = pool->images();
    std::vector<torch::Tensor> ranks;
    for (int r = 0; r < comm_.world(); ++r) {
      torch::Tensor images = mine;
      if (comm_.world() > 1) {
        // Its shape and type first: [n, C, H, W, scalar type]; n = 0 for an empty pool.
        auto shape = torch::zeros({5}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
        if (comm_.rank() == r && mine.defined())
          shape = torch::tensor({mine.size(0), mine.size(1), mine.size(2), mine.size(3),
                                 static_cast<std::int64_t>(mine.scalar_type())},
                                torch::kInt64)
                      .to(device_);
        comm_.broadcast(shape, r);
        const auto s = shape.cpu();
        const auto* v = s.data_ptr<std::int64_t>();
        if (v[0] == 0) {
          images = torch::Tensor();
        } else {
          images =
              comm_.rank() == r
                  ? mine.contiguous()
                  : torch::empty({v[0], v[1], v[2], v[3]},
                                 torch::TensorOptions().dtype(static_cast<torch::ScalarType>(v[4])).device(device_));
          comm_.broadcast(images, r);
        }
      }
      if (root) ranks.push_back(images.defined() ? images.cpu() : images);
    }
    if (root) gathered_pools_.emplace_back(key, std::move(ranks));
  }
}

void RunCheckpoints::restore_pools(const checkpoint::TrainingState& s, const checkpoint::TrainedOn& size,
                                   const std::string& path) {
  for (const auto& [key, pool] : model_.pools()) {
    if (pool->capacity() == 0) continue;
    std::string lost;
    const auto stored =
        std::find_if(s.pools.begin(), s.pools.end(), [&](const auto& entry) { return entry.first == key; });
    if (stored == s.pools.end() || stored->second.empty()) {
      lost = "the checkpoint holds none";
    } else {
      const torch::Tensor& images = stored->second[static_cast<std::size_t>(comm_.rank()) % stored->second.size()];
      if (images.defined() && (images.size(2) != size.height || images.size(3) != size.width)) {
        lost = "its images are " + std::to_string(images.size(2)) + "x" + std::to_string(images.size(3)) +
               ", this run trains on " + std::to_string(size.height) + "x" + std::to_string(size.width);
      } else {
        pool->restore(images, device_);
      }
    }
    if (!lost.empty() && comm_.rank() == 0)
      std::printf("note: image pool %s starts empty: %s (%s)\n", key.c_str(), lost.c_str(), path.c_str());
  }
  if (comm_.rank() == 0 && !model_.pools().empty() && s.world != comm_.world() && !s.pools.empty())
    std::printf("note: the checkpoint holds the image pools of %lld ranks: rank r takes rank (r mod %lld)'s\n",
                static_cast<long long>(s.world), static_cast<long long>(s.world));
}

void RunCheckpoints::save(const std::string& name, checkpoint::TrainingState state, bool end_of_epoch) {
  state.model_shape = model_.shape();
  for (const optim::UpdateGroup* group : model_.update_groups())
    state.scalers.emplace_back(group->checkpoint_key(), group->scaler().state());
  state.pools = gathered_pools_;
  const std::string path = path_of(name);
  // last.pt is what --resume auto takes; its predecessor stays as last.prev.pt in case the new
  // one is later found damaged.
  if (name == "last.pt") checkpoint::keep_previous_checkpoint(path);
  if (end_of_epoch && faults_)
    faults_->at(RunMoment::checkpoint, state.epoch, comm_.rank(), [&](const std::string& what) {
      // Killed with half a checkpoint written, as a node failure would.
      checkpoint::write_atomically(path, [&](const std::string& tmp) {
        checkpoint::save_checkpoint(tmp, parts(), state);
        std::filesystem::resize_file(tmp, std::filesystem::file_size(tmp) / 2);
        die_for_test(comm_.rank(), what + ": killed while writing " + path);
      });
    });
  checkpoint::save_checkpoint(path, parts(), state);
}

void RunCheckpoints::save_epoch(const checkpoint::TrainingState& state, bool improved) {
  if (improved) save_best(state);
  save("last.pt", state, /*end_of_epoch=*/true);
  if (run_.keep_last > 0) {
    char name[32];
    std::snprintf(name, sizeof(name), "epoch_%04lld.pt", static_cast<long long>(state.epoch));
    save(name, state);
    char old[32];
    std::snprintf(old, sizeof(old), "epoch_%04lld.pt", static_cast<long long>(state.epoch - run_.keep_last));
    std::error_code ec;
    std::filesystem::remove(path_of(old), ec);
  }
}

void RunCheckpoints::save_best(const checkpoint::TrainingState& state) {
  save("best.pt", state);
  nets::Generator& translator = ema_ ? ema_->translator() : model_.translator();
  checkpoint::save_generator(path_of("best_generator.pt"), *translator, model_.shape(), state.trained_on, state.epoch,
                             ema_ != nullptr);
}

std::string RunCheckpoints::pick() {
  if (run_.resume != "auto") return run_.resume;
  std::string chosen, damaged;
  if (comm_.rank() == 0) {
    const auto folder = (std::filesystem::path(run_.run_dir) / kFolder).string();
    for (const std::string& path : checkpoint::resume_candidates(folder)) {
      // A file of the run directory itself: not a link, not a FIFO (See Note [a run directory is untrusted input]).
      try {
        open_beneath(run_.run_dir, (std::filesystem::path(kFolder) / std::filesystem::path(path).filename()).string(),
                     std::numeric_limits<std::int64_t>::max());
      } catch (const Error& e) {
        std::fprintf(stderr, "warning: not resuming from %s; trying an older one\n", e.what());
        damaged += "\n  " + std::string(e.what());
        continue;
      }
      const auto damage = checkpoint::check_seal(path);
      if (!damage) {
        chosen = path;
        break;
      }
      std::fprintf(stderr, "warning: checkpoint %s is damaged (%s); trying an older one\n", path.c_str(),
                   damage->c_str());
      damaged += "\n  " + path + ": " + *damage;
    }
    if (chosen.empty() && !damaged.empty())
      throw Error("--resume auto: every checkpoint in " + folder + " is damaged or not a file of the run:" + damaged);
  }
  if (comm_.rank() == 0 && chosen.empty())
    std::printf("--resume auto: no checkpoint in %s yet: a fresh start\n", run_.run_dir.c_str());
  return comm_.broadcast_string(chosen, 0);  // empty: nothing to continue, a fresh start
}

std::optional<checkpoint::TrainingState> RunCheckpoints::resume(const checkpoint::TrainingState& now,
                                                                std::string& path) {
  if (run_.resume.empty()) return std::nullopt;
  path = pick();
  if (path.empty()) return std::nullopt;
  // Rank 0 chose it; every rank reads it. On node-local run directories they would read
  // different files under one name (See Note [ranks that agree] in cli/rank_agreement.hpp).
  const std::string mine = file_fingerprint(path);
  const std::string rank0 = comm_.broadcast_string(mine, 0);
  if (comm_.any(mine != rank0))
    throw Error("--resume " + path + ": the ranks do not read the same file there (rank 0's is " + rank0 +
                (mine != rank0 ? ", this rank's " + mine : std::string()) +
                "); the run directory must be one folder every rank sees");
  checkpoint::TrainingState s = checkpoint::load_checkpoint(path, parts(), model_.shape());
  // The objective must be the one the checkpoint trained with; the identity leaves out the path,
  // so a moved classifier file is still the same one.
  const std::string& recognition = now.recognition;
  if (s.recognition != recognition) {
    const auto said = [](const std::string& identity) { return identity.empty() ? "none" : identity; };
    throw UsageError("--resume " + path + ": the checkpoint was trained with auxiliary classifier " +
                     said(s.recognition) + ", this run has " + said(recognition) +
                     "; pass the same --aux-classifier and --lambda-aux");
  }
  if (s.es_metric != now.es_metric)
    throw UsageError("--resume " + path + ": its early stopping watched " + s.es_metric + ", this run --es-metric " +
                     now.es_metric + "; the smoothed history of one is no use to the other");
  // The values the networks learned to map: another type or range would mean other inputs.
  for (const auto& [name, then, data] : {std::tuple{"A", s.trained_on.samples_a, now.trained_on.samples_a},
                                         std::tuple{"B", s.trained_on.samples_b, now.trained_on.samples_b}})
    if (then != data)
      throw Error("--resume " + path + ": the checkpoint's run trained on " + name + " values " +
                  data::to_string(then) + ", this run's data holds " + data::to_string(data) +
                  "; resume with the dataset (or the range, prepare --range-" + (std::string(name) == "A" ? "a" : "b") +
                  ") it was trained on");
  // See Note [options a resume may change]: every rank decides alike (their options agree).
  const std::vector<OptionChange> changes = option_changes(s.options, now.options, run_.option_roles);
  std::vector<OptionChange> learning;
  const bool on_kid = now.es_metric == to_string(EsMetric::kid);
  const bool on_features = on_kid || now.es_metric == to_string(EsMetric::fid);
  for (const OptionChange& change : changes)
    if (change.changes_learning || (on_features && change.option.rfind("--val-features", 0) == 0) ||
        (on_kid && change.option.rfind("--val-kid", 0) == 0))
      learning.push_back(change);
  if (!learning.empty() && !run_.accept_changed_options)
    throw UsageError("--resume " + path + ": this run changes what the checkpoint's run learns: " +
                     describe_changes(learning) + "; give the values it was trained with (" + run_.run_dir +
                     "/config.cfg lists them), or --accept-changed-options to continue with the new ones");
  if (!changes.empty() && comm_.rank() == 0)
    std::printf("note: --resume: options changed since the checkpoint: %s\n", describe_changes(changes, 100).c_str());
  restore_pools(s, now.trained_on, path);
  if (ema_ && !s.absent_networks.empty()) {
    ema_->restart();
    if (comm_.rank() == 0)
      std::printf("note: %s holds no moving average of the generator: --ema-decay %g starts it from its weights\n",
                  path.c_str(), ema_->decay());
  }
  const auto groups = model_.update_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g]->scaler().restore(s.scalers.at(g).second);
  return s;
}

}  // namespace pix2pix::train
