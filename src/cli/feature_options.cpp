#include "pix2pix/cli/feature_options.hpp"

#include <vector>

#include "pix2pix/infer/feature_cache.hpp"

namespace pix2pix::cli {
namespace {

std::string named(const std::string& prefix, const char* name) {
  return prefix + name;
}

}  // namespace

po::options_description feature_option_description(const std::string& prefix) {
  const bool evaluate = prefix.empty();
  po::options_description o(evaluate ? "FID and KID (docs/deploy.md, \"FID and KID\")"
                                     : "FID and KID at each validation (docs/training.md, \"FID and KID\")");
  o.add_options()(named(prefix, "features").c_str(), po::value<std::string>()->value_name("FILE.pt"),
                  evaluate ? "also FID and KID with this feature network: a TorchScript module mapping [N, C, H, W] to "
                             "[N, D] (e.g. clean-fid's inception-2015-12-05.pt), or a train-classifier file (its "
                             "penultimate layer)"
                           : "the feature network of --val-metrics fid,kid (as evaluate's --features: TorchScript or a "
                             "train-classifier file); alone it adds both")(
      named(prefix, "features-input").c_str(), po::value<std::string>()->default_value("auto"),
      "the range the network takes: signed [-1, 1] | unit [0, 1] | uint8 [0, 255] | auto (uint8 for a module with "
      "return_features, [-1, 1] for a classifier; otherwise say)")(
      named(prefix, "features-channels").c_str(), po::value<long>()->default_value(0),
      "channels the network takes (0: its first convolution's); grey is repeated, colour averaged to one")(
      named(prefix, "features-size").c_str(), po::value<long>()->default_value(0),
      "resize images to SIZE x SIZE (bilinear) before the network (0: as they are)")(
      named(prefix, "kid-subsets").c_str(), po::value<long>()->default_value(100), "KID: subsets averaged")(
      named(prefix, "kid-subset-size").c_str(), po::value<long>()->default_value(1000),
      "KID: images per subset (at most the images compared)");
  if (evaluate)
    o.add_options()("features-cache", po::value<std::string>()->value_name("DIR")->default_value(""),
                    "where the real images' features are kept between evaluations (default "
                    "$XDG_CACHE_HOME/pix2pix/features or ~/.cache/pix2pix/features; none: not kept)")(
        "dump-features", po::value<std::string>()->value_name("DIR"),
        "also write DIR/real.npy and DIR/generated.npy (N x D float32, row i of image i)");
  return o;
}

std::optional<FeatureRun> feature_run_from(const po::variables_map& vm, const std::string& prefix) {
  const std::string file = named(prefix, "features");
  if (!vm.count(file)) {
    // Set to anything but its default (a run's config.cfg lists every option at its value, so
    // "given" is not enough).
    const auto refuse = [&](const char* option) {
      throw UsageError("--" + named(prefix, option) + " needs --" + file + " FILE.pt");
    };
    const auto text = [&](const char* option) { return vm[named(prefix, option)].as<std::string>(); };
    const auto number = [&](const char* option) { return vm[named(prefix, option)].as<long>(); };
    if (text("features-input") != "auto") refuse("features-input");
    if (number("features-channels") != 0) refuse("features-channels");
    if (number("features-size") != 0) refuse("features-size");
    if (number("kid-subsets") != 100) refuse("kid-subsets");
    if (number("kid-subset-size") != 1000) refuse("kid-subset-size");
    if (prefix.empty() && !text("features-cache").empty()) refuse("features-cache");
    if (prefix.empty() && vm.count("dump-features")) refuse("dump-features");
    return std::nullopt;
  }
  FeatureRun run;
  run.network.file = vm[file].as<std::string>();
  run.network.option = "--" + file;
  run.network.input = metrics::parse_feature_input(vm[named(prefix, "features-input")].as<std::string>(),
                                                   run.network.option + "-input");
  run.network.channels = integer_option(vm, named(prefix, "features-channels").c_str(), 0, 64);
  run.network.size = integer_option(vm, named(prefix, "features-size").c_str(), 0, 4096);
  run.kid_subsets = integer_option(vm, named(prefix, "kid-subsets").c_str(), 1, 100000);
  run.kid_subset_size = integer_option(vm, named(prefix, "kid-subset-size").c_str(), 2, 1000000);
  if (prefix.empty()) {
    const std::string cache = vm["features-cache"].as<std::string>();
    run.cache_dir = cache == "none" ? "" : cache.empty() ? infer::default_feature_cache_dir() : cache;
    if (vm.count("dump-features")) run.dump_dir = vm["dump-features"].as<std::string>();
  }
  return run;
}

}  // namespace pix2pix::cli
