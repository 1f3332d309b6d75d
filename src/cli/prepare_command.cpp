// `pix2pix prepare`: option declarations → PrepareOptions → run_prepare → summary.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/build_info.hpp"
#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/option_group.hpp"
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
  data::PrepareOptions o;
  std::string aligned, images, cyclegan_layout;
  std::vector<std::string> paired, unpaired;
  std::optional<data::DeriveMode> derive;
  int channels = 0, channels_a = 0, channels_b = 0;
  OptionGroup source("Source (exactly one)");
  source.optional_text("aligned", aligned, "A|B side-by-side images (public pix2pix layout)").value_name("DIR");
  source.list("paired", paired, "", "two folders, pairs matched by file name (extension ignored)")
      .value_name("DIR_A DIR_B");
  source.optional_text("images", images, "single-domain images: B is the image, A derived").value_name("SRC");
  source
      .list("unpaired", unpaired, "",
            "two folders of unpaired images (each with the same train/val/test sub-folders, or all train)")
      .value_name("DIR_A DIR_B");
  source
      .optional_text(
          "cyclegan-layout", cyclegan_layout,
          "unpaired images in the reference CycleGAN layout: DIR/trainA, trainB, testA, testB (valA, valB optional)")
      .value_name("DIR");
  source.flag("paired-val", o.source.paired_val,
              "with --unpaired/--cyclegan-layout: the val folders hold the same scenes in both domains, matched by "
              "file name (validation then scores G(A) against B)");
  source.parsed("derive", derive, data::parse_derive_mode, "with --images: edges|gray|blur|downsample|noise|mask")
      .value_name("MODE");
  source
      .optional_text("test", o.source.test_dir,
                     "with --aligned or --images: a second source of the same kind (folder, or idx:PATH) that "
                     "becomes the test split")
      .value_name("SRC");
  OptionGroup shape("Output");
  shape.optional_text("out,o", o.out, "output .h5 file (written to a temporary name, then renamed)").value_name("FILE");
  shape.flag("overwrite", o.overwrite, "replace an existing output file");
  shape.count("size", o.size, 0, data::format::kMaxSide,
              "resize to SxS (shorter side to S, centre crop); 0 keeps the source size");
  shape.count("channels", channels, 0, 3,
              "channels of A and B: 1 or 3 (0: automatic: 8-bit images become 3, or 1 from IDX; 16-bit, float and "
              "multi-band images keep theirs)");
  shape.count("channels-a", channels_a, 0, 3, "channels of A (overrides --channels)");
  shape.count("channels-b", channels_b, 0, 3, "channels of B (overrides --channels)");
  shape
      .parsed("range-a", o.range_a, data::parse_range_request,
              "the stored values of A that map to -1 and 1 (default: the type's, 0,255 or 0,65535; float data: "
              "auto); auto measures the data")
      .value_name("LO,HI|auto");
  shape.parsed("range-b", o.range_b, data::parse_range_request, "the same for B").value_name("LO,HI|auto");
  shape.real("val-fraction", o.val_fraction, Range::right_open(0, 1),
             "share of train moved to val when the source has no val split");
  shape.value("seed", o.seed, "seed of the validation split and the random derivations");
  shape.count("limit", o.source.limit, -1, kNoLimit, "at most N pairs from each source split (-1: all)");
  shape.flag("labels", o.source.labels, "store class labels (IDX label file, or sub-folder names)");
  shape.count("compression", o.compression, 0, 9, "deflate level 0-9 (0: none)");
  shape.count("threads", o.threads, 1, 1024, "decode/resize threads");
  shape.real("max-bad", o.max_bad, Range::closed(0, 1), "fail when more than this share of inputs is unusable");
  shape.choice("progress", o.progress, "auto", parse_progress_style,
               "auto | bar | lines | none (auto: a bar on a terminal, a line every 10 s otherwise)");
  OptionGroup derivation("Derivation parameters");
  data::DeriveParams& d = o.derive_params;
  derivation.real("canny-low", d.canny_low, Range::at_least(0), "edges: lower Canny threshold");
  derivation.real("canny-high", d.canny_high, Range::at_least(0), "edges: upper Canny threshold");
  derivation.real("blur-sigma", d.blur_sigma, Range::left_open(0, 1000), "blur: Gaussian sigma (pixels)");
  derivation.count("downsample-factor", d.downsample_factor, 1, 1024, "downsample: shrink factor");
  derivation.real("noise-sigma", d.noise_sigma, Range::closed(0, 1000), "noise: Gaussian sigma (0-255 scale)");
  derivation.real("mask-fraction", d.mask_fraction, Range::left_open(0, 1), "mask: hidden area fraction");
  po::options_description options;
  options.add(source.description()).add(shape.description()).add(derivation.description());

  const auto parsed = parse_command(spec, options, po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  require_exactly_one(vm, {"aligned", "paired", "images", "unpaired", "cyclegan-layout"});
  if (o.out.empty()) throw UsageError("--out FILE is required");

  if (!aligned.empty()) {
    o.source.kind = data::SourceKind::aligned;
    o.source.dir = aligned;
  } else if (!paired.empty()) {
    if (paired.size() != 2) throw UsageError("--paired takes two folders: DIR_A DIR_B");
    o.source.kind = data::SourceKind::paired;
    o.source.dir = paired[0];
    o.source.dir_b = paired[1];
  } else if (!unpaired.empty()) {
    if (unpaired.size() != 2) throw UsageError("--unpaired takes two folders: DIR_A DIR_B");
    o.source.kind = data::SourceKind::unpaired;
    o.source.dir = unpaired[0];
    o.source.dir_b = unpaired[1];
  } else if (!cyclegan_layout.empty()) {
    o.source.kind = data::SourceKind::unpaired;
    o.source.cyclegan_layout = true;
    o.source.dir = cyclegan_layout;
  } else {
    o.source.kind = data::SourceKind::images;
    o.source.dir = images;
  }
  if (o.source.paired_val && o.source.kind != data::SourceKind::unpaired)
    throw UsageError(
        "--paired-val goes with --unpaired or --cyclegan-layout (the other sources are paired throughout)");
  if (derive) {
    if (o.source.kind != data::SourceKind::images) throw UsageError("--derive needs --images");
    o.derive_enabled = true;
    o.derive = *derive;
  }
  if (!o.source.test_dir.empty() &&
      (o.source.kind == data::SourceKind::paired || o.source.kind == data::SourceKind::unpaired))
    throw UsageError(
        "--test goes with --aligned or --images (--paired and --unpaired folders take a test sub-folder, the "
        "CycleGAN layout testA and testB)");
  for (int c : {channels, channels_a, channels_b})
    if (c == 2) throw UsageError("--channels, --channels-a and --channels-b must be 1 or 3 (0: automatic), got 2");
  o.channels_a = channels_a != 0 ? channels_a : channels;
  o.channels_b = channels_b != 0 ? channels_b : channels;
  if (d.canny_high < d.canny_low) check_option_value("canny-high", d.canny_high, Range::at_least(d.canny_low));
  if (!config_file(vm).empty()) refuse_output_among_inputs("--out", o.out, {config_file(vm)});
  o.created_by = std::string("pix2pix-mpi ") + build_info::kVersion + " prepare\n" + effective_options(vm, options);

  install_interrupt_handlers();
  const data::PrepareSummary summary = data::run_prepare(o);
  std::cout << data::format_summary(summary, o.out);
  return 0;
}

}  // namespace pix2pix::cli
