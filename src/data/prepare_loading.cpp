#include "pix2pix/data/prepare_loading.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/random.hpp"
#include "pix2pix/data/image_ops.hpp"
#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::data {

Channels resolve_channels(const PrepareOptions& o, const SourcePlan& plan) {
  Channels c;
  c.given_a = o.channels_a != 0;
  c.given_b = o.channels_b != 0;
  c.b = o.channels_b != 0 ? o.channels_b : (plan.idx ? 1 : 3);
  if (o.channels_a != 0) {
    c.a = o.channels_a;
  } else if (plan.kind == SourceKind::images) {
    c.a = o.derive == DeriveMode::gray ? 1 : c.b;
  } else {
    c.a = 3;
  }
  for (int ch : {c.a, c.b})
    if (!format::is_valid_channels(ch))
      throw UsageError("--channels must be 1 to " + std::to_string(format::kMaxChannels) + ", got " +
                       std::to_string(ch));
  return c;
}

namespace {

// `image` with a domain's channels (See Note [channels of deep and multi-band images]).
cv::Mat fit_channels(const cv::Mat& image, int channels, bool given) {
  if (image.channels() == channels) return image;
  const bool plain = image.channels() == 1 || image.channels() == 3;
  if (!given && !(image.depth() == CV_8U && plain)) return image;
  if (!plain || !(channels == 1 || channels == 3))
    throw cv::Exception(cv::Error::StsBadArg,
                        std::to_string(image.channels()) + " channels cannot be converted to " +
                            std::to_string(channels) + " (grey and colour convert; other bands are kept as they are)",
                        "fit_channels", __FILE__, __LINE__);
  return to_channels(image, channels);
}

// A source as read; its first NaN or infinite value is named in `non_finite` at its own pixel,
// before a resize or a derivation moves or spreads it.
cv::Mat load_one(const std::string& path, std::string* error, std::string* non_finite) {
  cv::Mat image = decode_samples(path, error);
  if (const std::string where = first_non_finite(image); !where.empty() && non_finite->empty())
    *non_finite = path + ": holds NaN or infinite values (the first at " + where + ")";
  return image;
}

LoadedPair load_pair(const SourcePlan& plan, const PairJob& job, const PrepareOptions& o, const Channels& channels,
                     std::uint64_t pair_seed) {
  LoadedPair pair;
  try {
    if (plan.kind == SourceKind::aligned) {
      cv::Mat ab = load_one(job.path_a, &pair.error, &pair.non_finite);
      if (!pair.error.empty()) return pair;
      if (ab.cols < 2) {
        pair.error = "too narrow to hold A|B side by side";
        return pair;
      }
      const int half = ab.cols / 2;
      pair.a = ab(cv::Rect(0, 0, half, ab.rows)).clone();
      pair.b = ab(cv::Rect(half, 0, half, ab.rows)).clone();
    } else if (plan.kind == SourceKind::paired || plan.kind == SourceKind::unpaired) {
      // unpaired: the split matched by name (--paired-val); the others go to load_single
      pair.a = load_one(job.path_a, &pair.error, &pair.non_finite);
      if (!pair.error.empty()) return pair;
      pair.b = load_one(job.path_b, &pair.error, &pair.non_finite);
      if (!pair.error.empty()) {
        pair.error += " (B: " + job.path_b + ")";
        return pair;
      }
    } else {
      if (plan.idx) {
        const auto& idx = *plan.idx;
        const size_t offset = static_cast<size_t>(job.idx_index * idx.rows * idx.cols);
        pair.b = cv::Mat(static_cast<int>(idx.rows), static_cast<int>(idx.cols), CV_8UC1,
                         const_cast<std::uint8_t*>(idx.pixels.data() + offset))
                     .clone();
      } else {
        pair.b = load_one(job.path_a, &pair.error, &pair.non_finite);
        if (!pair.error.empty()) return pair;
      }
    }
    if (o.size > 0) {
      pair.b = resize_center_crop(pair.b, o.size);
      if (!pair.a.empty()) pair.a = resize_center_crop(pair.a, o.size);
    }
    pair.b = fit_channels(pair.b, channels.b, channels.given_b);
    if (plan.kind == SourceKind::images) {
      const bool eight_bit_only =
          o.derive == DeriveMode::edges || o.derive == DeriveMode::noise || o.derive == DeriveMode::mask;
      if (pair.b.depth() != CV_8U && eight_bit_only) {
        pair.error = "--derive " + to_string(o.derive) + " works on 8-bit images; this one is " +
                     to_string(*sample_type_of(pair.b.depth())) + " (gray, blur and downsample keep any depth)";
        return pair;
      }
      const bool multiband = pair.b.channels() != 1 && pair.b.channels() != 3;
      if (multiband && o.derive == DeriveMode::gray) {
        pair.error = "--derive gray needs a grey or colour image; this one has " + std::to_string(pair.b.channels()) +
                     " channels";
        return pair;
      }
      pair.a = derive(pair.b, o.derive, o.derive_params, pair_seed);
      pair.a = fit_channels(pair.a, channels.a, channels.given_a || pair.b.depth() == CV_8U);
    } else {
      pair.a = fit_channels(pair.a, channels.a, channels.given_a);
    }
    if (pair.a.size() != pair.b.size())
      pair.error = "A is " + std::to_string(pair.a.cols) + "x" + std::to_string(pair.a.rows) + " but B is " +
                   std::to_string(pair.b.cols) + "x" + std::to_string(pair.b.rows) + " (use --size)";
    if (!pair.a.isContinuous()) pair.a = pair.a.clone();
    if (!pair.b.isContinuous()) pair.b = pair.b.clone();
  } catch (const cv::Exception& e) {
    pair.error = "OpenCV: " + e.err;  // its description, not the whole report with source paths
  } catch (const std::bad_alloc&) {
    pair.error = "too large for the memory left";  // a worker thread must not die of it
  }
  return pair;
}

}  // namespace

// One image of an unpaired split's domain, in `a`.
LoadedPair load_single(const PairJob& job, const PrepareOptions& o, int channels, bool given) {
  LoadedPair image;
  try {
    image.a = load_one(job.path_a, &image.error, &image.non_finite);
    if (!image.error.empty()) return image;
    if (o.size > 0) image.a = resize_center_crop(image.a, o.size);
    image.a = fit_channels(image.a, channels, given);
    if (!image.a.isContinuous()) image.a = image.a.clone();
  } catch (const cv::Exception& e) {
    image.error = "OpenCV: " + e.err;
  } catch (const std::bad_alloc&) {
    image.error = "too large for the memory left";
  }
  return image;
}

// Loads jobs [first, last) on o.threads threads: `domain` set, the images of that domain of an
// unpaired split (load_single); otherwise pairs (load_pair).
std::vector<LoadedPair> load_block(const SourcePlan& plan, const std::vector<PairJob>& jobs, size_t first, size_t last,
                                   const PrepareOptions& o, const Channels& channels, std::uint64_t split_seed,
                                   std::optional<format::Domain> domain) {
  std::vector<LoadedPair> out(last - first);
  std::atomic<size_t> next{first};
  auto work = [&] {
    // A stop request leaves the rest of the block undone (the caller throws before writing it):
    // a block of large images can take minutes to decode.
    for (size_t i = next++; i < last && !interrupt_requested(); i = next++)
      out[i - first] = domain ? (*domain == format::Domain::A ? load_single(jobs[i], o, channels.a, channels.given_a)
                                                              : load_single(jobs[i], o, channels.b, channels.given_b))
                              : load_pair(plan, jobs[i], o, channels, mix_seed(split_seed, i));
  };
  const int n_threads = std::max(1, std::min<int>(o.threads, static_cast<int>(last - first)));
  std::vector<std::thread> workers;
  for (int t = 1; t < n_threads; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  return out;
}

}  // namespace pix2pix::data
