#include "pix2pix/common/input_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "pix2pix/common/error.hpp"

namespace pix2pix {

const char* describe_not_regular(unsigned mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

std::int64_t require_readable_file(const std::string& path, const std::string& what) {
  const std::string name = what.empty() ? path : what + " " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw Error(name + ": no such file");
    if (errno == EACCES) throw Error(name + ": permission denied (a folder on its path is not searchable)");
    throw Error(name + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw Error(name + ": " + describe_not_regular(st.st_mode));
  if (::access(path.c_str(), R_OK) != 0) {
    if (errno == EACCES) throw Error(name + ": permission denied (the file is not readable by this user)");
    throw Error(name + ": " + std::strerror(errno));
  }
  return static_cast<std::int64_t>(st.st_size);
}

std::string file_fingerprint(const std::string& path) {
  constexpr std::size_t kPart = 64 << 10;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::string("unreadable (") + std::strerror(errno) + ")";
  if (!S_ISREG(st.st_mode)) return "not a regular file";  // never opened: a FIFO would block
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string("unreadable (") + std::strerror(errno) + ")";
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::vector<char> bytes(static_cast<std::size_t>(std::min<std::uint64_t>(size, 2 * kPart)));
  if (size <= 2 * kPart) {
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  } else {
    in.read(bytes.data(), kPart);
    in.seekg(static_cast<std::streamoff>(size - kPart));
    in.read(bytes.data() + kPart, kPart);
  }
  if (!in) return "unreadable (a short read)";
  return std::to_string(size) + " bytes, FNV-1a 64 of the first and last 64 KiB = " +
         text_fingerprint(std::string_view(bytes.data(), bytes.size()));
}

std::string text_fingerprint(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (const char byte : text) hash = (hash ^ static_cast<unsigned char>(byte)) * 0x100000001b3ULL;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

InputFiles::InputFiles(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) add(path);
}

void InputFiles::add(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return;
  files_.emplace(std::make_pair(static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)), path);
}

std::string InputFiles::which(const std::string& output) const {
  struct stat st {};
  if (files_.empty() || ::stat(output.c_str(), &st) != 0) return "";  // not there yet: it cannot be an input
  const auto found = files_.find({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)});
  return found == files_.end() ? "" : found->second;
}

void InputFiles::refuse(const std::string& option, const std::string& output) const {
  const std::string input = which(output);
  if (!input.empty())
    throw UsageError(option + " " + output + " is the input " + input +
                     " (the same file); writing it would destroy that input: choose another output");
}

void refuse_output_among_inputs(const std::string& option, const std::string& output,
                                const std::vector<std::string>& inputs) {
  InputFiles(inputs).refuse(option, output);
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
