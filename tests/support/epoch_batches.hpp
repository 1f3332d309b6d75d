// Every batch a loader gives for one epoch, for tests that compare loaders batch by batch.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "pix2pix/data/batch_loader.hpp"

namespace pix2pix::fixtures {

inline std::vector<data::Batch> epoch_batches(data::BatchLoader& loader, std::int64_t epoch) {
  loader.start_epoch(epoch);
  std::vector<data::Batch> batches;
  while (auto batch = loader.next()) batches.push_back(std::move(*batch));
  return batches;
}

}  // namespace pix2pix::fixtures
