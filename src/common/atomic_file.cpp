#include "pix2pix/common/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"

namespace pix2pix {
namespace {

// Writes all of `bytes` to `fd`: 0, or the errno of the failed write.
int write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// errno's text, with a link named as one (O_NOFOLLOW's ELOOP reads "Too many levels of symbolic links").
std::string reason(int error) {
  return error == ELOOP ? "is a symbolic link (not written through)" : std::strerror(error);
}

}  // namespace

// Note [fresh temporary names]: a file is written under a temporary name that did not exist
// before (O_CREAT | O_EXCL | O_NOFOLLOW, a random part in the name), then renamed over its target.
// A fixed temporary name (".curves.png.tmp") in a folder others can write is a trap: a link planted
// under it is followed and its target overwritten. rename(2) replaces a link at the target itself
// and never writes through it.
std::string fresh_name(const std::string& path_prefix) {
  static thread_local std::mt19937_64 draw{std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 32)};
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), "-%d-%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(draw()));
  return path_prefix + suffix;
}

FileHandle create_fresh_file(const std::string& path_prefix, std::string& created) {
  for (int attempt = 0;; ++attempt) {
    created = fresh_name(path_prefix);
    const int fd = ::open(created.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return FileHandle(fd);
    if (errno != EEXIST || attempt == 16) return FileHandle(-1);
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes, bool durable) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::string tmp;
  FileHandle file =
      create_fresh_file((target.parent_path() / ("." + target.filename().string() + ".tmp")).string(), tmp);
  if (file.get() < 0) throw Error("cannot write " + path + ": " + std::strerror(errno));
  int error = write_all(file.get(), bytes);
  if (error == 0 && durable && ::fsync(file.get()) != 0) error = errno;
  if (::close(file.release()) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path + ": " + std::strerror(error));
  }
  if (durable) {
    // The rename must reach the disk before the caller counts the file as written.
    const fs::path folder = target.parent_path();
    const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir);
      ::close(dir);
    }
  }
}

void append_to_file(const std::string& path, const std::string& text, const std::string& header, Links links) {
  // Never through a link, never to a FIFO or a device (O_NONBLOCK: a FIFO without a reader is
  // refused at once instead of blocking the open). See Note [a run directory is untrusted input].
  const int fd = ::open(
      path.c_str(),
      O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (links == Links::refuse ? O_NOFOLLOW : 0),
      0644);
  if (fd < 0) {
    const int error = errno;
    struct stat st {};
    if (error == ENXIO && ::lstat(path.c_str(), &st) == 0)  // a FIFO nobody reads
      throw Error("cannot append to " + path + ": " + describe_not_regular(st.st_mode));
    throw Error("cannot append to " + path + ": " + reason(error));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int error = errno;
    const bool regular = S_ISREG(st.st_mode);
    ::close(fd);
    throw Error("cannot append to " + path + ": " +
                (regular ? std::strerror(error) : describe_not_regular(st.st_mode)));
  }
  const std::string bytes = (st.st_size == 0 ? header : std::string()) + text;
  int error = write_all(fd, bytes);
  if (error != 0) (void)!::ftruncate(fd, st.st_size);  // best effort: the error is reported either way
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    if (st.st_size == 0) ::unlink(path.c_str());  // it held nothing: leave no empty file behind
    throw Error("cannot append to " + path + ": " + std::strerror(error));
  }
}

}  // namespace pix2pix
