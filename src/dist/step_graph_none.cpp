// See Note [CUDA graphs need LibTorch's CUDA half] (step_graph_cuda.cpp): a LibTorch without CUDA
// (Debian's) has no CUDA graphs; --cuda-graph on is refused with this reason.
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/step_graph.hpp"

namespace pix2pix::dist {

std::string cuda_graph_unavailable(const torch::Device& device) {
  if (!device.is_cuda()) return "a CPU rank has no CUDA graphs";
  return "this program's LibTorch was built without CUDA, and CUDA graphs are part of its CUDA half";
}

std::unique_ptr<StepGraph> make_cuda_step_graph(const torch::Device& device) {
  throw Error("a CUDA graph: " + cuda_graph_unavailable(device));
}

}  // namespace pix2pix::dist
