// The input pipeline: a rank's shard decoded once into a cache of its stored values (on the device when it
// fits), then float batches in [-1, 1], NCHW, augmented on the device. With --cache none,
// batches stream from HDF5 through a background prefetch thread. An unpaired split (format
// version 3) is sharded per domain: A and B each by their own count and permutation.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pix2pix/data/augment.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/data/shard.hpp"

namespace pix2pix::data {

// auto: device when the shard fits in half the device memory, else host when it fits in half
// the host memory, else none. host: CPU memory (pinned when the device is a GPU). none: read
// from HDF5 every epoch.
enum class CacheMode { automatic, device, host, none };
CacheMode parse_cache_mode(const std::string& text);  // Error naming --cache otherwise
std::string to_string(CacheMode mode);

struct LoaderOptions {
  std::string split = "train";
  std::int64_t batch_size = 1;  // per rank
  CacheMode cache = CacheMode::automatic;
  // What this rank's cache may take on the device and in host memory (< 0: unlimited; on CPU
  // ranks both are host memory). Explicit cache modes may use all of it, `auto` half.
  std::int64_t device_memory_bytes = -1;
  std::int64_t host_memory_bytes = -1;
  // Called after each block of the cache is filled (pairs done, pairs in all): a progress
  // display, and where a long fill notices a stop request (the callback may throw).
  std::function<void(std::int64_t, std::int64_t)> on_cache_progress;
  AugmentOptions augment;  // load/crop 0: crop = stored side, load = crop * 286 / 256
  bool shuffle = true;     // per-epoch reshuffle (and shuffled sharding)
  std::uint64_t seed = 0;
  int world = 1;
  int rank = 0;
  int prefetch_batches = 2;  // cache none: batches read ahead
  // The layout of Batch::a and ::b: that of the parameters they meet (optim::parameter_memory_format).
  torch::MemoryFormat memory_format = torch::MemoryFormat::Contiguous;
};

struct Batch {
  torch::Tensor a;                      // float [n, Ca, crop, crop] in [-1, 1] on the device, dense in memory_format
  torch::Tensor b;                      // float [n, Cb, crop, crop]
  torch::Tensor labels;                 // int64 [n] on the device, undefined without labels
  std::vector<std::int64_t> indices;    // sample indices in the split (of A when unpaired)
  std::vector<std::int64_t> indices_b;  // of B (== indices when the split is paired)
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const PairedDataset> dataset, LoaderOptions options, torch::Device device);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // floor(shard / batch): the same on every rank, since every shard has floor(N / world) samples.
  // Unpaired: floor(the larger domain's shard / batch); the smaller domain's shard is visited
  // again from its start when it runs out within an epoch (as the reference's unaligned dataset).
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  const ShardPlan& shard() const { return shard_; }      // the pairs, or A's images when unpaired
  const ShardPlan& shard_b() const { return shard_b_; }  // B's (the same as shard() when paired)
  CacheMode cache_mode() const { return cache_mode_; }   // resolved (never automatic)
  std::int64_t cache_bytes() const { return cache_bytes_; }
  const AugmentOptions& augment() const { return options_.augment; }
  torch::Device device() const { return device_; }

  // Begins `epoch` at `first_step` (> 0: continuing an interrupted epoch; the batches are those
  // an uninterrupted epoch would give from that step on): fixes the visiting order and
  // (cache none) starts the prefetch thread.
  void start_epoch(std::int64_t epoch, std::int64_t first_step = 0);
  // The next batch of the epoch, or nullopt after steps_per_epoch() batches.
  std::optional<Batch> next();

 private:
  struct RawBatch {
    torch::Tensor a, b, labels;  // stored values NHWC (samples.hpp's tensor_type) / int32, on the cache's device
    std::vector<std::int64_t> indices, indices_b;
  };
  // Positions into the shards (A's, B's) of one step's samples.
  struct StepRows {
    std::vector<std::int64_t> a, b;
  };
  CacheMode choose_cache_mode(std::int64_t bytes) const;
  bool fill_cache();  // false: auto mode could not allocate it (the loader then streams)
  StepRows step_positions(std::int64_t step) const;
  RawBatch gather_cached(const StepRows& rows) const;
  RawBatch read_from_file(const StepRows& rows) const;
  Batch finish(RawBatch raw, std::int64_t step) const;
  void stop_prefetch();
  void prefetch_loop(std::int64_t first_step);

  std::shared_ptr<const PairedDataset> dataset_;
  LoaderOptions options_;
  torch::Device device_;
  SplitInfo info_;
  ShardPlan shard_, shard_b_;
  std::int64_t steps_per_epoch_ = 0;
  CacheMode cache_mode_ = CacheMode::device;
  std::int64_t cache_bytes_ = 0;
  torch::Tensor cache_a_, cache_b_, cache_labels_;

  std::int64_t epoch_ = -1;
  std::int64_t step_ = 0;
  std::vector<std::int64_t> order_;    // positions into the shard, this epoch
  std::vector<std::int64_t> order_b_;  // into B's shard (unpaired)

  // cache none: a bounded queue filled by one reader thread per epoch.
  std::thread reader_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<RawBatch> queue_;
  std::exception_ptr reader_error_;
  bool stop_reader_ = false;
};

}  // namespace pix2pix::data
