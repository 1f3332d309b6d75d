// The options of FID and KID: the feature network (--features and how images are fed to it) and
// KID's subsets; for evaluate also the real-feature cache and --dump-features. Declared once for
// evaluate (no prefix) and train's validation (prefix "val-": --val-features, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/metrics/feature_network.hpp"

namespace pix2pix::cli {

struct FeatureRun {
  metrics::FeatureOptions network;
  std::int64_t kid_subsets = 100, kid_subset_size = 1000;
  std::string cache_dir;  // evaluate: "" : no cache (--features-cache none, or no home folder)
  std::string dump_dir;   // evaluate: --dump-features ("": none)
};

// The options, bound to their fields. `prefix` "": evaluate's (with --features-cache and
// --dump-features); "val-": train's validation.
class FeatureCommandLine {
 public:
  explicit FeatureCommandLine(const std::string& prefix = "");
  FeatureCommandLine(const FeatureCommandLine&) = delete;
  FeatureCommandLine& operator=(const FeatureCommandLine&) = delete;

  const po::options_description& description() const { return group_.description(); }
  // After parsing: nullopt without --<prefix>features (UsageError naming any other of these
  // options set without it).
  std::optional<FeatureRun> run(const po::variables_map& vm) const;

 private:
  FeatureRun given_;
  std::string cache_;  // --features-cache as given
  OptionGroup group_;
  bool evaluate_;  // evaluate's options, not train's
};

}  // namespace pix2pix::cli
