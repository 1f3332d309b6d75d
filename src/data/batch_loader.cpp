// Cache, epoch order, device-side conversion and the --cache none prefetch thread.
// Note [one reader thread]: HDF5 is not built thread-safe here, so exactly one thread touches
// the file during an epoch (the reader), and it is joined before anyone else may read again.
#include "pix2pix/data/batch_loader.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/common/random.hpp"

namespace pix2pix::data {
namespace {
constexpr std::uint64_t kOrderStream = 0x6f72646572;  // "order": epoch reshuffle
constexpr std::uint64_t kAugmentStream = 0x6175676d;  // "augm": crop/flip draws
constexpr std::uint64_t kDomainBStream = 0x646f6d42;  // "domB": B's own shard and order (unpaired)
constexpr std::int64_t kCacheBlockPairs = 4096;       // pairs read per block while filling the cache
constexpr const char* kCacheAdvice =
    "; use --cache none (stream from HDF5), --cache host (GPU ranks), or more ranks (smaller shards)";

// cache[positions[i]] = rows[i]. On the CPU a row copy each (index_copy_ costs 14x more there,
// measured with callgrind); on a GPU one index_copy_.
void scatter_rows(torch::Tensor& cache, const torch::Tensor& rows, const std::vector<std::int64_t>& positions) {
  if (cache.is_cuda()) {
    const auto where = torch::tensor(positions, torch::kInt64).to(cache.device());
    cache.index_copy_(0, where, rows.to(cache.device()));
    return;
  }
  const auto source = rows.contiguous();
  const size_t row_bytes = static_cast<size_t>(source.numel() / std::max<std::int64_t>(1, source.size(0))) *
                           static_cast<size_t>(source.element_size());
  auto* to = static_cast<unsigned char*>(cache.data_ptr());
  const auto* from = static_cast<const unsigned char*>(source.data_ptr());
  for (size_t i = 0; i < positions.size(); ++i)
    std::memcpy(to + static_cast<size_t>(positions[i]) * row_bytes, from + i * row_bytes, row_bytes);
}

bool fits(std::int64_t bytes, std::int64_t limit, double share) {
  return limit < 0 || static_cast<double>(bytes) <= share * static_cast<double>(limit);
}

}  // namespace

namespace {
const Choices<CacheMode> kCacheModeChoices = {{"auto", CacheMode::automatic},
                                              {"device", CacheMode::device},
                                              {"host", CacheMode::host},
                                              {"none", CacheMode::none}};
}  // namespace

CacheMode parse_cache_mode(const std::string& text) {
  return parse_choice(text, "--cache", kCacheModeChoices);
}
std::string to_string(CacheMode value) {
  return choice_name(value, kCacheModeChoices);
}

BatchLoader::BatchLoader(std::shared_ptr<const PairedDataset> dataset, LoaderOptions options, torch::Device device)
    : dataset_(std::move(dataset)), options_(std::move(options)), device_(device) {
  info_ = dataset_->split(options_.split);
  if (options_.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  AugmentOptions& aug = options_.augment;
  const std::int64_t side = std::min(info_.height, info_.width);
  if (aug.preprocess == Preprocess::none) {
    if (aug.crop_size != 0 && (aug.crop_size != info_.height || aug.crop_size != info_.width))
      throw Error("--preprocess none keeps the stored " + std::to_string(info_.height) + "x" +
                  std::to_string(info_.width) + " images; --crop-size " + std::to_string(aug.crop_size) +
                  " needs --preprocess crop or resize_and_crop");
    aug.flip = false;
  } else {
    if (aug.crop_size == 0) aug.crop_size = side;
    if (aug.load_size == 0) aug.load_size = (aug.crop_size * 286 + 128) / 256;
    const std::int64_t crop_from = aug.preprocess == Preprocess::crop ? side : aug.load_size;
    if (aug.crop_size < 1 || aug.crop_size > crop_from)
      throw Error("--crop-size " + std::to_string(aug.crop_size) + " must be in 1.." + std::to_string(crop_from) +
                  (aug.preprocess == Preprocess::crop ? " (the stored image side)" : " (--load-size)"));
  }

  // Every allocation below scales with the image counts; the file's counts are real (the reader
  // checked its storage) but may still not fit this machine: a permutation of the whole split,
  // the shard's indices and the order of each epoch, per domain when unpaired.
  const int world = std::max(1, options_.world);
  const std::int64_t own_b = info_.paired ? 0 : info_.count_b;
  require_memory(8 * (info_.count + own_b) + 24 * ((info_.count + own_b) / world),
                 dataset_->path() + ": /" + options_.split + ": the shard plan of its " +
                     std::to_string(info_.count + own_b) + (info_.paired ? " pairs" : " images"));
  shard_ = plan_shard({info_.count, options_.world, options_.rank, options_.seed, 0, options_.shuffle});
  shard_b_ = info_.paired ? shard_
                          : plan_shard({info_.count_b, options_.world, options_.rank, options_.seed ^ kDomainBStream, 0,
                                        options_.shuffle});
  steps_per_epoch_ = std::max(shard_.per_rank, shard_b_.per_rank) / options_.batch_size;
  const auto too_few = [&](const ShardPlan& shard, const char* what) {
    return Error(dataset_->path() + ": split '" + options_.split + "' gives each of " + std::to_string(options_.world) +
                 " ranks " + std::to_string(shard.per_rank) + " " + what);
  };
  if (!info_.paired && (shard_.per_rank == 0 || shard_b_.per_rank == 0))
    throw too_few(shard_.per_rank == 0 ? shard_ : shard_b_,
                  shard_.per_rank == 0 ? "A images; every rank needs at least one of each domain"
                                       : "B images; every rank needs at least one of each domain");
  if (steps_per_epoch_ == 0)
    throw too_few(shard_.per_rank >= shard_b_.per_rank ? shard_ : shard_b_,
                  ((info_.paired ? "pairs" : "images of its larger domain") +
                   (", fewer than --batch-size " + std::to_string(options_.batch_size)))
                      .c_str());
  const std::int64_t streamed_bytes =
      saturating_product({options_.batch_size, info_.pair_bytes(), options_.prefetch_batches + 2});
  require_memory(streamed_bytes, "--batch-size " + std::to_string(options_.batch_size) + " of " + dataset_->path() +
                                     "'s pairs (with --prefetch " + std::to_string(options_.prefetch_batches) + ")");

  cache_bytes_ = shard_.per_rank * info_.image_bytes(Domain::A) +
                 (info_.paired ? shard_.per_rank : shard_b_.per_rank) * info_.image_bytes(Domain::B);
  cache_mode_ = choose_cache_mode(cache_bytes_);
  if (cache_mode_ != CacheMode::none && !fill_cache()) cache_mode_ = CacheMode::none;
  if (cache_mode_ == CacheMode::none) cache_bytes_ = 0;
}

CacheMode BatchLoader::choose_cache_mode(std::int64_t bytes) const {
  const std::string what = "caching this rank's shard of " + dataset_->path() + " (" + std::to_string(shard_.per_rank) +
                           " pairs) with --cache ";
  switch (options_.cache) {
    case CacheMode::automatic:
      if (fits(bytes, options_.device_memory_bytes, 0.5)) return CacheMode::device;
      if (device_.is_cuda() && fits(bytes, options_.host_memory_bytes, 0.5)) return CacheMode::host;
      std::fprintf(stderr,
                   "%snote: %s (%s) does not fit in half the free memory: streaming it from HDF5 (--cache none)\n",
                   rank_prefix().c_str(), (what + "auto").c_str(), format_bytes(bytes).c_str());
      return CacheMode::none;
    case CacheMode::device:
      if (!fits(bytes, options_.device_memory_bytes, 1.0))
        throw Error(what + "device needs " + format_bytes(bytes) + ", more than the " +
                    format_bytes(options_.device_memory_bytes) + " the device has free" + kCacheAdvice);
      return CacheMode::device;
    case CacheMode::host:
      if (!fits(bytes, options_.host_memory_bytes, 1.0))
        throw Error(what + "host needs " + format_bytes(bytes) + ", more than the " +
                    format_bytes(options_.host_memory_bytes) + " of host memory this rank may use" + kCacheAdvice);
      return CacheMode::host;
    case CacheMode::none:
      return CacheMode::none;
  }
  return CacheMode::none;
}

// The shard is read block by block in file order (its indices sorted, so runs of consecutive
// pairs stay whole reads) and each block is scattered to its shard position: the cache is
// filled without a second full copy, and a stop request or the progress display gets a turn
// between blocks. An unpaired split fills A's cache from A's shard, then B's from B's.
bool BatchLoader::fill_cache() {
  const std::int64_t images = shard_.per_rank + shard_b_.per_rank;
  const std::string what =
      "the cache of this rank's shard of " + dataset_->path() + " (" +
      (info_.paired ? std::to_string(shard_.per_rank) + " pairs"
                    : std::to_string(shard_.per_rank) + " A and " + std::to_string(shard_b_.per_rank) + " B images") +
      ", --cache " + to_string(cache_mode_) + ")";
  const torch::Device cache_device = cache_mode_ == CacheMode::device ? device_ : torch::Device(torch::kCPU);
  const bool pinned = cache_mode_ == CacheMode::host && device_.is_cuda();  // async per-batch copies to the GPU
  const auto stored = [&](Domain domain) {
    return torch::TensorOptions(tensor_type(info_.samples(domain).type)).device(cache_device).pinned_memory(pinned);
  };
  try {
    allocating(cache_bytes_, what, [&] {
      cache_a_ = torch::empty({shard_.per_rank, info_.height, info_.width, info_.channels_a}, stored(Domain::A));
      cache_b_ = torch::empty({shard_b_.per_rank, info_.height, info_.width, info_.channels_b}, stored(Domain::B));
      if (info_.has_labels)
        cache_labels_ = torch::empty({shard_.per_rank}, torch::TensorOptions(torch::kInt32).device(device_));
      return 0;
    });
  } catch (const Error&) {
    cache_a_ = cache_b_ = cache_labels_ = torch::Tensor();
    if (options_.cache != CacheMode::automatic) throw;
    std::fprintf(stderr, "%snote: could not allocate %s (%s): streaming it from HDF5 (--cache none)\n",
                 rank_prefix().c_str(), what.c_str(), format_bytes(cache_bytes_).c_str());
    return false;
  }
  std::int64_t done = 0;  // images read (a pair counts as two)
  // Calls store(indices, positions) for the blocks of `shard` in file order.
  const auto for_each_block = [&](const ShardPlan& shard, const auto& store) {
    std::vector<std::int64_t> by_index(static_cast<size_t>(shard.per_rank));
    std::iota(by_index.begin(), by_index.end(), 0);
    std::sort(by_index.begin(), by_index.end(),
              [&shard](std::int64_t x, std::int64_t y) { return shard.indices[x] < shard.indices[y]; });
    const std::int64_t block = pairs_per_read_block(info_, kCacheBlockPairs);
    for (std::int64_t first = 0; first < shard.per_rank; first += block) {
      const std::int64_t n = std::min(block, shard.per_rank - first);
      std::vector<std::int64_t> indices(static_cast<size_t>(n)), positions(static_cast<size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        positions[static_cast<size_t>(i)] = by_index[static_cast<size_t>(first + i)];
        indices[static_cast<size_t>(i)] = shard.indices[static_cast<size_t>(positions[static_cast<size_t>(i)])];
      }
      done += store(indices, positions);
      if (options_.on_cache_progress) options_.on_cache_progress(done, images);
    }
  };
  if (info_.paired) {
    for_each_block(shard_, [&](const std::vector<std::int64_t>& indices, const std::vector<std::int64_t>& positions) {
      const PairBatch pairs = dataset_->read(options_.split, indices);
      scatter_rows(cache_a_, pairs.a, positions);
      scatter_rows(cache_b_, pairs.b, positions);
      if (cache_labels_.defined()) scatter_rows(cache_labels_, pairs.labels, positions);
      return 2 * static_cast<std::int64_t>(indices.size());
    });
    return true;
  }
  for (const Domain domain : {Domain::A, Domain::B}) {
    torch::Tensor& cache = domain == Domain::A ? cache_a_ : cache_b_;
    for_each_block(domain == Domain::A ? shard_ : shard_b_,
                   [&](const std::vector<std::int64_t>& indices, const std::vector<std::int64_t>& positions) {
                     scatter_rows(cache, dataset_->read_images(options_.split, domain, indices), positions);
                     return static_cast<std::int64_t>(indices.size());
                   });
  }
  return true;
}

BatchLoader::~BatchLoader() {
  stop_prefetch();
}

void BatchLoader::start_epoch(std::int64_t epoch, std::int64_t first_step) {
  stop_prefetch();
  if (first_step < 0 || first_step > steps_per_epoch_)
    throw Error("BatchLoader: epoch " + std::to_string(epoch) + " cannot start at step " + std::to_string(first_step) +
                " of " + std::to_string(steps_per_epoch_));
  epoch_ = epoch;
  step_ = first_step;
  const auto visiting_order = [&](std::int64_t count, std::uint64_t stream) {
    std::vector<std::int64_t> order(static_cast<size_t>(count));
    if (options_.shuffle)
      return seeded_permutation(count, mix_seed(options_.seed ^ stream, static_cast<std::uint64_t>(epoch),
                                                static_cast<std::uint64_t>(options_.rank)));
    std::iota(order.begin(), order.end(), 0);
    return order;
  };
  order_ = visiting_order(shard_.per_rank, kOrderStream);
  if (!info_.paired) order_b_ = visiting_order(shard_b_.per_rank, kOrderStream ^ kDomainBStream);
  if (cache_mode_ == CacheMode::none) {
    stop_reader_ = false;
    reader_error_ = nullptr;
    reader_ = std::thread([this, first_step] { prefetch_loop(first_step); });
  }
}

BatchLoader::StepRows BatchLoader::step_positions(std::int64_t step) const {
  StepRows rows;
  for (std::int64_t i = 0; i < options_.batch_size; ++i) {
    // Within the shard when paired (steps * batch <= per_rank); the smaller domain of an
    // unpaired split wraps around.
    const auto k = static_cast<size_t>(step * options_.batch_size + i);
    rows.a.push_back(order_[k % order_.size()]);
    rows.b.push_back(info_.paired ? rows.a.back() : order_b_[k % order_b_.size()]);
  }
  return rows;
}

BatchLoader::RawBatch BatchLoader::gather_cached(const StepRows& rows) const {
  RawBatch raw;
  const auto index_a = torch::tensor(rows.a, torch::kInt64).to(cache_a_.device());
  raw.a = cache_a_.index_select(0, index_a);
  raw.b = cache_b_.index_select(0, info_.paired ? index_a : torch::tensor(rows.b, torch::kInt64).to(cache_b_.device()));
  if (cache_labels_.defined()) raw.labels = cache_labels_.index_select(0, index_a.to(device_));
  for (std::int64_t p : rows.a) raw.indices.push_back(shard_.indices[static_cast<size_t>(p)]);
  for (std::int64_t p : rows.b) raw.indices_b.push_back(shard_b_.indices[static_cast<size_t>(p)]);
  return raw;
}

BatchLoader::RawBatch BatchLoader::read_from_file(const StepRows& rows) const {
  RawBatch raw;
  for (std::int64_t p : rows.a) raw.indices.push_back(shard_.indices[static_cast<size_t>(p)]);
  for (std::int64_t p : rows.b) raw.indices_b.push_back(shard_b_.indices[static_cast<size_t>(p)]);
  if (info_.paired) {
    PairBatch pairs = dataset_->read(options_.split, raw.indices);
    raw.a = pairs.a;
    raw.b = pairs.b;
    raw.labels = pairs.labels;
  } else {
    raw.a = dataset_->read_images(options_.split, Domain::A, raw.indices);
    raw.b = dataset_->read_images(options_.split, Domain::B, raw.indices_b);
  }
  if (device_.is_cuda()) {
    raw.a = raw.a.pin_memory();
    raw.b = raw.b.pin_memory();
  }
  return raw;
}

Batch BatchLoader::finish(RawBatch raw, std::int64_t step) const {
  const std::int64_t ca = raw.a.size(3);
  // One NHWC → float NCHW conversion for A and B together, on the device, when they share a
  // sample type and range (always so for 8-bit data); each on its own range otherwise.
  torch::Tensor images;
  if (info_.samples_a == info_.samples_b) {
    images = to_model_input(torch::cat({raw.a, raw.b}, 3).to(device_, /*non_blocking=*/true), info_.samples_a.range);
  } else {
    images = torch::cat({to_model_input(raw.a.to(device_, /*non_blocking=*/true), info_.samples_a.range),
                         to_model_input(raw.b.to(device_, /*non_blocking=*/true), info_.samples_b.range)},
                        1);
  }
  const std::uint64_t draw_seed = mix_seed(options_.seed ^ kAugmentStream, static_cast<std::uint64_t>(epoch_),
                                           static_cast<std::uint64_t>(step * options_.world + options_.rank));
  const AugmentDraw draw = draw_augmentation(images.size(0), images.size(2), options_.augment, draw_seed);
  images = apply_augmentation(images, draw, options_.augment);
  Batch batch;
  batch.a = images.narrow(1, 0, ca).contiguous(options_.memory_format);
  batch.b = images.narrow(1, ca, images.size(1) - ca).contiguous(options_.memory_format);
  if (raw.labels.defined()) batch.labels = raw.labels.to(device_).to(torch::kInt64);
  batch.indices = std::move(raw.indices);
  batch.indices_b = std::move(raw.indices_b);
  return batch;
}

std::optional<Batch> BatchLoader::next() {
  if (epoch_ < 0) throw Error("BatchLoader::next called before start_epoch");
  if (step_ >= steps_per_epoch_) {
    stop_prefetch();
    return std::nullopt;
  }
  RawBatch raw;
  if (cache_mode_ == CacheMode::none) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !queue_.empty() || reader_error_; });
    if (queue_.empty() && reader_error_) std::rethrow_exception(reader_error_);
    raw = std::move(queue_.front());
    queue_.pop_front();
    changed_.notify_all();
  } else {
    raw = gather_cached(step_positions(step_));
  }
  return finish(std::move(raw), step_++);
}

void BatchLoader::prefetch_loop(std::int64_t first_step) {
  try {
    for (std::int64_t step = first_step; step < steps_per_epoch_; ++step) {
      RawBatch raw = read_from_file(step_positions(step));
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] {
        return stop_reader_ || static_cast<int>(queue_.size()) < std::max(1, options_.prefetch_batches);
      });
      if (stop_reader_) return;
      queue_.push_back(std::move(raw));
      changed_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    reader_error_ = std::current_exception();
    changed_.notify_all();
  }
}

void BatchLoader::stop_prefetch() {
  if (!reader_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_reader_ = true;
    changed_.notify_all();
  }
  reader_.join();
  queue_.clear();
}

}  // namespace pix2pix::data
