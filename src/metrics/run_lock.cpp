// See Note [one job per run directory] (run_lock.hpp).
#include "pix2pix/metrics/run_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "pix2pix/common/error.hpp"

namespace fs = std::filesystem;

namespace pix2pix::metrics {
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

std::string now_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

// This process's command line, arguments joined by spaces, at most 300 characters.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0' || c == '\n') c = ' ';
  if (text.size() > 300) text = text.substr(0, 297) + "...";
  return text.empty() ? "?" : text;
}

// Locks the whole file for writing without waiting: 0, or errno.
int try_lock(int fd) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &lock) == 0) return 0;
  // A kernel older than 3.15 has no OFD locks: a classic POSIX lock (see the Note for its catch).
  if (errno == EINVAL) {
    lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    if (::fcntl(fd, F_SETLK, &lock) == 0) return 0;
  }
  return errno;
}

// The whole of `text` at offset 0 of `fd`, and nothing after it; errno or 0.
int replace_contents(int fd, const std::string& text) {
  if (::ftruncate(fd, 0) != 0) return errno;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) != 0 && errno != EINVAL ? errno : 0;
}

}  // namespace

std::string run_lock_holder(const std::string& dir) {
  std::ifstream in(fs::path(dir) / RunLock::kFileName);
  std::map<std::string, std::string> fields;
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (!fields.count("pid")) return "";
  return "host " + fields["host"] + ", PID " + fields["pid"] + ", started " + fields["started"] + ", command " +
         fields["command"];
}

RunLock::RunLock(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("--run-dir " + dir + ": cannot create: " + ec.message());
  const std::string path = (fs::path(dir) / kFileName).string();
  // Whether this job made the file: one it made and could not fill is removed again.
  bool created = true;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  }
  if (fd < 0) throw Error("--run-dir " + dir + ": cannot open its lock file " + path + ": " + std::strerror(errno));
  const int err = try_lock(fd);
  if (err == EAGAIN || err == EACCES) {
    ::close(fd);
    const std::string holder = run_lock_holder(dir);
    throw Error("--run-dir " + dir + " is in use by another job (" +
                (holder.empty() ? "it has not recorded who it is yet" : holder) +
                "): two jobs in one run directory would mix their checkpoints and metrics; wait for that job to "
                "end or stop it, or choose another --run-dir");
  }
  if (err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS) {
    ::close(fd);
    std::fprintf(stderr,
                 "warning: --run-dir %s: its filesystem does not lock files (%s): nothing stops a second job from "
                 "using this run directory at the same time\n",
                 dir.c_str(), std::strerror(err));
    return;
  }
  if (err != 0) {
    ::close(fd);
    throw Error("--run-dir " + dir + ": cannot lock " + path + ": " + std::strerror(err));
  }
  std::ostringstream who;
  who << "host=" << host_name() << "\npid=" << ::getpid() << "\nstarted=" << now_utc() << "\ncommand=" << command_line()
      << "\n";
  if (const int write_error = replace_contents(fd, who.str()); write_error != 0) {
    if (created) ::unlink(path.c_str());
    ::close(fd);
    throw Error("--run-dir " + dir + ": cannot write " + path + ": " + std::strerror(write_error));
  }
  fd_ = fd;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace pix2pix::metrics
