// `pix2pix prepare`: images in, one pix2pix-h5 file out, written under a temporary name and
// renamed only when complete.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pix2pix/common/progress.hpp"
#include "pix2pix/data/image_ops.hpp"
#include "pix2pix/data/image_sources.hpp"
#include "pix2pix/data/sample_census.hpp"

namespace pix2pix::data {

struct PrepareOptions {
  SourceRequest source;
  bool derive_enabled = false;  // images sources need a derive mode
  DeriveMode derive = DeriveMode::edges;
  DeriveParams derive_params;
  int size = 0;        // 0: keep the source size (all images must agree)
  int channels_a = 0;  // 0: automatic (see docs/data-format.md)
  int channels_b = 0;
  RangeRequest range_a, range_b;  // --range-a/-b: each domain's stored value range
  double val_fraction = 0.1;
  std::uint64_t seed = 0;
  int threads = 1;
  int compression = 0;
  double max_bad = 0.01;                  // fraction of unusable inputs tolerated
  std::optional<ProgressStyle> progress;  // --progress (unset: auto)
  std::string out;
  bool overwrite = false;
  std::string created_by;  // provenance stored in the file
};

struct SplitSummary {
  std::int64_t pairs = 0;     // pairs written, or A images of an unpaired split
  std::int64_t images_b = 0;  // unpaired: B images written
  bool paired = true;
};

struct PrepareSummary {
  std::map<std::string, SplitSummary> splits;
  std::vector<std::pair<std::string, std::string>> skipped;  // (input, reason)
  std::vector<std::string> unmatched;
  std::vector<std::string> ignored;
  std::int64_t height = 0, width = 0, channels_a = 0, channels_b = 0;
  DomainSamples samples_a, samples_b;  // each domain's sample type and stored range
  std::string describe_a, describe_b;  // DomainCensus::describe: type, channels, range and how it was chosen
  std::int64_t file_bytes = 0;
  double seconds = 0;
  std::int64_t pairs() const;   // of every split (A images of unpaired ones)
  std::int64_t images() const;  // every image written, A and B
};

// Runs the whole conversion. Throws Error on bad input; the temporary file is removed on any
// error or interruption, and an existing output is never touched unless `overwrite`.
PrepareSummary run_prepare(const PrepareOptions& options);

// Human-readable report of a finished run.
std::string format_summary(const PrepareSummary& summary, const std::string& out);

}  // namespace pix2pix::data
