#include "pix2pix/metrics/run_claim.hpp"

#include <algorithm>
#include <filesystem>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/metrics/run_directory.hpp"

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

}  // namespace

RunDirectoryClaim claim_for_new_run(const std::string& dir, bool overwrite, const std::vector<std::string>& inputs) {
  RunDirectoryClaim claim;
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status)) return claim;
  if (!fs::is_directory(status)) throw Error("--run-dir " + dir + ": exists and is not a directory");
  std::vector<std::string> present;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    present.push_back(it->path().filename().string());
  if (ec) throw Error("--run-dir " + dir + ": cannot list: " + ec.message());
  if (present.empty()) return claim;
  std::sort(present.begin(), present.end());
  if (!overwrite)
    throw Error("--run-dir " + dir + " is not empty (" + listing(present) +
                "): continue the run there with --resume auto, start afresh there with --overwrite (deletes its "
                "checkpoints, metrics and samples), or choose another --run-dir");
  for (const char* entry : RunDirectory::kEntries) {
    const fs::path path = fs::path(dir) / entry;
    if (!fs::exists(fs::symlink_status(path, ec))) continue;
    for (const std::string& file : files_under(path))
      for (const std::string& input : inputs)
        if (same_file(file, input))
          throw UsageError("--overwrite would delete " + file + ", which is the input " + input +
                           "; move it out of --run-dir " + dir + " first");
    claim.removed.push_back(entry);
  }
  for (const std::string& entry : claim.removed) {
    fs::remove_all(fs::path(dir) / entry, ec);
    if (ec) throw Error("--overwrite: cannot delete " + (fs::path(dir) / entry).string() + ": " + ec.message());
  }
  return claim;
}

}  // namespace pix2pix::metrics
