#include "pix2pix/common/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pix2pix/common/error.hpp"

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

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes, bool durable) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + path + ": " + std::strerror(errno));
  int error = write_all(fd, bytes);
  if (error == 0 && durable && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
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

void append_to_file(const std::string& path, const std::string& text, const std::string& header) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot append to " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw Error("cannot append to " + path + ": " + std::strerror(error));
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
