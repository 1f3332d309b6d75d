// Rank tag and message formatting shared by the per-library check macros.
#include "pix2pix/common/error.hpp"

#include <atomic>

namespace pix2pix {
namespace {
std::atomic<int> g_rank{-1};
}

int process_rank() {
  return g_rank.load();
}
void set_process_rank(int rank) {
  g_rank.store(rank);
}

std::string rank_prefix() {
  const int rank = process_rank();
  return rank < 0 ? std::string() : "rank " + std::to_string(rank) + ": ";
}

std::string describe_failed_call(const char* library, const char* call, const char* file, int line,
                                 const std::string& detail) {
  std::string msg = std::string(library) + " call `" + call + "` failed at " + file + ":" + std::to_string(line);
  const int rank = process_rank();
  if (rank >= 0) msg += " (rank " + std::to_string(rank) + ")";
  if (!detail.empty()) msg += ": " + detail;
  return msg;
}

}  // namespace pix2pix
