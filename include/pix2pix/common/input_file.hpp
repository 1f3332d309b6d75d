// Checks on the files a command is given, made before any library opens them: a path must name
// a readable regular file (a FIFO would block a reader forever, a device would be read until
// memory runs out), and an output must never be one of the inputs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pix2pix {

// The size of `path` when it is a regular file this process may read; otherwise Error
// "<what> <path>: no such file | is a directory | is a FIFO, not a regular file | permission denied".
// `what` names the option ("--config") or is empty.
std::int64_t require_readable_file(const std::string& path, const std::string& what = "");

// True when both paths exist and name the same file (same device and inode: hard links,
// symbolic links and different spellings of one path included).
bool same_file(const std::string& a, const std::string& b);

// Error "<option> <output> is the input <input> ..." when `output` is one of `inputs`.
void refuse_output_among_inputs(const std::string& option, const std::string& output,
                                const std::vector<std::string>& inputs);

// Before any work, for the files a command will create: each (option, path) of `outputs` must lie
// in an existing folder, not be a folder, not exist unless `overwrite`, not be one of `inputs`
// (refuse_output_among_inputs), and no two may name the same path. Error naming the option.
void require_new_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                         const std::vector<std::string>& inputs, bool overwrite);

}  // namespace pix2pix
