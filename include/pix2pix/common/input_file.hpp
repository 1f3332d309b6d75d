// Checks on the files a command is given, made before any library opens them: a path must name
// a readable regular file (a FIFO would block a reader forever, a device would be read until
// memory runs out), and an output must never be one of the inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pix2pix {

// The size of `path` when it is a regular file this process may read; otherwise Error
// "<what> <path>: no such file | is a directory | is a FIFO, not a regular file | permission denied".
// `what` names the option ("--config") or is empty.
std::int64_t require_readable_file(const std::string& path, const std::string& what = "");

// What a file of this st_mode is when it is not a regular file: "is a directory", "is a FIFO
// (named pipe), not a regular file", "is a character device, not a regular file", ...
const char* describe_not_regular(unsigned mode);

// What tells files apart cheaply: "N bytes, FNV-1a 64 of the first and last 64 KiB = HEX", or
// "unreadable (<reason>)". Copies of one file agree; different files practically never do (they
// differ in size, header or tail). For checking that ranks read the same file
// (See Note [ranks that agree], cli/rank_agreement.hpp), not for security.
std::string file_fingerprint(const std::string& path);
// The same hash of `text`, as 16 hex digits.
std::string text_fingerprint(std::string_view text);

// True when both paths exist and name the same file (same device and inode: hard links,
// symbolic links and different spellings of one path included).
bool same_file(const std::string& a, const std::string& b);

// The files a command reads, by identity (device and inode), so that each of its outputs is
// checked against all of them with one stat, whatever path spells it (symbolic and hard links,
// "..", another mount of the same folder).
class InputFiles {
 public:
  InputFiles() = default;
  explicit InputFiles(const std::vector<std::string>& paths);
  void add(const std::string& path);  // a path that does not exist (yet) is no input: ignored
  // The input `output` is (as it was added), or "" when it is none of them or does not exist.
  std::string which(const std::string& output) const;
  // UsageError "<option> <output> is the input <input> (the same file); writing it would destroy
  // that input: choose another output" when `output` is one of them. `--overwrite` changes nothing.
  void refuse(const std::string& option, const std::string& output) const;

 private:
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> files_;  // (device, inode) → the path added
};

// Error "<option> <output> is the input <input> ..." when `output` is one of `inputs`.
void refuse_output_among_inputs(const std::string& option, const std::string& output,
                                const std::vector<std::string>& inputs);

// Before any work, for the files a command will create: each (option, path) of `outputs` must lie
// in an existing folder, not be a folder, not exist unless `overwrite`, not be one of `inputs`
// (refuse_output_among_inputs), and no two may name the same path. Error naming the option.
void require_new_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                         const std::vector<std::string>& inputs, bool overwrite);

}  // namespace pix2pix
