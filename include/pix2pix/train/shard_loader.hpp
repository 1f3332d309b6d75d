// This rank's loader of the train split, as `train` and `train-classifier` both make it: the
// rank's shard of the pairs, cached within the memory the rank may use (the device's free memory,
// and the host's divided among the node's ranks).
#pragma once

#include <torch/torch.h>

#include <memory>

#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/dist/communicator.hpp"

namespace pix2pix::train {

// `options` gives batch, seed, augmentation and the cache-progress callback; split, rank, world
// and the memory budgets are set here.
std::unique_ptr<data::BatchLoader> make_shard_loader(std::shared_ptr<const data::PairedDataset> dataset,
                                                     data::LoaderOptions options, const dist::Communicator& comm,
                                                     const torch::Device& device, int ranks_per_node);

}  // namespace pix2pix::train
