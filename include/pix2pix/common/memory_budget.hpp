// How much memory this process may still take, and errors that say what did not fit. Every
// allocation whose size comes from a file or an option is checked against this before it is
// made, and a failed allocation is reported with what was being allocated, never as a bare
// std::bad_alloc.
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>

#include "pix2pix/common/error.hpp"

namespace pix2pix {

// Not enough memory for something this process was about to allocate (require_memory, allocating):
// a caller that can do without it (one image of many) tells it from other errors.
class MemoryShortage : public Error {
 public:
  explicit MemoryShortage(const std::string& what) : Error(what) {}
};

struct MemoryBudget {
  std::int64_t bytes = 0;  // what this process can still allocate (the tightest limit)
  std::string limited_by;  // "MemAvailable", "cgroup memory.max", "ulimit -v", "ulimit -d"
};

// The tightest of: the kernel's MemAvailable, the memory cgroup's limit minus its usage (v2 and
// v1, every level up to the root: Slurm and containers confine jobs there), and the address
// space / data segment limits (ulimit -v, -d) minus what this process already uses.
MemoryBudget available_memory();

// The product of `factors` (non-negative), saturating at INT64_MAX: sizes computed from options
// and file headers must not overflow before they are checked.
std::int64_t saturating_product(std::initializer_list<std::int64_t> factors);

// "1.5 GiB", "640 MiB", "12 KiB", "100 bytes".
std::string format_bytes(std::int64_t bytes);

// Throws MemoryShortage "<what> needs <bytes>, but only <budget> is available (<limited_by>)<advice>"
// when `bytes` exceeds `share` of the budget.
void require_memory(std::int64_t bytes, const std::string& what, double share = 1.0, const std::string& advice = "");

// The message of an allocation that failed although the budget allowed it.
std::string out_of_memory_message(std::int64_t bytes, const std::string& what);

// True for the allocation failures of LibTorch's allocators (CPU and CUDA), whose messages
// differ between versions.
bool is_allocation_failure(const c10::Error& error);

// Runs `make` (an allocation of about `bytes`); std::bad_alloc or a LibTorch allocation failure
// becomes Error(out_of_memory_message(bytes, what)).
template <class Make>
auto allocating(std::int64_t bytes, const std::string& what, Make&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const std::bad_alloc&) {
    throw MemoryShortage(out_of_memory_message(bytes, what));
  } catch (const c10::Error& e) {
    if (!is_allocation_failure(e)) throw;
    throw MemoryShortage(out_of_memory_message(bytes, what));
  }
}

}  // namespace pix2pix
