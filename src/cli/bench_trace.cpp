// Note [a trace beside the timing]
// A profile before a guess: `bench --trace FILE` runs --trace-steps more steps after the timed
// ones with LibTorch's profiler on, and writes what it recorded as a Chrome trace (on a GPU with the
// kernels, copies and gaps of the device, which is where a step behind PyTorch's is explained, and
// the allocator's memory events, which say what a step holds at its peak). The
// traced steps are not the timed ones: a profiler slows every operator it records, and the images/s
// beside it stays the step's own. Every rank traces (a collective waits for the slowest rank, and
// the trace of another rank shows why), each into its own file. A LibTorch without Kineto (Debian
// 12's 1.13) is refused before anything runs, with the profiler's own reason.
#include "pix2pix/cli/bench_trace.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <filesystem>
#include <set>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::cli {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerState;

profiler::ProfilerConfig trace_config() {
  return profiler::ProfilerConfig(ProfilerState::KINETO, /*report_input_shapes=*/true, /*profile_memory=*/true);
}

std::set<ActivityType> activities(bool cuda) {
  std::set<ActivityType> wanted{ActivityType::CPU};
  if (cuda) wanted.insert(ActivityType::CUDA);
  return wanted;
}

void start_profiler(bool cuda) {
  profiler::prepareProfiler(trace_config(), activities(cuda));
  profiler::enableProfiler(trace_config(), activities(cuda));
}

// Writes the stopped profiler's trace to a fresh name beside `path`, then renames it over `path`.
void save_whole(profiler::ProfilerResult& result, const std::string& path) {
  const std::string temporary = fresh_name(
      (std::filesystem::path(path).parent_path() / ("." + std::filesystem::path(path).filename().string() + ".tmp"))
          .string());
  std::error_code ec;
  try {
    result.save(temporary);
  } catch (const c10::Error& e) {
    std::filesystem::remove(temporary, ec);
    throw Error("--trace: cannot write " + path + ": " + e.what_without_backtrace());
  }
  if (std::filesystem::file_size(temporary, ec) == 0 || ec) {
    std::filesystem::remove(temporary, ec);
    throw Error("--trace: cannot write " + path +
                ": the profiler wrote nothing (a full disk or a folder it may not write?)");
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw Error("--trace: cannot write " + path + ": " + ec.message());
  }
}

}  // namespace

std::string trace_path_for_rank(const std::string& path, int rank, int world) {
  if (world <= 1) return path;
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".rank" + std::to_string(rank) + p.extension().string())).string();
}

std::string trace_unavailable_reason() {
  const auto probe = std::filesystem::temp_directory_path() / "pix2pix-trace-probe";
  const std::string probe_path = fresh_name(probe.string());
  std::string reason;
  try {
    start_profiler(false);
    profiler::disableProfiler()->save(probe_path);
  } catch (const c10::Error& e) {
    reason = e.what_without_backtrace();
  }
  std::error_code ec;
  std::filesystem::remove(probe_path, ec);
  return reason;
}

StepTrace::StepTrace(bool cuda) {
  start_profiler(cuda);
  running_ = true;
}

StepTrace::~StepTrace() {
  if (!running_) return;
  try {
    profiler::disableProfiler();
  } catch (...) {  // a destructor: the profiler's own failure to stop has nothing to add to the error in flight
  }
}

void StepTrace::save(const std::string& path) {
  running_ = false;
  const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  save_whole(*result, path);
}

}  // namespace pix2pix::cli
