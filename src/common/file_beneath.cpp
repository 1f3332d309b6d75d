// Note [a run directory is untrusted input]: on a cluster, run directories sit in shared project
// folders that other people can write, so `report`, `train --resume` and inference given a run
// directory read its files as input from someone else. They are reached by openat from the folder
// the user named, one part at a time with O_NOFOLLOW, so a symbolic link planted in a run directory
// (samples/epoch_0003.png -> /etc/shadow) is refused, not followed, and no check can be raced by
// swapping a file for a link between a check and an open. Each must be a regular file (a FIFO
// would block a reader forever, /dev/zero would be read until memory runs out) of a bounded size.
// What is written there is never written through an existing name (common/atomic_file.cpp):
// See Note [fresh temporary names]. docs/input-checks.md, "Run directories from others", lists
// what a run directory from someone else can and cannot do.
#include "pix2pix/common/file_beneath.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"

namespace pix2pix {
namespace {

std::string too_large(std::int64_t size, std::int64_t limit) {
  return "is " + std::to_string(size) + " bytes, more than the " + std::to_string(limit) +
         " such a file may hold (not read)";
}

// Why `name` in the folder `dir_fd` could not be opened (errno `error`): a link is named as one.
std::string why_not_opened(int dir_fd, const std::string& name, int error) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
    return "is a symbolic link (not followed: the files of a run directory are read only inside it)";
  if (error == ENOENT) return "no such file";
  if (error == EACCES) return "permission denied";
  return std::strerror(error);
}

// The whole of `fd`, at most `limit` bytes (a file that grows past it while read is refused too).
std::string read_all(int fd, std::int64_t limit, const std::string& shown) {
  std::string text;
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(shown + ": cannot read: " + std::strerror(errno));
    if (n == 0) return text;
    text.append(buffer.data(), static_cast<std::size_t>(n));
    if (static_cast<std::int64_t>(text.size()) > limit) throw Error(shown + ": " + too_large(limit + 1, limit));
  }
}

}  // namespace

FileHandle& FileHandle::operator=(FileHandle&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<FileHandle> open_beneath(const std::string& dir, const std::string& relative, std::int64_t limit,
                                       bool must_exist) {
  const std::string shown = (dir.empty() || dir.back() == '/' ? dir : dir + "/") + relative;
  std::vector<std::string> parts;
  std::string part;
  for (std::size_t i = 0; i <= relative.size(); ++i) {
    if (i < relative.size() && relative[i] != '/') {
      part += relative[i];
      continue;
    }
    if (part == "..") throw Error(shown + ": a path out of its folder (\"..\") is not read");
    if (!part.empty() && part != ".") parts.push_back(part);
    part.clear();
  }
  if (parts.empty() || relative.front() == '/') throw Error(shown + ": not a file inside " + dir);

  FileHandle folder(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (folder.get() < 0) {
    if (errno == ENOENT && !must_exist) return std::nullopt;
    throw Error(dir + ": cannot open the folder: " + std::strerror(errno));
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    FileHandle next(::openat(folder.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      const int error = errno;
      if (error == ENOENT && !must_exist) return std::nullopt;
      throw Error(shown + ": " + parts[i] + " " + why_not_opened(folder.get(), parts[i], error));
    }
    folder = std::move(next);
  }
  const std::string& name = parts.back();
  // Looked at before it is opened: opening a device can do something (rewind a tape).
  struct stat st {};
  if (::fstatat(folder.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    const int error = errno;
    if (error == ENOENT && !must_exist) return std::nullopt;
    throw Error(shown + ": " + why_not_opened(folder.get(), name, error));
  }
  if (S_ISLNK(st.st_mode)) throw Error(shown + ": " + why_not_opened(folder.get(), name, ELOOP));
  if (!S_ISREG(st.st_mode)) throw Error(shown + ": " + describe_not_regular(st.st_mode));
  FileHandle file(::openat(folder.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (file.get() < 0) throw Error(shown + ": " + why_not_opened(folder.get(), name, errno));
  // What was opened is what counts (it may have been replaced since the look).
  if (::fstat(file.get(), &st) != 0) throw Error(shown + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(shown + ": " + describe_not_regular(st.st_mode));
  if (st.st_size > limit) throw Error(shown + ": " + too_large(st.st_size, limit));
  return file;
}

std::optional<std::string> read_beneath(const std::string& dir, const std::string& relative, std::int64_t limit,
                                        bool must_exist) {
  auto file = open_beneath(dir, relative, limit, must_exist);
  if (!file) return std::nullopt;
  return read_all(file->get(), limit, (dir.empty() || dir.back() == '/' ? dir : dir + "/") + relative);
}

std::string read_regular_file(const std::string& path, std::int64_t limit, const std::string& what) {
  const std::string shown = what.empty() ? path : what + " " + path;
  require_readable_file(path, what);  // a FIFO, a device or a folder is refused by name, unopened
  FileHandle file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (file.get() < 0) throw Error(shown + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) throw Error(shown + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(shown + ": " + describe_not_regular(st.st_mode));
  if (st.st_size > limit) throw Error(shown + ": " + too_large(st.st_size, limit));
  return read_all(file.get(), limit, shown);
}

}  // namespace pix2pix
