// prepare's decoding workers: one source pair (or one image of an unpaired domain) decoded,
// resized, derived and given its domain's channels, on o.threads threads a block at a time.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/data/format.hpp"
#include "pix2pix/data/image_sources.hpp"
#include "pix2pix/data/prepare.hpp"

namespace pix2pix::data {

struct LoadedPair {
  cv::Mat a, b;
  std::string error;  // non-empty: the pair is skipped for this reason
  std::string
      non_finite;  // "FILE: holds NaN ... (the first at row, column, band)" of a source as read: prepare refuses
};

// Note [channels of deep and multi-band images]
// 8-bit grey and colour images are converted to each domain's channel count (3 unless the source
// is IDX or --channels says otherwise), as they always were. 16-bit, float and multi-band images
// keep their channels unless --channels-X names a count: a thermal frame is one band, and turning
// it into three equal ones would only triple the data. Either way a domain holds one channel
// count (DomainCensus says which file differs).
struct Channels {
  int a = 3, b = 3;                       // what 8-bit grey and colour images become
  bool given_a = false, given_b = false;  // --channels-a/-b (or --channels): every image becomes that
};

// The channels of each domain from the options and the source (IDX: grey); UsageError for a count
// the format does not allow.
Channels resolve_channels(const PrepareOptions& o, const SourcePlan& plan);

// One image of an unpaired split's domain, in `a` (`channels`, `given`: that domain's).
LoadedPair load_single(const PairJob& job, const PrepareOptions& o, int channels, bool given);

// Loads jobs [first, last) on o.threads threads: `domain` set, the images of that domain of an
// unpaired split (load_single); otherwise pairs. In job order, whatever the threads.
std::vector<LoadedPair> load_block(const SourcePlan& plan, const std::vector<PairJob>& jobs, size_t first, size_t last,
                                   const PrepareOptions& o, const Channels& channels, std::uint64_t split_seed,
                                   std::optional<format::Domain> domain);

}  // namespace pix2pix::data
