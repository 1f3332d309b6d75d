// Taking a run directory for a new run (no --resume): what a previous run left there is never
// replaced silently. Only rank 0 calls this, before anything is written.
#pragma once

#include <string>
#include <vector>

namespace pix2pix::metrics {

// What `claim_for_new_run` deleted (relative names), for the user's record.
struct RunDirectoryClaim {
  std::vector<std::string> removed;
};

// `dir` must be absent or empty. Otherwise, without `overwrite`, Error naming the directory and
// what it holds, and the ways on (--resume auto, --overwrite, another --run-dir). With
// `overwrite`, the entries a run writes (RunDirectory::kEntries) are deleted and listed; other
// files are left alone. An entry that is one of `inputs` (the dataset, a config file) is never
// deleted: that is an error.
RunDirectoryClaim claim_for_new_run(const std::string& dir, bool overwrite, const std::vector<std::string>& inputs);

// A resumed run writes the entries of `dir` again: UsageError naming the input and the entry when
// one of `inputs` (the dataset, a config file, a classifier) is among them.
void refuse_inputs_in_run_dir(const std::string& dir, const std::vector<std::string>& inputs);

}  // namespace pix2pix::metrics
