// Generator files: G's weights alone behind the checkpoints' header (checkpoint_archive.hpp), and
// the generator (or a full checkpoint's discriminator) read back for inference.
#include "pix2pix/checkpoint/generator_file.hpp"

#include <filesystem>
#include <limits>
#include <utility>

#include "pix2pix/checkpoint/checkpoint_archive.hpp"
#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/interop/reference_state_dict.hpp"
#include "pix2pix/nets/model_shape.hpp"

namespace pix2pix::checkpoint {

void save_generator(const std::string& path, torch::nn::Module& generator, const std::string& model_shape,
                    const TrainedOn& trained_on, std::int64_t epoch, bool ema) {
  write_atomically(path, [&](const std::string& tmp) {
    torch::serialize::OutputArchive out, g;
    out.write("magic", c10::IValue(std::string(kCheckpointMagic) + "-generator"));
    out.write("version", c10::IValue(kCheckpointVersion));
    out.write("model_shape", c10::IValue(model_shape));
    out.write("epoch", c10::IValue(epoch));
    out.write("weights", c10::IValue(std::string(ema ? "ema" : "raw")));
    write_trained_on(out, trained_on);
    generator.save(g);
    out.write("generator", g);
    save_sealed(out, tmp);
  });
}

std::string resolve_generator_path(const std::string& checkpoint, Direction direction, Weights weights) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(checkpoint, ec)) return checkpoint;
  // best_generator.pt holds G_A alone, and with --ema-decay its average alone; G_B and the raw
  // weights are in the full checkpoint of the same epoch.
  const std::string name = direction == Direction::b_to_a || weights == Weights::raw ? "best.pt" : "best_generator.pt";
  for (const std::string& relative : {"checkpoints/" + name, name})
    // A file of the run directory itself, not a link out of it (See Note [a run directory is untrusted input]).
    if (open_beneath(checkpoint, relative, std::numeric_limits<std::int64_t>::max(), /*must_exist=*/false))
      return (fs::path(checkpoint) / relative).string();
  throw Error("--checkpoint " + checkpoint + ": a folder without checkpoints/" + name +
              " (not a run directory, or its run has not validated yet); name a checkpoint file instead");
}

namespace {

// A reference-format state dict (torch.save in Python): the shape is read off its tensors; what it
// was trained on is not recorded (unknown size, eval).
SavedGenerator load_reference_generator(const std::string& path, const torch::Device& device) {
  SavedGenerator saved;
  saved.path = path;
  const interop::StateDict state = interop::read_torch_state_dict(path);
  const nets::GeneratorOptions options = interop::reference_generator_options(state, path);
  saved.generator = nets::make_generator(options);
  interop::load_state_dict(*saved.generator, state, path);
  saved.generator->to(device);
  saved.generator->eval();
  // The reference's default PatchGAN, for the shape line only (a generator file holds no D).
  saved.model_shape = nets::describe_model_shape(
      options, nets::DiscriminatorOptions{options.in_channels + options.out_channels, 64, 3, options.norm});
  return saved;
}

const Choices<Direction> kDirectionChoices = {{"AtoB", Direction::a_to_b}, {"BtoA", Direction::b_to_a}};
const Choices<Weights> kWeightsChoices = {{"auto", Weights::automatic}, {"ema", Weights::ema}, {"raw", Weights::raw}};

}  // namespace

Direction parse_direction(const std::string& text) {
  return parse_choice(text, "--direction", kDirectionChoices);
}
std::string to_string(Direction direction) {
  return choice_name(direction, kDirectionChoices);
}

Weights parse_weights(const std::string& text) {
  return parse_choice(text, "--weights", kWeightsChoices);
}
std::string to_string(Weights weights) {
  return choice_name(weights, kWeightsChoices);
}
std::string ema_key(const std::string& key) {
  return key + "_ema";
}

SavedGenerator load_generator(const std::string& checkpoint, const torch::Device& device, Direction direction,
                              Weights weights) {
  SavedGenerator saved;
  saved.direction = direction;
  const bool b_to_a = direction == Direction::b_to_a;
  saved.path = resolve_generator_path(checkpoint, direction, weights);
  const std::string& path = saved.path;
  const bool reference_file = std::filesystem::path(path).extension() == ".pth";
  if (reference_file && b_to_a)
    throw Error("--direction BtoA: " + path + " is a state dict of one generator; name a CycleGAN run's checkpoint");
  if (reference_file && weights == Weights::ema)
    throw UsageError("--weights ema: " + path + " is a state dict of one generator's weights, with no average");
  if (reference_file) return load_reference_generator(path, device);
  torch::serialize::InputArchive in;
  open_sealed(path, in, device);
  naming_the_file("checkpoint " + path, ": its generator does not fit its model shape: ", [&] {
    const bool generator_file = check_magic_and_version(in, /*generator_file_too=*/true);
    saved.model_shape = read_string(in, "model_shape");
    c10::IValue value;
    if (in.try_read("epoch", value) && value.isInt()) saved.epoch = value.toInt();
    saved.trained_on = read_trained_on(in);
    const nets::ModelShape shape = nets::parse_model_shape(saved.model_shape);
    nets::GeneratorOptions options = shape.generator;
    const std::string key = b_to_a ? "generator_ba" : "generator";
    torch::serialize::InputArchive g;
    bool found = false;
    if (generator_file) {
      // One generator, raw or averaged as "weights" says (files from before --ema-decay: raw).
      saved.ema = in.try_read("weights", value) && value.isString() && value.toStringRef() == "ema";
      if (weights == Weights::ema && !saved.ema)
        throw UsageError("--weights ema: it holds the raw weights (its run kept no average: --ema-decay)");
      if (weights == Weights::raw && saved.ema)
        throw UsageError(
            "--weights raw: it holds the moving average alone; the raw weights of its epoch are in best.pt "
            "beside it (a run directory with --weights raw means that file)");
      found = in.try_read(key, g);
    } else {
      // A full checkpoint of a run with --ema-decay holds both.
      saved.ema = weights != Weights::raw && in.try_read(ema_key(key), g);
      if (weights == Weights::ema && !saved.ema)
        throw UsageError("--weights ema: it holds no " + ema_key(key) + " (its run kept no average: --ema-decay)");
      found = saved.ema || in.try_read(key, g);
    }
    if (!found) {
      if (!b_to_a) throw Error("missing generator weights");
      // A model with a generator back keeps it in its full checkpoints only (as "generator_ba").
      if (generator_file && !shape.model.empty())
        throw Error(
            "holds no G_B (generator_ba), as no generator file does: name a full checkpoint (best.pt, "
            "last.pt, epoch_NNNN.pt) of a model with a generator back");
      throw Error(
          "--direction BtoA needs the checkpoint of a model with a generator back (B to A); this one has "
          "one generator (A to B)");
    }
    if (b_to_a) std::swap(options.in_channels, options.out_channels);  // G_B mirrors G_A
    saved.generator = nets::make_generator(options);
    saved.generator->to(device);
    load_checked(*saved.generator, g, "its generator's");
  });
  saved.generator->eval();
  return saved;
}

nets::PatchDiscriminator load_discriminator(const std::string& path, const torch::Device& device) {
  torch::serialize::InputArchive in;
  open_sealed(path, in, device);
  nets::PatchDiscriminator discriminator{nullptr};
  naming_the_file("checkpoint " + path, ": its discriminator does not fit its model shape: ", [&] {
    check_magic_and_version(in, /*generator_file_too=*/true);
    const nets::ModelShape shape = nets::parse_model_shape(read_string(in, "model_shape"));
    // The discriminator that judges what "generator" makes: a model with two keeps it as
    // "discriminator_b" (the one of B-domain images, the shape's discriminator).
    torch::serialize::InputArchive d;
    if (!in.try_read("discriminator_b", d) && !in.try_read("discriminator", d))
      throw Error(
          "holds no discriminator (a generator file); name a full checkpoint: best.pt, last.pt or epoch_NNNN.pt");
    discriminator = nets::PatchDiscriminator(shape.discriminator);
    discriminator->to(device);
    load_checked(*discriminator, d, "its discriminator's");
  });
  discriminator->eval();
  return discriminator;
}

}  // namespace pix2pix::checkpoint
