// `pix2pix prepare`: option declarations → PrepareOptions → run_prepare → summary.
#include <iostream>

#include "pix2pix/build_info.hpp"
#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/options.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/data/prepare.hpp"

namespace pix2pix::cli {

int run_prepare(int argc, char** argv) {
  const CommandSpec spec{
      "prepare",
      "pix2pix prepare (--aligned DIR | --paired DIR_A DIR_B | --images SRC --derive MODE) --out FILE [options]",
      "Converts images into one pix2pix-h5 file (docs/data-format.md). SRC is a folder or idx:PATH for\n"
      "MNIST-format IDX files (.gz too). Folders with train/val/test sub-folders keep those splits;\n"
      "otherwise a --val-fraction of the pairs becomes the validation split."};
  po::options_description source("Source (exactly one)");
  source.add_options()("aligned", po::value<std::string>()->value_name("DIR"),
                       "A|B side-by-side images (public pix2pix layout)")(
      "paired", po::value<std::vector<std::string>>()->multitoken()->value_name("DIR_A DIR_B"),
      "two folders, pairs matched by file name (extension ignored)")(
      "images", po::value<std::string>()->value_name("SRC"), "single-domain images: B is the image, A derived")(
      "derive", po::value<std::string>()->value_name("MODE"), "with --images: edges|gray|blur|downsample|noise|mask");
  po::options_description shape("Output");
  shape.add_options()("out,o", po::value<std::string>()->value_name("FILE"),
                      "output .h5 file (written to a temporary name, then renamed)")("overwrite", po::bool_switch(),
                                                                                     "replace an existing output file")(
      "size", po::value<int>()->default_value(0),
      "resize to SxS (shorter side to S, centre crop); 0 keeps the source size")(
      "channels", po::value<int>()->default_value(0), "channels of A and B: 1 or 3 (0: automatic)")(
      "channels-a", po::value<int>()->default_value(0), "channels of A (overrides --channels)")(
      "channels-b", po::value<int>()->default_value(0), "channels of B (overrides --channels)")(
      "val-fraction", po::value<double>()->default_value(0.1),
      "share of train moved to val when the source has no val split")(
      "seed", po::value<unsigned long>()->default_value(0), "seed of the validation split and the random derivations")(
      "limit", po::value<long>()->default_value(-1), "at most N pairs from each source split (-1: all)")(
      "labels", po::bool_switch(), "store class labels (IDX label file, or sub-folder names)")(
      "compression", po::value<int>()->default_value(0), "deflate level 0-9 (0: none)")(
      "threads", po::value<int>()->default_value(1), "decode/resize threads")(
      "max-bad", po::value<double>()->default_value(0.01), "fail when more than this share of inputs is unusable");
  po::options_description derive("Derivation parameters");
  const data::DeriveParams d;
  derive.add_options()("canny-low", po::value<double>()->default_value(d.canny_low), "edges: lower Canny threshold")(
      "canny-high", po::value<double>()->default_value(d.canny_high), "edges: upper Canny threshold")(
      "blur-sigma", po::value<double>()->default_value(d.blur_sigma), "blur: Gaussian sigma (pixels)")(
      "downsample-factor", po::value<int>()->default_value(d.downsample_factor), "downsample: shrink factor")(
      "noise-sigma", po::value<double>()->default_value(d.noise_sigma), "noise: Gaussian sigma (0-255 scale)")(
      "mask-fraction", po::value<double>()->default_value(d.mask_fraction), "mask: hidden area fraction");
  po::options_description options;
  options.add(source).add(shape).add(derive);

  const auto parsed = parse_command(spec, options, po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  require_exactly_one(vm, {"aligned", "paired", "images"});
  if (!vm.count("out")) throw UsageError("--out FILE is required");

  data::PrepareOptions o;
  if (vm.count("aligned")) {
    o.source.kind = data::SourceKind::aligned;
    o.source.dir = vm["aligned"].as<std::string>();
  } else if (vm.count("paired")) {
    const auto dirs = vm["paired"].as<std::vector<std::string>>();
    if (dirs.size() != 2) throw UsageError("--paired takes two folders: DIR_A DIR_B");
    o.source.kind = data::SourceKind::paired;
    o.source.dir = dirs[0];
    o.source.dir_b = dirs[1];
  } else {
    o.source.kind = data::SourceKind::images;
    o.source.dir = vm["images"].as<std::string>();
  }
  if (vm.count("derive")) {
    if (o.source.kind != data::SourceKind::images) throw UsageError("--derive needs --images");
    o.derive_enabled = true;
    o.derive = data::parse_derive_mode(vm["derive"].as<std::string>());
  }
  o.source.labels = vm["labels"].as<bool>();
  o.source.limit = vm["limit"].as<long>();
  o.size = vm["size"].as<int>();
  const int channels = vm["channels"].as<int>();
  o.channels_a = vm["channels-a"].as<int>() != 0 ? vm["channels-a"].as<int>() : channels;
  o.channels_b = vm["channels-b"].as<int>() != 0 ? vm["channels-b"].as<int>() : channels;
  o.val_fraction = vm["val-fraction"].as<double>();
  o.seed = vm["seed"].as<unsigned long>();
  o.threads = vm["threads"].as<int>();
  o.compression = vm["compression"].as<int>();
  o.max_bad = vm["max-bad"].as<double>();
  o.out = vm["out"].as<std::string>();
  o.overwrite = vm["overwrite"].as<bool>();
  o.derive_params.canny_low = vm["canny-low"].as<double>();
  o.derive_params.canny_high = vm["canny-high"].as<double>();
  o.derive_params.blur_sigma = vm["blur-sigma"].as<double>();
  o.derive_params.downsample_factor = vm["downsample-factor"].as<int>();
  o.derive_params.noise_sigma = vm["noise-sigma"].as<double>();
  o.derive_params.mask_fraction = vm["mask-fraction"].as<double>();
  if (o.source.limit < -1) throw UsageError("--limit must be -1 (all) or a count");
  o.created_by = std::string("pix2pix-mpi ") + build_info::kVersion + " prepare\n" + effective_options(vm, options);

  install_interrupt_handlers();
  const data::PrepareSummary summary = data::run_prepare(o);
  std::cout << data::format_summary(summary, o.out);
  return 0;
}

}  // namespace pix2pix::cli
