// What a resumed run changed of the options its checkpoint was trained with.
// See Note [options a resume may change].
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pix2pix::train {

// Note [options a resume may change]
// A checkpoint records the run's resolved options (config.cfg's text) and its data file's
// fingerprint (common/input_file.hpp), so that a resume that changes them is never silent. Some
// options only say how the job runs (devices, communication, progress, how many epochs are
// allowed, validation's batch size, checkpoints kept): a change is listed and taken. Every other
// option says what is learned (the objective, the optimiser, the schedule, the data and its
// augmentation, early stopping): continuing under another value is a different experiment that
// would pass for the old one, so it is refused unless --accept-changed-options. The batch size
// (and --global-batch) may change: an elastic resume to another world size changes the batch
// per rank by design, and the run says how it continues. An option added since a checkpoint was
// written is absent from its options; it compares as the value runs had before it existed
// (--ema-decay 0), so old checkpoints resume without an override unless the new option is used.
// Which option is which is said where the option is declared
// (See Note [an option is declared once]) and reaches here as OptionRoles; an option they do not
// name says what is learned.
struct OptionRole {
  enum Kind {
    learned,           // a change is refused without --accept-changed-options
    how_the_job_runs,  // a change is listed and taken
    this_invocation,   // never compared (--run-dir, --resume, ...)
  };
  Kind kind = learned;
  std::optional<std::string> before_it_existed;  // the value in effect for runs before the option existed
};
using OptionRoles = std::map<std::string, OptionRole>;  // by name as in config.cfg ("lr")

struct OptionChange {
  std::string option;  // "--lr"
  std::string before, now;
  bool changes_learning = false;  // not among the options that only say how the job runs
};

// The options that differ between the recorded `trained` and `now` texts ("name = value" lines, as
// config.cfg), in the order of `now`; options only one side names count as changed (to or from
// "(not set)"). Either text empty: nothing to compare (a checkpoint from before options were kept).
std::vector<OptionChange> option_changes(const std::string& trained, const std::string& now, const OptionRoles& roles);

// "--lr 0.0002 -> 0.001, --gan-mode vanilla -> lsgan" (at most `shown`, then "and N more").
std::string describe_changes(const std::vector<OptionChange>& changes, std::size_t shown = 6);

}  // namespace pix2pix::train
