// `bench --trace`: a Chrome trace (chrome://tracing, ui.perfetto.dev) of training steps, made by
// LibTorch's profiler (Kineto). See Note [a trace beside the timing].
#pragma once

#include <memory>
#include <string>

namespace pix2pix::cli {

// The file rank `rank` of `world` writes for --trace PATH: PATH itself in a world of one, else
// PATH with ".rank<r>" before its extension (trace.json: trace.rank0.json, trace.rank1.json, ...).
std::string trace_path_for_rank(const std::string& path, int rank, int world);

// Why this LibTorch cannot write a trace, or "" when it can: a LibTorch built without Kineto
// (Debian 12's 1.13) records operators but refuses to save them. Asks the profiler itself.
std::string trace_unavailable_reason();

// Profiles this process from construction to save(): operators on the CPU (with their input
// shapes), and on a GPU its kernels and copies too.
class StepTrace {
 public:
  explicit StepTrace(bool cuda);
  ~StepTrace();  // stops the profiler if save() did not
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

  // Stops the profiler and writes the trace to `path` whole: to a fresh name beside it, then renamed
  // over it. Error names the path when it cannot be written.
  void save(const std::string& path);

 private:
  bool running_ = false;
};

}  // namespace pix2pix::cli
