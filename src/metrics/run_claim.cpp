#include "pix2pix/metrics/run_claim.hpp"

#include <algorithm>
#include <filesystem>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/metrics/run_lock.hpp"

namespace fs = std::filesystem;

namespace pix2pix::metrics {
namespace {

std::string listing(const std::vector<std::string>& names) {
  constexpr size_t kShown = 6;
  std::string text;
  for (size_t i = 0; i < std::min(names.size(), kShown); ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

// Every regular file at or under `path` (the entry itself when it is a file).
std::vector<std::string> files_under(const fs::path& path) {
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path().string());
  } else {
    files.push_back(path.string());
  }
  return files;
}

// The entries of a run present in `dir`, and the first file under them that is one of `inputs`
// with the input it is (both "" when none is).
struct RunEntries {
  std::vector<std::string> present;
  std::string input_file, input;
};
RunEntries run_entries(const std::string& dir, const std::vector<std::string>& inputs) {
  RunEntries found;
  const InputFiles read(inputs);
  std::error_code ec;
  for (const char* entry : RunDirectory::kEntries) {
    const fs::path path = fs::path(dir) / entry;
    if (!fs::exists(fs::symlink_status(path, ec))) continue;
    found.present.push_back(entry);
    for (const std::string& file : files_under(path)) {
      if (!found.input.empty()) break;
      found.input = read.which(file);
      if (!found.input.empty()) found.input_file = file;
    }
  }
  return found;
}

}  // namespace

void refuse_inputs_in_run_dir(const std::string& dir, const std::vector<std::string>& inputs) {
  const RunEntries entries = run_entries(dir, inputs);
  if (!entries.input.empty())
    throw UsageError("--run-dir " + dir + " holds the input " + entries.input + " as " + entries.input_file +
                     ", which the run writes; move it out of the run directory first");
}

RunDirectoryClaim claim_for_new_run(const std::string& dir, bool overwrite, const std::vector<std::string>& inputs) {
  RunDirectoryClaim claim;
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status)) return claim;
  if (!fs::is_directory(status)) throw Error("--run-dir " + dir + ": exists and is not a directory");
  std::vector<std::string> present;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename() != RunLock::kFileName) present.push_back(it->path().filename().string());
  if (ec) throw Error("--run-dir " + dir + ": cannot list: " + ec.message());
  if (present.empty()) return claim;
  std::sort(present.begin(), present.end());
  if (!overwrite)
    throw Error("--run-dir " + dir + " is not empty (" + listing(present) +
                "): continue the run there with --resume auto, start afresh there with --overwrite (deletes its "
                "checkpoints, metrics and samples), or choose another --run-dir");
  const RunEntries entries = run_entries(dir, inputs);
  if (!entries.input.empty())
    throw UsageError("--overwrite would delete " + entries.input_file + ", which is the input " + entries.input +
                     "; move it out of --run-dir " + dir + " first");
  // Only what a run writes is deleted: an entry of another kind (a file named tensorboard where a
  // run makes a folder) is somebody's own, and is refused, not deleted. A link is deleted, never followed.
  for (const std::string& entry : entries.present) {
    const fs::file_status kind = fs::symlink_status(fs::path(dir) / entry, ec);
    const bool folder = entry == "checkpoints" || entry == "samples" || entry == "logs" || entry == "tensorboard";
    if (!fs::is_symlink(kind) && fs::is_directory(kind) != folder)
      throw Error("--overwrite: " + (fs::path(dir) / entry).string() + " is " +
                  (folder ? "not a folder, where a run writes one" : "a folder, where a run writes a file") +
                  ": not written by a run, so not deleted; move it out of --run-dir " + dir + " first");
  }
  claim.removed = entries.present;
  for (const std::string& entry : claim.removed) {
    fs::remove_all(fs::path(dir) / entry, ec);
    if (ec) throw Error("--overwrite: cannot delete " + (fs::path(dir) / entry).string() + ": " + ec.message());
  }
  return claim;
}

}  // namespace pix2pix::metrics
