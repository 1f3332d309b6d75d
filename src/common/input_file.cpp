#include "pix2pix/common/input_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pix2pix/common/error.hpp"

namespace pix2pix {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

}  // namespace

std::int64_t require_readable_file(const std::string& path, const std::string& what) {
  const std::string name = what.empty() ? path : what + " " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw Error(name + ": no such file");
    if (errno == EACCES) throw Error(name + ": permission denied (a folder on its path is not searchable)");
    throw Error(name + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw Error(name + ": " + kind_of(st.st_mode));
  if (::access(path.c_str(), R_OK) != 0) {
    if (errno == EACCES) throw Error(name + ": permission denied (the file is not readable by this user)");
    throw Error(name + ": " + std::strerror(errno));
  }
  return static_cast<std::int64_t>(st.st_size);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void refuse_output_among_inputs(const std::string& option, const std::string& output,
                                const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // not there yet: it cannot be an input
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw UsageError(option + " " + output + " is the input " + input +
                       " (the same file); writing it would destroy that input: choose another output");
  }
}

void require_new_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                         const std::vector<std::string>& inputs, bool overwrite) {
  namespace fs = std::filesystem;
  for (const auto& [option, path] : outputs) {
    refuse_output_among_inputs(option, path, inputs);
    std::error_code ec;
    const fs::path folder = fs::path(path).parent_path();
    if (!folder.empty() && !fs::is_directory(folder, ec))
      throw Error(option + " " + path + ": the folder " + folder.string() + " does not exist");
    if (fs::is_directory(path, ec)) throw Error(option + " " + path + " is a folder; name the file to write");
    if (fs::exists(path, ec) && !overwrite)
      throw Error(option + " " + path + " exists; pass --overwrite to replace it");
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (fs::path(outputs[i].second).lexically_normal() == fs::path(outputs[j].second).lexically_normal())
        throw Error(outputs[i].first + " and " + outputs[j].first + " both name " + outputs[i].second);
}

}  // namespace pix2pix
