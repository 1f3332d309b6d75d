// The options of FID and KID: the feature network (--features and how images are fed to it) and
// KID's subsets; for evaluate also the real-feature cache and --dump-features. Declared once for
// evaluate (no prefix) and train's validation (prefix "val-": --val-features, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/cli/options.hpp"
#include "pix2pix/metrics/feature_network.hpp"

namespace pix2pix::cli {

struct FeatureRun {
  metrics::FeatureOptions network;
  std::int64_t kid_subsets = 100, kid_subset_size = 1000;
  std::string cache_dir;  // evaluate: "" : no cache (--features-cache none, or no home folder)
  std::string dump_dir;   // evaluate: --dump-features ("": none)
};

// `prefix` "": evaluate's options (with --features-cache and --dump-features); "val-": train's.
po::options_description feature_option_description(const std::string& prefix = "");

// nullopt without --<prefix>features; UsageError naming the option for a feature option without
// it, or a value out of range.
std::optional<FeatureRun> feature_run_from(const po::variables_map& vm, const std::string& prefix = "");

}  // namespace pix2pix::cli
