#include "pix2pix/common/heap.hpp"

#include <malloc.h>

#include <string_view>

namespace pix2pix {

bool retain_freed_memory(const char* const* environment) {
  for (const char* const* entry = environment; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    if (variable.rfind("MALLOC_", 0) == 0) return false;
    if (variable.rfind("GLIBC_TUNABLES=", 0) == 0 && variable.find("glibc.malloc.") != std::string_view::npos)
      return false;
  }
  // See Note [freed memory stays in the heap]
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, -1) == 1;
  return no_mmap && no_trim;
}

}  // namespace pix2pix
