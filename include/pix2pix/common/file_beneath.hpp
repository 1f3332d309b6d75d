// Reading the files of a folder someone else may have written (a run directory in a shared project
// folder, a feature cache): never through a symbolic link, only regular files, never more than a
// stated number of bytes. See Note [a run directory is untrusted input].
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pix2pix {

// Bounds on what a file of a run directory may hold. A run's metrics grow a row an epoch (a
// hundred thousand epochs of fifty columns are ~80 MB); the rest are written whole by one run.
inline constexpr std::int64_t kTextFileLimit = 16 << 20;      // summary.json, config.cfg, evaluation.json, a key
inline constexpr std::int64_t kMetricsFileLimit = 256 << 20;  // metrics.csv, metrics.jsonl
inline constexpr std::int64_t kImageFileLimit = 256 << 20;    // a sample sheet

// An open file descriptor, closed with its owner.
class FileHandle {
 public:
  FileHandle() = default;
  explicit FileHandle(int fd) : fd_(fd) {}
  FileHandle(FileHandle&& other) noexcept : fd_(other.release()) {}
  FileHandle& operator=(FileHandle&& other) noexcept;
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  ~FileHandle();
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// DIR/RELATIVE opened for reading. DIR itself is opened as named (a link the user named is theirs
// to follow); each part of RELATIVE ("metrics.csv", "samples/epoch_0003.png") is opened with
// O_NOFOLLOW from the folder before it, so no symbolic link anywhere below DIR is followed and no
// check can be raced; ".." and absolute parts are refused. The file must be a regular file (opened
// with O_NONBLOCK, so a FIFO cannot block the open) of at most `limit` bytes. nullopt when it does
// not exist and `must_exist` is false; otherwise Error "DIR/RELATIVE: <why>" ("is a symbolic link
// (not followed: ...)", "is a FIFO (named pipe), not a regular file", "is N bytes, more than the M
// such a file may hold", "no such file").
std::optional<FileHandle> open_beneath(const std::string& dir, const std::string& relative, std::int64_t limit,
                                       bool must_exist = true);

// The whole of DIR/RELATIVE, opened as open_beneath does; nullopt when missing and not `must_exist`.
std::optional<std::string> read_beneath(const std::string& dir, const std::string& relative, std::int64_t limit,
                                        bool must_exist = true);

// The same for a file a command is given by path (a --config file, a cached array): PATH itself
// may be a link the user named, but it must be a regular file (no FIFO, no device) of at most
// `limit` bytes, opened without blocking and read whole. Error "<what> PATH: <why>".
std::string read_regular_file(const std::string& path, std::int64_t limit, const std::string& what = "");

}  // namespace pix2pix
