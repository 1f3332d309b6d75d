#include "pix2pix/train/shard_loader.hpp"

#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/device.hpp"

namespace pix2pix::train {

std::unique_ptr<data::BatchLoader> make_shard_loader(std::shared_ptr<const data::PairedDataset> dataset,
                                                     data::LoaderOptions options, const dist::Communicator& comm,
                                                     const torch::Device& device, int ranks_per_node) {
  options.split = data::format::kTrain;
  options.world = comm.world();
  options.rank = comm.rank();
  const dist::CacheMemory memory = dist::cache_memory(device, ranks_per_node);
  options.device_memory_bytes = memory.device_bytes;
  options.host_memory_bytes = memory.host_bytes;
  return std::make_unique<data::BatchLoader>(std::move(dataset), std::move(options), device);
}

}  // namespace pix2pix::train
