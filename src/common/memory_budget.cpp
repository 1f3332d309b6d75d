// Limits are read from /proc and /sys each time: they change while a job runs (other processes,
// page cache), and the calls are rare (set-up, before large allocations).
#include "pix2pix/common/memory_budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace pix2pix {
namespace {

constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

// "Name:   1234 kB" lines of /proc/meminfo and /proc/self/status, in bytes; -1 when absent.
std::int64_t kib_field(const char* file, const std::string& name) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size(), name) != 0 || line.size() <= name.size() || line[name.size()] != ':') continue;
    std::istringstream fields(line.substr(name.size() + 1));
    std::int64_t kib = -1;
    fields >> kib;
    return kib < 0 ? -1 : kib * 1024;
  }
  return -1;
}

// A number in a one-line cgroup file ("max" and absent files count as unlimited).
std::int64_t cgroup_value(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return kUnlimited;
  try {
    const long long value = std::stoll(text);
    // cgroup v1 writes "no limit" as a page-rounded LLONG_MAX.
    return value <= 0 || value >= (kUnlimited >> 1) ? kUnlimited : value;
  } catch (const std::exception&) {
    return kUnlimited;
  }
}

// Limit minus usage of this process's memory cgroup and of each of its ancestors.
std::int64_t cgroup_headroom() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::int64_t headroom = kUnlimited;
  while (std::getline(in, line)) {
    // v2: "0::/path"; v1: "7:memory:/path" (the controller list may hold several names).
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string group = line.substr(second + 1);
    std::string root, limit_file, usage_file;
    if (controllers.empty()) {
      root = "/sys/fs/cgroup";
      limit_file = "memory.max";
      usage_file = "memory.current";
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      root = "/sys/fs/cgroup/memory";
      limit_file = "memory.limit_in_bytes";
      usage_file = "memory.usage_in_bytes";
    } else {
      continue;
    }
    for (;;) {
      const std::string dir = root + (group == "/" ? "" : group);
      const std::int64_t limit = cgroup_value(dir + "/" + limit_file);
      if (limit != kUnlimited) {
        const std::int64_t usage = cgroup_value(dir + "/" + usage_file);
        headroom = std::min(headroom, usage == kUnlimited ? limit : std::max<std::int64_t>(0, limit - usage));
      }
      if (group.empty() || group == "/") break;
      const auto slash = group.find_last_of('/');
      group = slash == 0 || slash == std::string::npos ? "/" : group.substr(0, slash);
    }
  }
  return headroom;
}

// rlimit minus the current use it is compared with; kUnlimited without a limit.
std::int64_t rlimit_headroom(int resource, const char* status_field) {
  struct rlimit limit {};
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kUnlimited;
  const std::int64_t used = std::max<std::int64_t>(0, kib_field("/proc/self/status", status_field));
  return std::max<std::int64_t>(0, static_cast<std::int64_t>(limit.rlim_cur) - used);
}

}  // namespace

MemoryBudget available_memory() {
  MemoryBudget budget{kib_field("/proc/meminfo", "MemAvailable"), "MemAvailable"};
  if (budget.bytes < 0) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    budget = {pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : kUnlimited, "free memory"};
  }
  const std::pair<std::int64_t, const char*> others[] = {{cgroup_headroom(), "cgroup memory limit"},
                                                         {rlimit_headroom(RLIMIT_AS, "VmSize"), "ulimit -v"},
                                                         {rlimit_headroom(RLIMIT_DATA, "VmData"), "ulimit -d"}};
  for (const auto& [bytes, source] : others)
    if (bytes < budget.bytes) budget = {bytes, source};
  return budget;
}

std::int64_t saturating_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t product = 1;
  for (std::int64_t f : factors) {
    if (f <= 0) return 0;
    if (product > kUnlimited / f) return kUnlimited;
    product *= f;
  }
  return product;
}

std::string format_bytes(std::int64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char text[48];
  if (unit == 0)
    std::snprintf(text, sizeof(text), "%lld bytes", static_cast<long long>(bytes));
  else
    std::snprintf(text, sizeof(text), value < 10 ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return text;
}

void require_memory(std::int64_t bytes, const std::string& what, double share, const std::string& advice) {
  const MemoryBudget budget = available_memory();
  const double allowed = share * static_cast<double>(budget.bytes);
  if (static_cast<double>(bytes) <= allowed) return;
  std::string message = what + " needs " + format_bytes(bytes) + ", but only " + format_bytes(budget.bytes) +
                        " of memory is available (" + budget.limited_by + ")";
  if (share < 1.0)
    message += " and at most " + std::to_string(static_cast<int>(share * 100 + 0.5)) + "% of it may be used";
  throw MemoryShortage(message + advice);
}

std::string out_of_memory_message(std::int64_t bytes, const std::string& what) {
  const MemoryBudget budget = available_memory();
  return "out of memory allocating " + format_bytes(bytes) + " for " + what + " (" + format_bytes(budget.bytes) +
         " available now, " + budget.limited_by + ")";
}

bool is_allocation_failure(const c10::Error& error) {
  const std::string text = error.what();
  for (const char* marker :
       {"out of memory", "can't allocate memory", "not enough memory", "Cannot allocate memory", "DefaultCPUAllocator"})
    if (text.find(marker) != std::string::npos) return true;
  return false;
}

}  // namespace pix2pix
