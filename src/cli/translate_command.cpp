// `pix2pix translate`: a trained generator applied to image files or a dataset split, one output
// image per input, shared among the ranks of an mpirun/srun job.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/inference_setup.hpp"
#include "pix2pix/cli/rank_agreement.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/infer/evaluation.hpp"
#include "pix2pix/infer/sample_images.hpp"
#include "pix2pix/infer/translator.hpp"

namespace pix2pix::cli {
namespace {

// The options, bound to where their values go (See Note [an option is declared once]).
struct TranslateCommandLine {
  GeneratorRun run;
  infer::TranslateOptions translate;
  std::string input, data, split, format = "auto", resize = "model";
  long long limit = -1;
  double max_bad = 0.01;
  bool overwrite = false;
  long threads = 0;
  po::options_description options;

  TranslateCommandLine() {
    run.batch_size = 8;
    translate.tiles.overlap = 32;
    OptionGroup in("Input (one of --input and --data)");
    in.optional_text("input", input, "images in any format OpenCV reads, found recursively in DIR, or one image")
        .value_name("DIR|FILE");
    in.flag("aligned", translate.aligned,
            "with --input: A|B side-by-side images; the left half is translated (the right one with --direction "
            "BtoA)");
    in.optional_text("data", data, "the A images of a dataset split (the B images with --direction BtoA)")
        .value_name("FILE.h5")
        .input_file();
    in.choice("direction", run.direction, "AtoB", checkpoint::parse_direction,
              "AtoB | BtoA: BtoA runs a CycleGAN run's G_B (from a full checkpoint; a run directory means its "
              "best.pt)");
    in.text("split", split, "with --data: test | val | train (default: test if present, else val)");
    in.count("limit", limit, -1, kNoLimit, "only the first N inputs, in listing order (-1: all)");
    OptionGroup out("Output");
    out.optional_text("output", translate.output_dir,
                      "outputs mirror the inputs' relative names (dataset pairs: their stored names, or the index)")
        .value_name("DIR");
    out.text("format", format,
             "auto | png | jpg | tif | npy (auto: png for 8- and 16-bit grey or colour outputs, tif for float ones, "
             "npy for other channel counts)");
    out.flag("overwrite", overwrite, "replace existing output files");
    out.text("resize", resize,
             "model: to the trained size and back | none: pad by reflection to a multiple of 2^num_downs, crop "
             "back");
    // A tile side OpenCV and an int-indexed image can hold; what memory holds is checked per image.
    out.count("tile", translate.tiles.tile, 0, 1 << 16,
              "translate each image at its own size in T x T tiles (a multiple of the generator's side multiple; "
              "0: whole images, --resize), --batch-size tiles per pass, overlaps blended: for images larger than "
              "memory or the trained size allows")
        .value_name("T");
    out.count("overlap", translate.tiles.overlap, 0, 1 << 16,
              "with --tile: pixels neighbouring tiles share (0 <= O <= T minus the generator's side multiple; by "
              "default 32 or what the tile allows), blended with a raised-cosine ramp")
        .value_name("O");
    out.value("channels", translate.channels, "convert inputs to 1 or 3 channels first (0: as they are)");
    out.real("max-bad", max_bad, Range::closed(0, 1),
             "fail (status 1) when more than this share of inputs cannot be decoded; the others are written");
    options.add(generator_run_options(run).description())
        .add(in.description())
        .add(out.description())
        .add(thread_options(threads).description());
  }
};

void print_summary(const infer::TranslationCounts& counts, std::int64_t total, const InferenceJob& job,
                   const std::string& sizing, int world, double seconds, const std::string& output_dir) {
  const std::string unwritten =
      counts.unwritten > 0 ? ", " + std::to_string(counts.unwritten) + " not written" : std::string();
  std::printf(
      "translated %lld of %lld images (%lld skipped%s) with %s (%s weights, %s mode, %s) on %d rank%s in "
      "%.1f s (%.1f images/s)\n  outputs under %s\n",
      static_cast<long long>(counts.written), static_cast<long long>(total), static_cast<long long>(counts.skipped),
      unwritten.c_str(), job.saved.path.c_str(), checkpoint::weights_name(job.saved).c_str(),
      to_string(job.mode).c_str(), sizing.c_str(), world, world == 1 ? "" : "s", seconds,
      static_cast<double>(counts.written) / std::max(seconds, 1e-9), output_dir.c_str());
  if (!job.kernels.empty()) std::printf("  %s\n", job.kernels.c_str());
}

// Rank 0 checks the outputs; every rank learns the verdict before anything is written. No output
// may be a file the command reads (`read`: the input images, the dataset, the checkpoint, the
// config), --overwrite or not: translating a folder onto itself would replace its images.
std::string claim_outputs(const std::vector<infer::TranslationInput>& inputs, const std::string& output_dir,
                          bool overwrite, const InputFiles& read, dist::Communicator& comm) {
  std::string refusal;
  torch::Tensor refused = torch::zeros({1}, torch::kInt64);
  if (comm.rank() == 0) {
    try {
      for (const auto& input : inputs)
        read.refuse("--output " + output_dir + ": the output",
                    (std::filesystem::path(output_dir) / input.output).string());
      std::error_code ec;
      std::filesystem::create_directories(output_dir, ec);
      if (ec || !std::filesystem::is_directory(output_dir))
        throw Error("--output " + output_dir + ": cannot create the folder" + (ec ? ": " + ec.message() : ""));
      if (!overwrite) infer::refuse_existing_outputs(inputs, output_dir);
    } catch (const UsageError& e) {
      refusal = std::string("2") + e.what();
      refused[0] = 2;
    } catch (const Error& e) {
      refusal = std::string("1") + e.what();
      refused[0] = 1;
    }
  }
  comm.broadcast(refused, 0);
  const std::int64_t status = refused[0].item<std::int64_t>();
  if (status == 0) return "";
  return refusal.empty() ? std::to_string(status) + "refused on rank 0" : refusal;
}

}  // namespace

int run_translate(int argc, char** argv) {
  const CommandSpec spec{
      "translate", "pix2pix translate --checkpoint PATH (--input DIR|FILE | --data FILE.h5) --output DIR [options]",
      "Runs a trained generator on images: every image under --input (or the A images of a dataset split)\n"
      "becomes one image under --output with the same relative name. Inputs are resized to the trained\n"
      "size and back (--resize model) or padded by reflection and cropped back (none), or translated at\n"
      "their own size in overlapping tiles (--tile T --overlap O). Each output is\n"
      "written whole (temporary name, renamed); existing ones are kept unless --overwrite. Under\n"
      "mpirun/srun the ranks share the inputs and write what one process writes.\n"
      "Exit status: 0 done, 1 error (or more than --max-bad undecodable inputs), 2 usage."};
  const TranslateCommandLine command_line;
  const auto parsed = parse_command(spec, command_line.options, po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const std::vector<std::string> set = options_set(vm, command_line.options);
  const auto given = [&](const char* option) { return std::find(set.begin(), set.end(), option) != set.end(); };
  GeneratorRun run = command_line.run;
  require_checkpoint(run);
  infer::TranslateOptions options = command_line.translate;
  if (options.output_dir.empty()) throw UsageError("missing --output");
  require_exactly_one(vm, {"input", "data"});
  if (!command_line.split.empty() && command_line.data.empty()) throw UsageError("--split goes with --data");
  if (options.aligned && command_line.input.empty()) throw UsageError("--aligned goes with --input");
  std::string format = command_line.format;
  if (format != "auto" && format != "png" && format != "jpg" && format != "tif" && format != "npy")
    throw UsageError("--format must be one of auto, png, jpg, tif, npy; got '" + format + "'");
  options.batch_size = run.batch_size;
  options.resize = infer::parse_resize_mode(command_line.resize);
  options.tiles.batch = run.batch_size;
  if (options.tiles.tile > 0 && given("resize"))
    throw UsageError("--tile translates each image at its own size; --resize does not go with it");
  if (options.tiles.tile == 0 && given("overlap")) throw UsageError("--overlap goes with --tile");
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    throw UsageError("--channels must be 0, 1 or 3; got " + std::to_string(options.channels));
  options.b_side = run.direction == checkpoint::Direction::b_to_a;
  options.precision = run.precision;
  options.seed = run.seed;
  options.progress = run.progress;
  const double max_bad = command_line.max_bad;
  const long long limit = command_line.limit;

  dist::MpiSession mpi(&argc, &argv);
  install_interrupt_handlers();
  try {
    const auto start = std::chrono::steady_clock::now();
    InferenceJob job = make_inference_job(run, mpi);
    // See Note [ranks that agree]: the same options, generator file and dataset on every rank.
    AgreedFields agreed = options_to_agree(vm, command_line.options);
    add_file(agreed, "the generator " + job.saved.path, job.saved.path);
    for (const auto& [option, path] : input_files(vm, command_line.options)) add_file(agreed, option, path);
    require_agreement(mpi, agreed);
    settle_threads(command_line.threads, &mpi);
    const auto& g = job.saved.generator->options();
    // The values the generator reads and writes (See docs/data-format.md, "Values beyond 8 bits").
    const checkpoint::TrainedOn& trained = job.saved.trained_on;
    options.input_samples = options.b_side ? trained.samples_b : trained.samples_a;
    options.output_samples = options.b_side ? trained.samples_a : trained.samples_b;
    if (format == "auto")
      format = infer::default_output_format(options.output_samples.type, static_cast<int>(g.out_channels));
    const std::string problem =
        infer::output_format_problem(format, options.output_samples.type, static_cast<int>(g.out_channels));
    if (!problem.empty()) throw UsageError(problem + " (the generator of " + job.saved.path + " writes them)");
    if (options.channels != 0 && options.channels != g.in_channels)
      throw UsageError("--channels " + std::to_string(options.channels) + ", but the generator of " + job.saved.path +
                       " takes " + std::to_string(g.in_channels));
    options.device = job.device;
    options.mode = job.mode;
    options.geometry = {job.saved.trained_on.height, job.saved.trained_on.width, nets::side_multiple(g)};
    if (options.tiles.tile > 0) {
      // The default overlap, on a tile too small for it: as much as the tile allows.
      if (!given("overlap"))
        options.tiles.overlap = std::min(options.tiles.overlap, options.tiles.tile - nets::side_multiple(g));
      const infer::TileOptions fitted = infer::fit_tiles(options.tiles, nets::side_multiple(g));
      if (fitted.overlap != options.tiles.overlap && mpi.rank() == 0)
        std::printf(
            "note: --overlap %lld grows to %lld, so that tiles start a multiple of %lld apart (docs/deploy.md, "
            "translate)\n",
            static_cast<long long>(options.tiles.overlap), static_cast<long long>(fitted.overlap),
            static_cast<long long>(nets::side_multiple(g)));
      options.tiles = fitted;
    }

    const std::string extension = "." + format;
    std::shared_ptr<data::PairedDataset> dataset;
    std::string split;
    std::vector<infer::TranslationInput> inputs;
    if (!command_line.data.empty()) {
      dataset = data::PairedDataset::open(command_line.data);
      split = command_line.split.empty() ? infer::default_split(*dataset) : command_line.split;
      if (!dataset->has_split(split)) throw Error(dataset->path() + ": has no " + split + " split");
      const data::DomainSamples& read =
          dataset->split(split).samples(options.b_side ? data::Domain::B : data::Domain::A);
      if (read != options.input_samples)
        throw Error(dataset->path() + ": its " + (options.b_side ? "B" : "A") + " holds " + data::to_string(read) +
                    ", but the generator of " + job.saved.path + " was trained on " +
                    data::to_string(options.input_samples) + ": the same value would be another input to it");
      inputs =
          infer::list_dataset_inputs(*dataset, split, extension, options.b_side ? data::Domain::B : data::Domain::A);
    } else {
      inputs = infer::list_folder_inputs(command_line.input, extension);
    }
    if (limit >= 0 && static_cast<std::size_t>(limit) < inputs.size()) inputs.resize(static_cast<std::size_t>(limit));
    infer::check_distinct_outputs(inputs);
    // Ranks take inputs by position in this list: it must be the same list on every rank.
    std::string listing;
    for (const auto& input : inputs) listing += input.label + '\n';
    require_agreement(
        mpi, {{"the inputs (" + std::to_string(inputs.size()) + ")",
               std::to_string(inputs.size()) + " inputs, FNV-1a 64 of their names = " + text_fingerprint(listing)}});
    InputFiles read;
    if (mpi.rank() == 0) {
      for (const auto& input : inputs) read.add(input.path);
      read.add(job.saved.path);
      if (dataset) read.add(dataset->path());
      if (!config_file(vm).empty()) read.add(config_file(vm));
    }
    const std::string refusal = claim_outputs(inputs, options.output_dir, command_line.overwrite, read, *job.comm);
    if (!refusal.empty()) {
      const bool usage = refusal[0] == '2';
      if (mpi.rank() == 0)
        std::fprintf(stderr, "pix2pix translate: %s%s\n", usage ? "" : "error: ", refusal.substr(1).c_str());
      return usage ? 2 : 1;
    }
    const infer::TranslationCounts counts =
        infer::translate_inputs(job.saved.generator, inputs, dataset.get(), split, options, *job.comm);
    const auto total = static_cast<std::int64_t>(inputs.size());
    const bool too_many_bad = static_cast<double>(counts.skipped) > max_bad * static_cast<double>(total);
    if (mpi.rank() == 0) {
      const double seconds = seconds_since(start);
      const std::string sizing = options.tiles.tile > 0 ? "--tile " + std::to_string(options.tiles.tile) +
                                                              " --overlap " + std::to_string(options.tiles.overlap)
                                                        : "--resize " + command_line.resize;
      print_summary(counts, total, job, sizing, mpi.world(), seconds, options.output_dir);
      if (counts.unwritten > 0)
        std::fprintf(stderr, "pix2pix translate: error: %lld of %lld outputs could not be written; the first: %s\n",
                     static_cast<long long>(counts.unwritten), static_cast<long long>(total),
                     counts.first_write_error.c_str());
      if (too_many_bad)
        std::fprintf(stderr,
                     "pix2pix translate: error: %lld of %lld inputs could not be decoded, more than --max-bad %g "
                     "(the others were written)\n",
                     static_cast<long long>(counts.skipped), static_cast<long long>(total), max_bad);
    }
    return too_many_bad || counts.unwritten > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    // An error that only some ranks see must not leave the others waiting in a collective.
    if (mpi.world() > 1) end_job_on_error("translate", e);
    throw;
  }
}

}  // namespace pix2pix::cli
