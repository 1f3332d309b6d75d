// `pix2pix prepare`: option declarations → PrepareOptions → run_prepare → summary.
#include <iostream>

#include "pix2pix/build_info.hpp"
#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/options.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/prepare.hpp"

namespace pix2pix::cli {

int run_prepare(int argc, char** argv) {
  const CommandSpec spec{
      "prepare",
      "pix2pix prepare (--aligned DIR | --paired DIR_A DIR_B | --images SRC --derive MODE |\n"
      "                 --unpaired DIR_A DIR_B | --cyclegan-layout DIR) --out FILE [options]",
      "Converts images into one pix2pix-h5 file (docs/data-format.md). SRC is a folder or idx:PATH for\n"
      "MNIST-format IDX files (.gz too). Folders with train/val/test sub-folders keep those splits;\n"
      "otherwise a --val-fraction of the pairs becomes the validation split. --unpaired and\n"
      "--cyclegan-layout write an unpaired file (A and B not pairs, in any numbers) for --model cyclegan."};
  po::options_description source("Source (exactly one)");
  source.add_options()("aligned", po::value<std::string>()->value_name("DIR"),
                       "A|B side-by-side images (public pix2pix layout)")(
      "paired", po::value<std::vector<std::string>>()->multitoken()->value_name("DIR_A DIR_B"),
      "two folders, pairs matched by file name (extension ignored)")(
      "images", po::value<std::string>()->value_name("SRC"), "single-domain images: B is the image, A derived")(
      "unpaired", po::value<std::vector<std::string>>()->multitoken()->value_name("DIR_A DIR_B"),
      "two folders of unpaired images (each with the same train/val/test sub-folders, or all train)")(
      "cyclegan-layout", po::value<std::string>()->value_name("DIR"),
      "unpaired images in the reference CycleGAN layout: DIR/trainA, trainB, testA, testB (valA, valB optional)")(
      "paired-val", po::bool_switch(),
      "with --unpaired/--cyclegan-layout: the val folders hold the same scenes in both domains, matched by file "
      "name (validation then scores G(A) against B)")("derive", po::value<std::string>()->value_name("MODE"),
                                                      "with --images: edges|gray|blur|downsample|noise|mask")(
      "test", po::value<std::string>()->value_name("SRC"),
      "with --aligned or --images: a second source of the same kind (folder, or idx:PATH) that becomes the "
      "test split");
  po::options_description shape("Output");
  shape.add_options()("out,o", po::value<std::string>()->value_name("FILE"),
                      "output .h5 file (written to a temporary name, then renamed)")("overwrite", po::bool_switch(),
                                                                                     "replace an existing output file")(
      "size", po::value<int>()->default_value(0),
      "resize to SxS (shorter side to S, centre crop); 0 keeps the source size")(
      "channels", po::value<int>()->default_value(0),
      "channels of A and B: 1 or 3 (0: automatic: 8-bit images become 3, or 1 from IDX; 16-bit, float and "
      "multi-band images keep theirs)")("channels-a", po::value<int>()->default_value(0),
                                        "channels of A (overrides --channels)")(
      "channels-b", po::value<int>()->default_value(0), "channels of B (overrides --channels)")(
      "range-a", po::value<std::string>()->value_name("LO,HI|auto"),
      "the stored values of A that map to -1 and 1 (default: the type's, 0,255 or 0,65535; float data: auto); "
      "auto measures the data")("range-b", po::value<std::string>()->value_name("LO,HI|auto"), "the same for B")(
      "val-fraction", po::value<double>()->default_value(0.1),
      "share of train moved to val when the source has no val split")(
      "seed", po::value<unsigned long>()->default_value(0), "seed of the validation split and the random derivations")(
      "limit", po::value<long>()->default_value(-1), "at most N pairs from each source split (-1: all)")(
      "labels", po::bool_switch(), "store class labels (IDX label file, or sub-folder names)")(
      "compression", po::value<int>()->default_value(0), "deflate level 0-9 (0: none)")(
      "threads", po::value<int>()->default_value(1), "decode/resize threads")(
      "max-bad", po::value<double>()->default_value(0.01), "fail when more than this share of inputs is unusable")(
      "progress", po::value<std::string>()->default_value("auto"),
      "auto | bar | lines | none (auto: a bar on a terminal, a line every 10 s otherwise)");
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
  require_exactly_one(vm, {"aligned", "paired", "images", "unpaired", "cyclegan-layout"});
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
  } else if (vm.count("unpaired")) {
    const auto dirs = vm["unpaired"].as<std::vector<std::string>>();
    if (dirs.size() != 2) throw UsageError("--unpaired takes two folders: DIR_A DIR_B");
    o.source.kind = data::SourceKind::unpaired;
    o.source.dir = dirs[0];
    o.source.dir_b = dirs[1];
  } else if (vm.count("cyclegan-layout")) {
    o.source.kind = data::SourceKind::unpaired;
    o.source.cyclegan_layout = true;
    o.source.dir = vm["cyclegan-layout"].as<std::string>();
  } else {
    o.source.kind = data::SourceKind::images;
    o.source.dir = vm["images"].as<std::string>();
  }
  o.source.paired_val = vm["paired-val"].as<bool>();
  if (o.source.paired_val && o.source.kind != data::SourceKind::unpaired)
    throw UsageError(
        "--paired-val goes with --unpaired or --cyclegan-layout (the other sources are paired throughout)");
  if (vm.count("derive")) {
    if (o.source.kind != data::SourceKind::images) throw UsageError("--derive needs --images");
    o.derive_enabled = true;
    o.derive = data::parse_derive_mode(vm["derive"].as<std::string>());
  }
  if (vm.count("test")) {
    if (o.source.kind == data::SourceKind::paired || o.source.kind == data::SourceKind::unpaired)
      throw UsageError(
          "--test goes with --aligned or --images (--paired and --unpaired folders take a test sub-folder, the "
          "CycleGAN layout testA and testB)");
    o.source.test_dir = vm["test"].as<std::string>();
  }
  o.source.labels = vm["labels"].as<bool>();
  o.source.limit = integer_option(vm, "limit", -1);
  o.size = static_cast<int>(integer_option(vm, "size", 0, data::format::kMaxSide));
  const long channels = integer_option(vm, "channels", 0, 3);
  const long channels_a = integer_option(vm, "channels-a", 0, 3), channels_b = integer_option(vm, "channels-b", 0, 3);
  for (long c : {channels, channels_a, channels_b})
    if (c == 2) throw UsageError("--channels, --channels-a and --channels-b must be 1 or 3 (0: automatic), got 2");
  o.channels_a = static_cast<int>(channels_a != 0 ? channels_a : channels);
  o.channels_b = static_cast<int>(channels_b != 0 ? channels_b : channels);
  if (vm.count("range-a")) o.range_a = data::parse_range_request(vm["range-a"].as<std::string>(), "--range-a");
  if (vm.count("range-b")) o.range_b = data::parse_range_request(vm["range-b"].as<std::string>(), "--range-b");
  o.val_fraction = real_option(vm, "val-fraction", Range::right_open(0, 1));
  o.seed = vm["seed"].as<unsigned long>();
  o.threads = static_cast<int>(integer_option(vm, "threads", 1, 1024));
  o.compression = static_cast<int>(integer_option(vm, "compression", 0, 9));
  o.max_bad = real_option(vm, "max-bad", Range::closed(0, 1));
  o.progress = parse_progress_style(vm["progress"].as<std::string>());
  o.out = vm["out"].as<std::string>();
  o.overwrite = vm["overwrite"].as<bool>();
  o.derive_params.canny_low = real_option(vm, "canny-low", Range::at_least(0));
  o.derive_params.canny_high = real_option(vm, "canny-high", Range::at_least(o.derive_params.canny_low));
  o.derive_params.blur_sigma = real_option(vm, "blur-sigma", Range::left_open(0, 1000));
  o.derive_params.downsample_factor = static_cast<int>(integer_option(vm, "downsample-factor", 1, 1024));
  o.derive_params.noise_sigma = real_option(vm, "noise-sigma", Range::closed(0, 1000));
  o.derive_params.mask_fraction = real_option(vm, "mask-fraction", Range::left_open(0, 1));
  if (vm.count("config")) refuse_output_among_inputs("--out", o.out, {vm["config"].as<std::string>()});
  o.created_by = std::string("pix2pix-mpi ") + build_info::kVersion + " prepare\n" + effective_options(vm, options);

  install_interrupt_handlers();
  const data::PrepareSummary summary = data::run_prepare(o);
  std::cout << data::format_summary(summary, o.out);
  return 0;
}

}  // namespace pix2pix::cli
