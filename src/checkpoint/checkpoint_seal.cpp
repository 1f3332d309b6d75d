// Layout of the seal (24 bytes, little-endian): "P2PSEAL1", payload length, checksum.
#include "pix2pix/checkpoint/checkpoint_seal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "pix2pix/common/error.hpp"

namespace pix2pix::checkpoint {
namespace {

constexpr char kSealMagic[8] = {'P', '2', 'P', 'S', 'E', 'A', 'L', '1'};

std::uint64_t rotl(std::uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

std::uint64_t checksum_of(std::ifstream& in, std::uint64_t length) {
  Checksum sum;
  std::vector<char> buffer(1 << 20);
  while (length > 0) {
    const auto n = static_cast<std::streamsize>(std::min<std::uint64_t>(length, buffer.size()));
    if (!in.read(buffer.data(), n)) throw Error("read failed");
    sum.add(buffer.data(), static_cast<size_t>(n));
    length -= static_cast<std::uint64_t>(n);
  }
  return sum.finish();
}

void put_u64(char* out, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) out[b] = static_cast<char>((v >> (8 * b)) & 0xff);
}
std::uint64_t get_u64(const char* in) {
  std::uint64_t v = 0;
  for (int b = 7; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(in[b]);
  return v;
}

std::string seal_bytes(std::uint64_t length, std::uint64_t sum) {
  char seal[kSealBytes];
  std::memcpy(seal, kSealMagic, 8);
  put_u64(seal + 8, length);
  put_u64(seal + 16, sum);
  return std::string(seal, kSealBytes);
}

}  // namespace

void Checksum::add(const char* data, size_t n) {
  length_ += n;
  size_t i = 0;
  if (pending_ > 0) {
    while (pending_ < 8 && i < n) tail_[pending_++] = data[i++];
    if (pending_ < 8) return;
    mix_word(tail_.data());
    pending_ = 0;
  }
  for (; i + 8 <= n; i += 8) mix_word(data + i);
  // Here pending_ is 0 and fewer than 8 bytes are left (a copy GCC 13 can see stays inside tail_).
  std::memcpy(tail_.data(), data + i, n - i);
  pending_ = n - i;
}

std::uint64_t Checksum::finish() {
  std::array<char, 8> last{};
  std::memcpy(last.data(), tail_.data(), pending_);
  mix_word(last.data());
  std::uint64_t h = state_ ^ length_;
  h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdULL;
  h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

void Checksum::mix_word(const char* p) {
  std::uint64_t w = 0;
  for (int b = 7; b >= 0; --b) w = (w << 8) | static_cast<unsigned char>(p[b]);
  state_ = rotl(state_ ^ (w * 0x9e3779b97f4a7c15ULL), 31) * 0x94d049bb133111ebULL;
}

SealedFileWriter::SealedFileWriter(std::string path) : path_(std::move(path)) {
  // Never through a link (See Note [fresh temporary names]): callers write a fresh temporary name.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + path_ + ": " + std::strerror(errno));
}

SealedFileWriter::~SealedFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void SealedFileWriter::put(const char* data, size_t n) {
  while (n > 0 && error_.empty()) {
    const ssize_t done = ::write(fd_, data, n);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) {
      error_ = done < 0 ? std::strerror(errno) : "short write";
      return;
    }
    data += done;
    n -= static_cast<size_t>(done);
  }
}

size_t SealedFileWriter::write(const void* data, size_t n) {
  if (error_.empty()) {
    checksum_.add(static_cast<const char*>(data), n);
    length_ += n;
    put(static_cast<const char*>(data), n);
  }
  return n;  // always "all of it": see the class comment
}

void SealedFileWriter::finish() {
  if (error_.empty()) put(seal_bytes(length_, checksum_.finish()).data(), kSealBytes);
  const int rc = ::close(fd_);  // flushing to disk is write_atomically's (one fsync per file)
  fd_ = -1;
  if (error_.empty() && rc != 0) error_ = std::strerror(errno);
  if (!error_.empty()) throw Error("writing " + path_ + " failed: " + error_);
}

std::optional<std::string> check_seal(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return "cannot read its size: " + ec.message();
  if (size < static_cast<std::uintmax_t>(kSealBytes))
    return "too short to hold a seal (" + std::to_string(size) + " bytes)";
  std::ifstream in(path, std::ios::binary);
  char seal[kSealBytes];
  in.seekg(static_cast<std::streamoff>(size) - kSealBytes);
  if (!in || !in.read(seal, kSealBytes)) return std::string("cannot read its seal");
  if (std::memcmp(seal, kSealMagic, 8) != 0)
    return std::string("no seal at its end: truncated, or not written by pix2pix-mpi");
  const std::uint64_t length = get_u64(seal + 8);
  if (length != size - static_cast<std::uintmax_t>(kSealBytes))
    return "its seal says " + std::to_string(length) + " bytes of payload, the file has " +
           std::to_string(size - static_cast<std::uintmax_t>(kSealBytes));
  in.seekg(0);
  try {
    if (checksum_of(in, length) != get_u64(seal + 16))
      return std::string("checksum mismatch: the contents are damaged");
  } catch (const Error&) {
    return std::string("read failed while checking its checksum");
  }
  return std::nullopt;
}

std::uint64_t sealed_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  char seal[kSealBytes];
  const auto size = static_cast<std::streamoff>(in.tellg());
  if (!in || size < kSealBytes || !in.seekg(size - kSealBytes) || !in.read(seal, kSealBytes) ||
      std::memcmp(seal, kSealMagic, 8) != 0)
    throw Error(path + ": cannot read its seal");
  return get_u64(seal + 16);
}

}  // namespace pix2pix::checkpoint
