// Note [CUDA graphs need LibTorch's CUDA half]: a step is captured with LibTorch's own CUDA graph
// (at::cuda::CUDAGraph), not with cudaStreamBeginCapture alone, for two things only it does: the
// caching allocator's blocks that the captured step allocates go to a private pool that the
// replays keep (raw capture would leave them free for any later tensor to take while the graph
// still writes them), and the CUDA generator's seed and offset become inputs of the graph, so
// that each replay draws new dropout masks from the seed set before it, as an eager step does
// (raw capture would freeze the captured step's masks). Both live in libtorch_cuda and
// libc10_cuda, which only a LibTorch built with CUDA has (pip's, a GPU node's): there this file is
// linked (PIX2PIX_HAVE_TORCH_CUDA). Debian's LibTorch is CPU-only but installs the ATen/cuda
// headers, so CI compiles this file against them (not linked: src/CMakeLists.txt, with a stand-in for the
// one generated c10/cuda header such an install lacks) and
// step_graph_none.cpp stands in.
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <torch/version.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/cuda_check.hpp"
#include "pix2pix/dist/step_graph.hpp"

namespace pix2pix::dist {
namespace {

class CudaStepGraph final : public StepGraph {
 public:
  explicit CudaStepGraph(c10::DeviceIndex device)
      : device_(device), side_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)) {}

  void run_eagerly(const std::function<void()>& work) override { on_side_stream(work); }

  void capture(const std::function<void()>& work) override {
    graph_.reset();  // the last capture's pool goes back before the next one takes memory
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    // As torch.cuda.graph does: nothing queued before is still running when the capture begins (a
    // collective's completion event polled by the watchdog, say, must not meet a capture), and
    // the allocator gives back what it caches unused: the blocks the eager steps before the capture
    // freed (about one step's peak), and the pool of the graph reset above, which the allocator
    // frees only when emptied or short. The capture's pool then takes that memory instead of as
    // much again beside it.
    c10::cuda::CUDAGuard device_guard(device_);
    CUDA_CHECK(cudaDeviceSynchronize());
    CaptureMemory memory;
    read_allocator(memory.reserved_before, memory.allocated_before);
    c10::cuda::CUDACachingAllocator::emptyCache();
    std::int64_t unused = 0;
    read_allocator(memory.reserved_emptied, unused);
    on_side_stream([&] {
#if TORCH_VERSION_MAJOR >= 2
      // Relaxed: the watchdog thread's event queries and NCCL's own calls on other threads may
      // go on during the capture; the capture itself holds no host synchronisation
      // (See Note [no host reads in the step]), and a read in it fails the capture, which ends
      // the run.
      graph->capture_begin({0, 0}, cudaStreamCaptureModeRelaxed);
#else
      graph->capture_begin();
#endif
      try {
        work();
      } catch (const std::exception& e) {
        try {
          graph->capture_end();  // ends the stream's capture and the allocator's routing into the pool
        } catch (const std::exception&) {
        }
        throw Error(std::string("the step could not be captured as a CUDA graph: ") + e.what());
      }
      try {
        graph->capture_end();
      } catch (const std::exception& e) {
        throw Error(std::string("the step could not be captured as a CUDA graph: ") + e.what());
      }
    });
    graph_ = std::move(graph);
    read_allocator(memory.reserved_after, memory.allocated_after);
    memory_ = memory;
  }

  std::optional<CaptureMemory> capture_memory() const override {
    return memory_;
  }

  void replay() override {
    if (!graph_) throw Error("StepGraph::replay: nothing was captured");
    c10::cuda::CUDAGuard device_guard(device_);
    graph_->replay();
  }

 private:
  // The allocator's bytes reserved from the device and handed out, over all its pools (index 0 of
  // its statistics: the aggregate, in LibTorch 1.13 as in 2.x).
  void read_allocator(std::int64_t& reserved, std::int64_t& allocated) const {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_);
    reserved = stats.reserved_bytes[0].current;
    allocated = stats.allocated_bytes[0].current;
  }

  // `work` on the side stream, which first waits for the current stream's work so far; the
  // current stream then waits for `work`'s. Device collectives follow the side stream meanwhile
  // (See Note [the compute stream]).
  void on_side_stream(const std::function<void()>& work) {
    c10::cuda::CUDAGuard device_guard(device_);
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device_);
    at::cuda::CUDAEvent before;
    before.record(current);
    before.block(side_);
    {
      c10::cuda::CUDAStreamGuard stream_guard(side_);
      ComputeStreamScope compute(side_.stream());
      work();
    }
    at::cuda::CUDAEvent after;
    after.record(side_);
    after.block(current);
  }

  c10::DeviceIndex device_;
  c10::cuda::CUDAStream side_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  std::optional<CaptureMemory> memory_;
};

}  // namespace

std::string cuda_graph_unavailable(const torch::Device& device) {
  if (!device.is_cuda()) return "a CPU rank has no CUDA graphs";
  return "";
}

std::unique_ptr<StepGraph> make_cuda_step_graph(const torch::Device& device) {
  const std::string why = cuda_graph_unavailable(device);
  if (!why.empty()) throw Error("a CUDA graph: " + why);
  return std::make_unique<CudaStepGraph>(device.has_index() ? device.index() : c10::DeviceIndex{0});
}

}  // namespace pix2pix::dist
