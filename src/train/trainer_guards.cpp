// What ends a run early rather than let it mislead: data the model cannot learn or be validated
// on, a stop request while the cache fills, too little memory to train at all, an epoch in which
// a network learned nothing.
#include <cmath>
#include <cstdio>

#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/train/non_finite.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::train {
namespace {

// "--model a" or "--model a or --model b": the models that learn from unpaired images.
std::string unpaired_models() {
  std::string text;
  for (const auto& entry : gan::registered_models())
    if (!entry.learns_from_pairs) text += (text.empty() ? "--model " : " or --model ") + entry.name;
  return text;
}

}  // namespace

void Trainer::check_data_for_model() {
  const gan::ModelEntry& model = gan::model_entry(model_options_.model);
  for (const char* split : {data::format::kTrain, data::format::kVal})
    if (model.learns_from_pairs && !dataset_->split(split).paired)
      throw UsageError(data_.data + ": /" + split + " is unpaired (its A and B images are not pairs); --model " +
                       model.name + " learns from pairs: use " + unpaired_models() + ", or a paired file");
  // An unpaired val split has no B to score G(A) against: early stopping watches the model's
  // content score (a model that learns from pairs has none, and was refused above).
  content_ = model.content;
  stop_on_content_ = !dataset_->split(data::format::kVal).paired;
  if (stop_on_content_ && !content_)
    throw UsageError(data_.data + ": /val is unpaired, and --model " + model.name +
                     " has no score for an unpaired val split: give it a paired val split (prepare --paired-val)");
  const auto& train_info = dataset_->split(data::format::kTrain);
  const std::int64_t channels_a = train_info.channels(data::Domain::A),
                     channels_b = train_info.channels(data::Domain::B);
  const std::string unavailable =
      content_ && content_->unavailable ? content_->unavailable(channels_a, channels_b) : std::string();
  if (!unavailable.empty()) {
    if (stop_on_content_)
      throw UsageError(data_.data + ": /val is unpaired, so --model " + model.name + " scores it by the " +
                       content_->metric + ", which " + unavailable +
                       ": give it a paired val split (prepare --paired-val)");
    content_.reset();
  }
}

std::function<void(std::int64_t, std::int64_t)> Trainer::cache_progress() const {
  auto bar = std::make_shared<std::unique_ptr<Progress>>();
  const bool show = comm_.rank() == 0;
  const std::shared_ptr<const FaultHook> faults = faults_;
  const int rank = comm_.rank();
  const auto style = loop_.progress;
  return [bar, show, faults, rank, style](std::int64_t done, std::int64_t total) {
    if (faults) faults->at(RunMoment::cache_block, done, rank, {});  // See Note [test fault injection]
    if (show && total > done && !*bar) *bar = std::make_unique<Progress>("caching the shard", total, stdout, style);
    if (*bar) {
      (*bar)->advance(done - (*bar)->done());
      if (done == total) (*bar)->finish();
    }
    throw_if_interrupted("caching the shard (" + std::to_string(done) + " of " + std::to_string(total) +
                         " images read)");
  };
}

void Trainer::require_training_memory() const {
  // Note [training memory floor]
  // A floor, not an estimate: weights, gradients and both Adam moments of every network, plus 512 MiB
  // for activations and BLAS buffers. Below it, training cannot run anyway, and OpenBLAS does not
  // fail when it cannot allocate its buffers: it retries forever (seen under `ulimit -v`), so a
  // job would hang instead of ending with this message. On GPUs the parameters live on the
  // device, where LibTorch reports its own out-of-memory errors; the host still needs the rest.
  std::int64_t parameters = 0;
  for (const gan::NamedNetwork& network : model_->networks())
    for (const auto& p : network.module->parameters()) parameters += p.numel();
  const std::int64_t on_host = device_.is_cuda() ? 0 : 16 * parameters;
  require_memory(on_host + (512LL << 20),
                 "training these networks (" + std::to_string(parameters) +
                     " parameters with gradients and Adam state, and 512 MiB for activations and BLAS buffers)");
}

void Trainer::fail_if_nothing_learned(std::int64_t epoch, std::int64_t steps, const std::vector<std::int64_t>& skipped,
                                      const metrics::EpochMetrics& m) {
  // A skipped step is normal while an fp16 loss scale calibrates (it halves each time); once the
  // scale is below 1, or without loss scaling, gradients that are never finite mean that nothing
  // can be learned, and a "best" model of such a run would be a lie. Every rank takes the same
  // skip decisions (they follow from averaged gradients), so every rank stops here together.
  const bool scaling =
      model_options_.update.precision == optim::Precision::fp16 || model_options_.update.force_loss_scaling;
  const auto groups = model_->update_groups();
  std::string which;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const bool lost = steps > 0 && skipped.at(g) == steps && !(scaling && groups[g]->scaler().scale() >= 1.0);
    if (lost) which += (which.empty() ? "the " : " and the ") + groups[g]->what();
  }
  if (which.empty()) return;
  std::string losses;
  for (const auto& [name, value] : m.losses) {
    char text[96];
    std::snprintf(text, sizeof(text), "%s%s %g", losses.empty() ? "" : ", ", name.c_str(), value);
    losses += text;
  }
  const std::string message = "epoch " + std::to_string(epoch) + ": every one of its " + std::to_string(steps) +
                              " steps left " + which + " unchanged because its gradients were not finite (" + losses +
                              "); the run cannot learn: check --lr, the model's loss weights, --precision and the data";
  if (comm_.rank() == 0) report_->failed_epoch(m, message);
  throw Error(message);
}

// Note [non-finite values stop a run]: a NaN or infinite loss or validation score is never a
// result. Data is checked as it is read (See Note [non-finite data stops a run]); what the networks
// make of finite data can still overflow (a too high --lr, fp16 without scaling), and a run that
// went on would log "loss_D nan" every epoch and save a "best" model chosen among NaNs. One policy
// lets it through: with loss scaling (fp16), a step whose gradients overflow is skipped while the
// scale calibrates, and its loss may be infinite; an epoch with such skipped steps may report a
// non-finite loss mean, and fail_if_nothing_learned still ends a run in which nothing is learned.
// The losses are all-reduced and the validation's verdict is broadcast from rank 0, so every rank
// throws the same error at the same point.
std::string non_finite_problem(std::int64_t epoch, const metrics::NamedValues& losses, bool scaler_skipped,
                               bool val_not_finite, const std::string& watched) {
  for (const auto& [name, value] : losses)
    if (!std::isfinite(value) && !scaler_skipped) {
      const char* text = std::isnan(value) ? "NaN" : value > 0 ? "+inf" : "-inf";  // glibc's %g may say -nan
      return "epoch " + std::to_string(epoch) + ": " + name + " is " + text +
             " (its mean over the epoch and all ranks): a step's loss was not finite; the run cannot go on: "
             "check --lr, the --lambda-* weights, --precision and the data's range";
    }
  if (val_not_finite)
    return "epoch " + std::to_string(epoch) + ": the validation's " + watched +
           " is not finite (NaN or infinite): the generator's outputs on the val split are not finite numbers; "
           "the run stops (checkpoints/ keeps the best model of the epochs before, if any)";
  return "";
}

void Trainer::fail_if_not_finite(std::int64_t epoch, const std::vector<std::int64_t>& skipped, bool val_not_finite,
                                 const metrics::EpochMetrics& m) {
  const bool scaling =
      model_options_.update.precision == optim::Precision::fp16 || model_options_.update.force_loss_scaling;
  bool scaler_skipped = false;
  for (const std::int64_t count : skipped) scaler_skipped = scaler_skipped || (scaling && count > 0);
  const std::string message =
      non_finite_problem(epoch, m.losses, scaler_skipped, val_not_finite, stop_.rule().options().metric);
  if (message.empty()) return;
  if (comm_.rank() == 0) report_->failed_epoch(m, message);
  throw Error(message);
}

}  // namespace pix2pix::train
