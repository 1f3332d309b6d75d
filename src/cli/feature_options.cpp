#include "pix2pix/cli/feature_options.hpp"

#include <vector>

#include "pix2pix/infer/feature_cache.hpp"

namespace pix2pix::cli {

FeatureCommandLine::FeatureCommandLine(const std::string& prefix)
    : group_(prefix.empty() ? "FID and KID (docs/deploy.md, \"FID and KID\")"
                            : "FID and KID at each validation (docs/training.md, \"FID and KID\")"),
      evaluate_(prefix.empty()) {
  const bool evaluate = evaluate_;
  // Train's: what validation reports besides PSNR. With --es-metric fid or kid the feature network
  // is what early stopping watches, and the Trainer refuses a change of it (run_checkpoints.cpp).
  const auto role = [&](auto declared) {
    if (!evaluate) declared.how_the_job_runs();
  };
  given_.network.option = "--" + prefix + "features";
  role(group_
           .optional_text(prefix + "features", given_.network.file,
                          evaluate ? "also FID and KID with this feature network: a TorchScript module mapping [N, C, "
                                     "H, W] to [N, D] (e.g. clean-fid's inception-2015-12-05.pt), or a "
                                     "train-classifier file (its penultimate layer)"
                                   : "the feature network of --val-metrics fid,kid (as evaluate's --features: "
                                     "TorchScript or a train-classifier file); alone it adds both")
           .value_name("FILE.pt")
           .input_file());
  role(group_.choice(
      prefix + "features-input", given_.network.input, "auto", metrics::parse_feature_input,
      "the range the network takes: signed [-1, 1] | unit [0, 1] | uint8 [0, 255] | auto (uint8 for a module with "
      "return_features, [-1, 1] for a classifier; otherwise say)"));
  role(group_.count(prefix + "features-channels", given_.network.channels, 0, 64,
                    "channels the network takes (0: its first convolution's); grey is repeated, colour averaged to "
                    "one"));
  role(group_.count(prefix + "features-size", given_.network.size, 0, 4096,
                    "resize images to SIZE x SIZE (bilinear) before the network (0: as they are)"));
  role(group_.count(prefix + "kid-subsets", given_.kid_subsets, 1, 100000, "KID: subsets averaged"));
  role(group_.count(prefix + "kid-subset-size", given_.kid_subset_size, 2, 1000000,
                    "KID: images per subset (at most the images compared)"));
  if (evaluate) {
    group_
        .text("features-cache", cache_,
              "where the real images' features are kept between evaluations (default "
              "$XDG_CACHE_HOME/pix2pix/features or ~/.cache/pix2pix/features; none: not kept)")
        .value_name("DIR")
        .rank_local();
    group_
        .optional_text("dump-features", given_.dump_dir,
                       "also write DIR/real.npy and DIR/generated.npy (N x D float32, row i of image i)")
        .value_name("DIR")
        .rank_local();
  }
}

std::optional<FeatureRun> FeatureCommandLine::run(const po::variables_map& vm) const {
  if (given_.network.file.empty()) {
    for (const std::string& option : options_set(vm, description()))
      throw UsageError("--" + option + " needs " + given_.network.option + " FILE.pt");
    return std::nullopt;
  }
  FeatureRun run = given_;
  if (evaluate_) run.cache_dir = cache_ == "none" ? "" : cache_.empty() ? infer::default_feature_cache_dir() : cache_;
  return run;
}

}  // namespace pix2pix::cli
