// Cache, epoch order, device-side conversion and the --cache none prefetch thread.
// Note [one reader thread]: HDF5 is not built thread-safe here, so exactly one thread touches
// the file during an epoch (the reader), and it is joined before anyone else may read again.
#include "pix2pix/data/batch_loader.hpp"

#include <numeric>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/random.hpp"

namespace pix2pix::data {
namespace {
constexpr std::uint64_t kOrderStream = 0x6f72646572;  // "order": epoch reshuffle
constexpr std::uint64_t kAugmentStream = 0x6175676d;  // "augm": crop/flip draws
std::string cache_failure_message(std::int64_t bytes, CacheMode mode) {
  return "cannot cache this rank's shard (" + std::to_string(bytes >> 20) + " MiB) with --cache " + to_string(mode) +
         ": out of memory; use --cache host, --cache none (stream from HDF5) or more ranks";
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

torch::Tensor to_model_input(const torch::Tensor& nhwc) {
  return nhwc.permute({0, 3, 1, 2}).to(torch::kFloat32).div(127.5).sub_(1.0);  // never writes to `nhwc`
}

BatchLoader::BatchLoader(std::shared_ptr<const PairedDataset> dataset, LoaderOptions options, torch::Device device)
    : dataset_(std::move(dataset)), options_(std::move(options)), device_(device) {
  info_ = dataset_->split(options_.split);
  if (options_.batch_size < 1) throw Error("--batch-size must be at least 1");
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

  shard_ = plan_shard({info_.count, options_.world, options_.rank, options_.seed, 0, options_.shuffle});
  steps_per_epoch_ = shard_.per_rank / options_.batch_size;
  if (steps_per_epoch_ == 0)
    throw Error(dataset_->path() + ": split '" + options_.split + "' gives each of " + std::to_string(options_.world) +
                " ranks " + std::to_string(shard_.per_rank) + " pairs, fewer than --batch-size " +
                std::to_string(options_.batch_size));

  const std::int64_t pair_bytes = info_.height * info_.width * (info_.channels_a + info_.channels_b);
  cache_mode_ = options_.cache;
  if (cache_mode_ == CacheMode::automatic) {
    const bool fits = options_.cache_budget_bytes < 0 || shard_.per_rank * pair_bytes <= options_.cache_budget_bytes;
    cache_mode_ = fits ? CacheMode::device : CacheMode::host;
  }
  if (cache_mode_ == CacheMode::none) return;

  // Decode once: the whole shard in one read, then onto the cache device. Running out of memory
  // here is a configuration problem, so it is reported as one with the way out.
  cache_bytes_ = shard_.per_rank * pair_bytes;
  PairBatch pairs;
  try {
    pairs = dataset_->read(options_.split, shard_.indices);
    if (cache_mode_ == CacheMode::device) {
      cache_a_ = pairs.a.to(device_);
      cache_b_ = pairs.b.to(device_);
    } else if (device_.is_cuda()) {
      cache_a_ = pairs.a.pin_memory();  // lets the per-batch copy to the GPU run asynchronously
      cache_b_ = pairs.b.pin_memory();
    } else {
      cache_a_ = pairs.a;
      cache_b_ = pairs.b;
    }
  } catch (const std::bad_alloc&) {
    throw Error(cache_failure_message(cache_bytes_, cache_mode_));
  } catch (const c10::Error& e) {
    if (std::string(e.what()).find("out of memory") == std::string::npos) throw;
    throw Error(cache_failure_message(cache_bytes_, cache_mode_));
  }
  if (pairs.labels.defined()) cache_labels_ = pairs.labels.to(device_);
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
  if (options_.shuffle) {
    order_ =
        seeded_permutation(shard_.per_rank, mix_seed(options_.seed ^ kOrderStream, static_cast<std::uint64_t>(epoch),
                                                     static_cast<std::uint64_t>(options_.rank)));
  } else {
    order_.resize(static_cast<size_t>(shard_.per_rank));
    std::iota(order_.begin(), order_.end(), 0);
  }
  if (cache_mode_ == CacheMode::none) {
    stop_reader_ = false;
    reader_error_ = nullptr;
    reader_ = std::thread([this, first_step] { prefetch_loop(first_step); });
  }
}

std::vector<std::int64_t> BatchLoader::step_positions(std::int64_t step) const {
  const auto first = order_.begin() + step * options_.batch_size;
  return std::vector<std::int64_t>(first, first + options_.batch_size);
}

BatchLoader::RawBatch BatchLoader::gather_cached(const std::vector<std::int64_t>& positions) const {
  RawBatch raw;
  const auto index = torch::tensor(positions, torch::kInt64).to(cache_a_.device());
  raw.a = cache_a_.index_select(0, index);
  raw.b = cache_b_.index_select(0, index);
  if (cache_labels_.defined()) raw.labels = cache_labels_.index_select(0, index.to(device_));
  for (std::int64_t p : positions) raw.indices.push_back(shard_.indices[static_cast<size_t>(p)]);
  return raw;
}

BatchLoader::RawBatch BatchLoader::read_from_file(const std::vector<std::int64_t>& positions) const {
  RawBatch raw;
  for (std::int64_t p : positions) raw.indices.push_back(shard_.indices[static_cast<size_t>(p)]);
  PairBatch pairs = dataset_->read(options_.split, raw.indices);
  raw.a = device_.is_cuda() ? pairs.a.pin_memory() : pairs.a;
  raw.b = device_.is_cuda() ? pairs.b.pin_memory() : pairs.b;
  raw.labels = pairs.labels;
  return raw;
}

Batch BatchLoader::finish(RawBatch raw, std::int64_t step) const {
  const std::int64_t ca = raw.a.size(3);
  // One uint8 NHWC → float NCHW conversion for A and B together, on the device.
  auto pair = torch::cat({raw.a, raw.b}, 3).to(device_, /*non_blocking=*/true);
  auto images = to_model_input(pair);
  const std::uint64_t draw_seed = mix_seed(options_.seed ^ kAugmentStream, static_cast<std::uint64_t>(epoch_),
                                           static_cast<std::uint64_t>(step * options_.world + options_.rank));
  const AugmentDraw draw = draw_augmentation(images.size(0), images.size(2), options_.augment, draw_seed);
  images = apply_augmentation(images, draw, options_.augment);
  Batch batch;
  batch.a = images.narrow(1, 0, ca).contiguous();
  batch.b = images.narrow(1, ca, images.size(1) - ca).contiguous();
  if (raw.labels.defined()) batch.labels = raw.labels.to(device_).to(torch::kInt64);
  batch.indices = std::move(raw.indices);
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
