// `pix2pix export`: a trained model in a form other tools run: an ONNX graph of the generator
// (onnxruntime, TensorRT, OpenCV DNN) or reference-named PyTorch state dicts (torch.load).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/inference_setup.hpp"
#include "pix2pix/cli/options.hpp"
#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/common/input_file.hpp"
#if PIX2PIX_HAVE_ONNX
#include "pix2pix/interop/onnx_export.hpp"
#endif
#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/interop/pytorch_export.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/nets/model_shape.hpp"

namespace pix2pix::cli {
namespace {

namespace fs = std::filesystem;

enum class ExportFormat { onnx, pytorch };
const Choices<ExportFormat> kFormats = {{"onnx", ExportFormat::onnx}, {"pytorch", ExportFormat::pytorch}};

// The run's config.cfg when the generator file lies in RUN_DIR/checkpoints/ (empty otherwise).
// Read beneath the run directory and bounded: a config.cfg that is a link (to a file that is not
// the run's) or a FIFO is left out, with a warning. See Note [a run directory is untrusted input].
std::string run_config_of(const std::string& generator_path) {
  const fs::path run = fs::path(generator_path).parent_path().parent_path();
  try {
    return read_beneath(run.empty() ? "." : run.string(), "config.cfg", kTextFileLimit, /*must_exist=*/false)
        .value_or("");
  } catch (const Error& e) {
    std::fprintf(stderr, "warning: export: the run's options are left out of the metadata: %s\n", e.what());
    return "";
  }
}

// What a user of the exported generator needs to know, as (name, text): the tensors and the values
// they stand for, shape, provenance. The ONNX metadata and the state dict's side file both say it.
std::vector<std::pair<std::string, std::string>> model_facts(const checkpoint::SavedGenerator& saved,
                                                             const std::string& input_name,
                                                             const std::string& output_name) {
  const auto& g = saved.generator->options();
  const auto known = [](std::int64_t v) { return v > 0 ? std::to_string(v) : std::string("unknown"); };
  // The input's and the output's stored values, with the range that maps them to [-1, 1] (A to
  // B, or B to A for --direction BtoA).
  const bool b_to_a = saved.direction == checkpoint::Direction::b_to_a;
  const data::DomainSamples& in = b_to_a ? saved.trained_on.samples_b : saved.trained_on.samples_a;
  const data::DomainSamples& out = b_to_a ? saved.trained_on.samples_a : saved.trained_on.samples_b;
  const auto number = [](double v) {
    std::ostringstream text;
    text.precision(9);
    text << v;
    return text.str();
  };
  const auto to_input = [&](const data::DomainSamples& d) {
    return in.is_byte_default() ? std::string("pixel / 127.5 - 1")
                                : "(value - " + number(d.range.lo) + ") / " + number(d.range.peak() / 2) + " - 1";
  };
  const auto from_output = [&](const data::DomainSamples& d) {
    return out.is_byte_default() ? std::string("(value + 1) * 127.5 is the pixel")
                                 : "(value + 1) * " + number(d.range.peak() / 2) + " + " + number(d.range.lo) +
                                       " is the " + data::to_string(d.type) + " value";
  };
  std::vector<std::pair<std::string, std::string>> metadata = {
      {"input",
       input_name + ": float32 [batch, " + std::to_string(g.in_channels) + ", height, width], " + to_input(in)},
      {"output",
       output_name + ": float32 [batch, " + std::to_string(g.out_channels) + ", height, width], " + from_output(out)},
      {"value_range", "[-1, 1]"},
      {"input_samples", data::to_string(in.type)},
      {"input_range", data::to_string(in.range)},
      {"output_samples", data::to_string(out.type)},
      {"output_range", data::to_string(out.range)},
      {"in_channels", std::to_string(g.in_channels)},
      {"out_channels", std::to_string(g.out_channels)},
      {"side_multiple", std::to_string(nets::side_multiple(g))},
      {"trained_height", known(saved.trained_on.height)},
      {"trained_width", known(saved.trained_on.width)},
      {"mode", "eval (running statistics, no dropout)"},
      {"run_validated_in", to_string(saved.trained_on.val_mode)},
      {"model_shape", saved.model_shape},
      {"direction", to_string(saved.direction)},
      {"epoch", known(saved.epoch)},
      {"weights",
       saved.ema ? "ema (the run's moving average, --ema-decay)" : "raw (the weights the optimiser trained)"},
      {"checkpoint", saved.path},
  };
  const std::string config = run_config_of(saved.path);
  if (!config.empty()) metadata.emplace_back("config", config);
  return metadata;
}

#if PIX2PIX_HAVE_ONNX
std::vector<std::pair<std::string, std::string>> onnx_metadata(const checkpoint::SavedGenerator& saved) {
  auto facts = model_facts(saved, interop::kOnnxInput, interop::kOnnxOutput);
  for (auto& fact : facts) fact.first = "pix2pix." + fact.first;
  return facts;
}
#endif

// The state dict's side file (FILE.json beside FILE.pth): model_facts as one JSON object.
std::string side_file_json(const checkpoint::SavedGenerator& saved) {
  std::string json = "{\n";
  const auto facts = model_facts(saved, "input", "output");
  for (size_t i = 0; i < facts.size(); ++i)
    json += "  " + metrics::json_string(facts[i].first) + ": " + metrics::json_string(facts[i].second) +
            (i + 1 < facts.size() ? ",\n" : "\n");
  return json + "}\n";
}

}  // namespace

int run_export(int argc, char** argv) {
  const CommandSpec spec{
      "export", "pix2pix export --checkpoint PATH --format onnx|pytorch --out FILE [options]",
      "Writes a trained model for other tools. onnx: the generator in eval mode as an ONNX graph (opset 13;\n"
      "batch, height and width dynamic; checked by onnx::checker), for onnxruntime, TensorRT or OpenCV DNN.\n"
      "pytorch: the generator's state dict with the reference implementation's names\n"
      "(pytorch-CycleGAN-and-pix2pix UnetGenerator or ResnetGenerator), for torch.load and load_state_dict; with\n"
      "--discriminator-out, the PatchGAN's too (from a full checkpoint). Files are written whole or not at\n"
      "all. docs/deploy.md shows how to run them."};
  std::string checkpoint_path, format_name, out, discriminator_out;
  checkpoint::Direction direction = checkpoint::Direction::a_to_b;
  checkpoint::Weights weights = checkpoint::Weights::automatic;
  bool overwrite = false;
  OptionGroup options("Options");
  options
      .optional_text("checkpoint", checkpoint_path,
                     "a run directory (its checkpoints/best_generator.pt), best_generator.pt, best.pt, last.pt, "
                     "epoch_NNNN.pt or a reference PyTorch state dict FILE.pth")
      .value_name("PATH");
  options.optional_text("format", format_name, "onnx | pytorch").value_name("onnx|pytorch");
  options.optional_text("out", out, "the generator's file (model.onnx, latest_net_G.pth)").value_name("FILE");
  options
      .optional_text("discriminator-out", discriminator_out,
                     "with --format pytorch: also the discriminator's state dict (latest_net_D.pth; needs a full "
                     "checkpoint)")
      .value_name("FILE");
  options.choice("direction", direction, "AtoB", checkpoint::parse_direction,
                 "AtoB | BtoA: BtoA writes a CycleGAN run's G_B (from a full checkpoint; a run directory means its "
                 "best.pt)");
  options.choice("weights", weights, "auto", checkpoint::parse_weights, kWeightsHelp);
  options.flag("overwrite", overwrite, "replace existing output files");
  const auto parsed = parse_command(spec, options.description(), po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  if (checkpoint_path.empty()) throw UsageError("missing --checkpoint");
  if (format_name.empty()) throw UsageError("missing --format");
  if (out.empty()) throw UsageError("missing --out");
  const ExportFormat format = parse_choice(format_name, "--format", kFormats);
  const bool with_discriminator = !discriminator_out.empty();
  if (with_discriminator && format != ExportFormat::pytorch)
    throw UsageError("--discriminator-out goes with --format pytorch (ONNX takes the generator alone)");
  std::vector<std::pair<std::string, std::string>> outputs = {{"--out", out}};
  // --format pytorch: the values and shape the state dict cannot hold go to FILE.json beside it.
  const std::string side_file = fs::path(out).replace_extension(".json").string();
  if (format == ExportFormat::pytorch) {
    if (side_file == out)
      throw UsageError("--out " + out + ": a .json name is the side file's; name the state dict .pth");
    outputs.emplace_back("--out's side file", side_file);
  }
  if (with_discriminator) outputs.emplace_back("--discriminator-out", discriminator_out);

  if (with_discriminator && direction == checkpoint::Direction::b_to_a)
    throw UsageError("--discriminator-out writes D_A, which judges G_A's images; it goes with --direction AtoB");
  const std::string checkpoint = checkpoint::resolve_generator_path(checkpoint_path, direction, weights);
  if (with_discriminator && fs::path(checkpoint).extension() == ".pth")
    throw Error("--checkpoint " + checkpoint +
                " is a state dict of one network; --discriminator-out needs a full checkpoint (best.pt, last.pt)");
  std::vector<std::string> inputs = {checkpoint};
  if (!config_file(vm).empty()) inputs.push_back(config_file(vm));
  require_new_outputs(outputs, inputs, overwrite);
  const checkpoint::SavedGenerator saved = checkpoint::load_generator(checkpoint, torch::kCPU, direction, weights);
  // "the generator of FILE (epoch N, EMA weights)", or "G_B (B to A) of FILE ..." with --direction BtoA.
  const std::string epoch = " (" + (saved.epoch >= 0 ? "epoch " + std::to_string(saved.epoch) + ", " : "") +
                            checkpoint::weights_name(saved) + " weights)";
  const char* which = direction == checkpoint::Direction::b_to_a ? "G_B (B to A)" : "the generator";
  if (format == ExportFormat::onnx) {
#if PIX2PIX_HAVE_ONNX
    interop::write_onnx_model(out, interop::generator_to_onnx(saved.generator, onnx_metadata(saved)));
    std::printf("wrote %s: %s of %s%s as ONNX (opset %lld, input %s, output %s, values in [-1, 1])\n", out.c_str(),
                which, saved.path.c_str(), epoch.c_str(), static_cast<long long>(interop::kOnnxOpset),
                interop::kOnnxInput, interop::kOnnxOutput);
    if (saved.trained_on.val_mode == nets::ValMode::train)
      std::printf(
          "note: this run validated in train mode (batch statistics and dropout); the ONNX graph runs in eval mode, "
          "as translate --mode eval does\n");
#else
    throw Error(
        "this pix2pix was built without ONNX (PIX2PIX_WITH_ONNX=OFF, as a GPU node's build from the bundle "
        "is): --format onnx is not available here; write --format pytorch and convert it with "
        "torch.onnx.export, or export on a build with ONNX (docs/deploy.md)");
#endif
  } else {
    interop::require_reference_form(saved.generator->options().norm);
    nets::PatchDiscriminator discriminator{nullptr};
    if (with_discriminator) discriminator = checkpoint::load_discriminator(saved.path, torch::kCPU);
    // The side file first (small): a state dict that cannot be written takes it away again, so
    // that neither is left without the other.
    write_file_atomically(side_file, side_file_json(saved));
    try {
      interop::write_state_dict(out, *saved.generator);
    } catch (...) {
      std::error_code ec;
      fs::remove(side_file, ec);
      throw;
    }
    std::printf("wrote %s: %s of %s%s as a PyTorch state dict (reference %s names), and %s (its values and shape)\n",
                out.c_str(), which, saved.path.c_str(), epoch.c_str(),
                saved.generator->options().arch == nets::GeneratorArch::resnet ? "ResnetGenerator" : "UnetGenerator",
                side_file.c_str());
    if (with_discriminator) {
      interop::write_state_dict(discriminator_out, *discriminator);
      std::printf("wrote %s: its discriminator (reference NLayerDiscriminator names)\n", discriminator_out.c_str());
    }
  }
  return 0;
}

}  // namespace pix2pix::cli
