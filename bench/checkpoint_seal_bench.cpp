// What sealing costs: writes a payload of N MiB (default 1024) once plainly (std::ofstream) and
// once through SealedFileWriter (checksum + seal), neither with fsync, then times check_seal.
//   build/bin/checkpoint_seal_bench DIR [MiB]      (docs/performance.md, "Checkpoints")
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pix2pix/checkpoint/checkpoint_seal.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [MiB]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const size_t mib = argc > 2 ? std::stoul(argv[2]) : 1024, chunk = size_t{1} << 20;
  std::vector<char> data(chunk);
  for (size_t i = 0; i < chunk; ++i) data[i] = static_cast<char>(i * 131);
  const auto plain = (dir / "seal-bench-plain.bin").string(), sealed = (dir / "seal-bench-sealed.bin").string();
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const auto t0 = Clock::now();
  {
    std::ofstream out(plain, std::ios::binary);
    for (size_t i = 0; i < mib; ++i) out.write(data.data(), static_cast<std::streamsize>(chunk));
  }
  const auto t1 = Clock::now();
  {
    pix2pix::checkpoint::SealedFileWriter file(sealed);
    for (size_t i = 0; i < mib; ++i) file.write(data.data(), chunk);
    file.finish();
  }
  const auto t2 = Clock::now();
  const auto damage = pix2pix::checkpoint::check_seal(sealed);
  const auto t3 = Clock::now();
  std::printf("%zu MiB: plain write %.2f s, sealed write %.2f s, check_seal %.2f s (%.0f MiB/s) %s\n", mib,
              seconds(t0, t1), seconds(t1, t2), seconds(t2, t3), static_cast<double>(mib) / seconds(t2, t3),
              damage ? damage->c_str() : "ok");
  std::filesystem::remove(plain);
  std::filesystem::remove(sealed);
  return damage ? 1 : 0;
}
