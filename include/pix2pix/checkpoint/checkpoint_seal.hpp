// A seal at the end of every checkpoint: magic, payload length and a 64-bit checksum of the
// payload. A torch archive alone does not notice a flipped byte inside a tensor (measured on
// 1.13: it loads), and a truncated file is only caught when the zip directory went missing;
// the seal catches both before anything is loaded. Torch readers ignore the trailing 24 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace pix2pix::checkpoint {

inline constexpr std::int64_t kSealBytes = 24;

// Word-at-a-time multiply-rotate hash: several GB/s, so sealing a 1 GB checkpoint costs a
// fraction of writing it. Not cryptographic; it detects accidental damage.
class Checksum {
 public:
  void add(const char* data, size_t n);
  std::uint64_t finish();  // of everything added (call once)

 private:
  void mix_word(const char* p);
  std::uint64_t state_ = 0x243f6a8885a308d3ULL, length_ = 0;
  std::array<char, 8> tail_{};
  size_t pending_ = 0;
};

// nullopt when the seal is present and matches; otherwise why the file cannot be trusted.
std::optional<std::string> check_seal(const std::string& path);
// The checksum the seal of a file that passed check_seal holds: an identity of its contents that
// costs one small read (a resumed run checks it is given the same file). Error naming the file.
std::uint64_t sealed_checksum(const std::string& path);

// Writes a file and its seal in one pass. write() never fails: it keeps the first error (a full
// disk, an unwritable folder) and drops what follows, because its caller, LibTorch's archive
// writer, turns a short write into an exception thrown from a destructor, which terminates the
// process (seen with 1.13 on a full disk). finish() then throws Error naming the file and the
// cause, and the caller's previous checkpoint stays as it was.
class SealedFileWriter {
 public:
  explicit SealedFileWriter(std::string path);
  ~SealedFileWriter();
  SealedFileWriter(const SealedFileWriter&) = delete;
  SealedFileWriter& operator=(const SealedFileWriter&) = delete;
  size_t write(const void* data, size_t n);
  void finish();  // appends the seal and closes (no fsync); Error on any failure

 private:
  void put(const char* data, size_t n);
  std::string path_;
  int fd_ = -1;
  std::string error_;
  std::uint64_t length_ = 0;
  Checksum checksum_;
};

}  // namespace pix2pix::checkpoint
