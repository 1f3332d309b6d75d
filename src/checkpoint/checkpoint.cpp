// A checkpoint is one torch archive (a zip file) followed by a seal (checkpoint_seal.hpp): a
// truncated or damaged newest checkpoint is told from a good one before anything is loaded.
#include "pix2pix/checkpoint/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "pix2pix/checkpoint/checkpoint_archive.hpp"
#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/interop/reference_state_dict.hpp"
#include "pix2pix/nets/model_shape.hpp"

namespace pix2pix::checkpoint {
namespace {

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error("cannot reopen " + path + " to flush it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw Error("cannot flush " + path + " to disk");
}

torch::Tensor doubles(const std::vector<double>& v) {
  return torch::tensor(v.empty() ? std::vector<double>{} : v, torch::kFloat64);
}

std::vector<double> to_vector(const torch::Tensor& t) {
  const auto c = t.contiguous().to(torch::kFloat64);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// A full checkpoint's magic (or, for inference, a generator file's too) and this build's version.
void check_magic_and_version(torch::serialize::InputArchive& in, bool generator_file_too) {
  c10::IValue magic;
  const std::string full = kCheckpointMagic, generator_only = full + "-generator";
  const std::string found = in.try_read("magic", magic) && magic.isString() ? magic.toStringRef() : "";
  // The files of ours that are not what was asked for say what they are and what to give instead.
  if (found == generator_only && !generator_file_too)
    throw Error(
        "a generator file (G's weights only, as best_generator.pt), not a full checkpoint: --resume "
        "needs last.pt, best.pt or epoch_NNNN.pt of the run");
  if (found == kClassifierMagic)
    throw Error("a recognition network (pix2pix train-classifier), not a pix2pix-mpi checkpoint");
  if (found != full && !(generator_file_too && found == generator_only)) throw Error("not a pix2pix-mpi checkpoint");
  const std::int64_t version = read_int(in, "version");
  if (version != kCheckpointVersion)
    throw Error("checkpoint version " + std::to_string(version) + ", this build reads " +
                std::to_string(kCheckpointVersion));
}

void write_trained_on(torch::serialize::OutputArchive& out, const TrainedOn& t) {
  out.write("trained_height", c10::IValue(t.height));
  out.write("trained_width", c10::IValue(t.width));
  out.write("val_mode", c10::IValue(to_string(t.val_mode)));
}

// Absent from files written before inference needed them: unknown size, eval.
TrainedOn read_trained_on(torch::serialize::InputArchive& in) {
  TrainedOn t;
  c10::IValue v;
  if (in.try_read("trained_height", v) && v.isInt()) t.height = v.toInt();
  if (in.try_read("trained_width", v) && v.isInt()) t.width = v.toInt();
  if (in.try_read("val_mode", v) && v.isString()) t.val_mode = nets::parse_val_mode(v.toStringRef());
  return t;
}

// Note [epoch sums of older checkpoints]: before models had named losses (every checkpoint was
// Pix2Pix's), one "epoch_sums" tensor held [loss_D, loss_G_gan, loss_G_l1, skipped] and later a
// fifth value, loss_G_aux (0 without --aux-classifier). A Pix2Pix model reports loss_G_aux only
// with a classifier, which the resume check holds to the checkpoint's (s.recognition).
void read_epoch_sums(torch::serialize::InputArchive& in, TrainingState& s) {
  c10::IValue v;
  torch::Tensor losses;
  if (in.try_read("epoch_losses", losses)) {
    s.epoch_losses = to_vector(losses);
    if (!in.try_read("epoch_skipped", v) || !v.isInt()) throw Error("missing epoch_skipped");
    s.epoch_skipped = v.toInt();
    return;
  }
  const std::vector<double> old = to_vector(read_tensor(in, "epoch_sums"));
  if (old.empty()) return;  // written at an epoch boundary
  if (old.size() != 4 && old.size() != 5)
    throw Error("epoch_sums holds " + std::to_string(old.size()) + " values, not 4 or 5");
  s.epoch_losses = {old[0], old[1], old[2]};
  if (!s.recognition.empty()) s.epoch_losses.push_back(old.size() == 5 ? old[4] : 0.0);
  s.epoch_skipped = static_cast<std::int64_t>(old[3]);
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + ".tmp";
  try {
    write(tmp);
    fsync_path(tmp);
  } catch (const std::exception& e) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw Error("cannot write " + path + ": " + e.what() + " (the previous file, if any, is untouched)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("cannot rename " + tmp + " to " + path + ": " + ec.message());
  // The rename itself must reach the disk before the caller counts the file as written.
  const auto folder = std::filesystem::path(path).parent_path();
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void save_checkpoint(const std::string& path, const CheckpointParts& parts, const TrainingState& s) {
  write_atomically(path, [&](const std::string& tmp) {
    torch::serialize::OutputArchive out;
    out.write("magic", c10::IValue(std::string(kCheckpointMagic)));
    out.write("version", c10::IValue(kCheckpointVersion));
    out.write("model_shape", c10::IValue(s.model_shape));
    out.write("epoch", c10::IValue(s.epoch));
    out.write("global_step", c10::IValue(s.global_step));
    out.write("step_in_epoch", c10::IValue(s.step_in_epoch));
    out.write("epoch_losses", doubles(s.epoch_losses));
    out.write("epoch_skipped", c10::IValue(s.epoch_skipped));
    out.write("world", c10::IValue(s.world));
    out.write("global_batch", c10::IValue(s.global_batch));
    out.write("early_stopping", c10::IValue(s.early_stopping));
    for (const auto& [key, state] : s.scalers) out.write("scaler_" + key, doubles(state));
    write_trained_on(out, s.trained_on);
    out.write("recognition", c10::IValue(s.recognition));
    out.write("es_metric", c10::IValue(s.es_metric));
    out.write("options", c10::IValue(s.options));
    out.write("best_recognition", c10::IValue(s.best_recognition));
    for (const auto& [key, network] : parts.networks) {
      torch::serialize::OutputArchive archive;
      network->save(archive);
      out.write(key, archive);
    }
    for (const auto& [key, optimizer] : parts.optimizers) {
      torch::serialize::OutputArchive archive;
      optimizer->save(archive);
      out.write("optimizer_" + key, archive);
    }
    for (const auto& [key, ranks] : s.pools) {
      torch::serialize::OutputArchive archive;
      archive.write("ranks", c10::IValue(static_cast<std::int64_t>(ranks.size())));
      for (std::size_t r = 0; r < ranks.size(); ++r)
        archive.write(std::to_string(r), ranks[r].defined() ? ranks[r] : torch::empty({0}));
      out.write("pool_" + key, archive);
    }
    save_sealed(out, tmp);
  });
}

TrainingState load_checkpoint(const std::string& path, const CheckpointParts& parts,
                              const std::string& expected_model_shape) {
  torch::serialize::InputArchive in;
  // Straight onto the networks' device: loading replaces each parameter's storage.
  std::vector<torch::Tensor> params;
  if (!parts.networks.empty()) params = parts.networks.front().second->parameters();
  open_sealed(path, in, params.empty() ? torch::Device(torch::kCPU) : params.front().device());
  TrainingState s;
  try {
    check_magic_and_version(in, /*generator_file_too=*/false);
    s.model_shape = read_string(in, "model_shape");
    if (s.model_shape != expected_model_shape)
      throw Error("written for another model shape:\n  checkpoint: " + s.model_shape +
                  "\n  options:    " + expected_model_shape);
    s.epoch = read_int(in, "epoch");
    s.global_step = read_int(in, "global_step");
    s.step_in_epoch = read_int(in, "step_in_epoch");
    s.world = read_int(in, "world");
    s.global_batch = read_int(in, "global_batch");
    s.early_stopping = read_string(in, "early_stopping");
    for (const auto& [key, optimizer] : parts.optimizers)
      s.scalers.emplace_back(key, to_vector(read_tensor(in, "scaler_" + key)));
    s.trained_on = read_trained_on(in);
    // Absent from checkpoints written before --aux-classifier: trained without one.
    c10::IValue v;
    if (in.try_read("recognition", v) && v.isString()) s.recognition = v.toStringRef();
    if (in.try_read("best_recognition", v) && v.isDouble()) s.best_recognition = v.toDouble();
    if (in.try_read("es_metric", v) && v.isString()) s.es_metric = v.toStringRef();
    if (in.try_read("options", v) && v.isString()) s.options = v.toStringRef();
    read_epoch_sums(in, s);
    for (const auto& [key, network] : parts.networks) {
      torch::serialize::InputArchive archive;
      if (!in.try_read(key, archive)) throw Error("missing the " + key + "'s weights");
      load_checked(*network, archive, key);
    }
    for (const auto& [key, optimizer] : parts.optimizers) {
      torch::serialize::InputArchive archive;
      if (!in.try_read("optimizer_" + key, archive)) throw Error("missing optimizer_" + key);
      optimizer->load(archive);
    }
    for (const std::string& key : parts.pools) {
      torch::serialize::InputArchive archive;
      if (!in.try_read("pool_" + key, archive)) continue;  // written before pools were kept
      const std::int64_t count = read_int(archive, "ranks");
      if (count != s.world || count < 1 || count > (1 << 20))
        throw Error("pool_" + key + " holds " + std::to_string(count) + " ranks' images, the checkpoint's world is " +
                    std::to_string(s.world));
      std::vector<torch::Tensor> ranks(static_cast<std::size_t>(count));
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        const torch::Tensor images = read_tensor(archive, std::to_string(r)).to(torch::kCPU);
        if (images.numel() > 0 && images.dim() != 4)
          throw Error("pool_" + key + " of rank " + std::to_string(r) + " is not a batch of images");
        if (images.numel() > 0) ranks[r] = images;
      }
      s.pools.emplace_back(key, std::move(ranks));
    }
  } catch (const Error& e) {
    throw Error("checkpoint " + path + ": " + e.what());
  } catch (const c10::Error& e) {
    throw Error("checkpoint " + path + " does not fit the networks: " + e.what_without_backtrace());
  }
  return s;
}

void save_generator(const std::string& path, torch::nn::Module& generator, const std::string& model_shape,
                    const TrainedOn& trained_on, std::int64_t epoch) {
  write_atomically(path, [&](const std::string& tmp) {
    torch::serialize::OutputArchive out, g;
    out.write("magic", c10::IValue(std::string(kCheckpointMagic) + "-generator"));
    out.write("version", c10::IValue(kCheckpointVersion));
    out.write("model_shape", c10::IValue(model_shape));
    out.write("epoch", c10::IValue(epoch));
    write_trained_on(out, trained_on);
    generator.save(g);
    out.write("generator", g);
    save_sealed(out, tmp);
  });
}

std::string resolve_generator_path(const std::string& checkpoint, Direction direction) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(checkpoint, ec)) return checkpoint;
  // best_generator.pt holds G_A alone; G_B is in the full checkpoint of the same epoch.
  const std::string name = direction == Direction::b_to_a ? "best.pt" : "best_generator.pt";
  for (const fs::path& candidate : {fs::path(checkpoint) / "checkpoints" / name, fs::path(checkpoint) / name})
    if (fs::exists(candidate, ec)) return candidate.string();
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

}  // namespace

namespace {
const Choices<Direction> kDirectionChoices = {{"AtoB", Direction::a_to_b}, {"BtoA", Direction::b_to_a}};

}  // namespace

Direction parse_direction(const std::string& text) {
  return parse_choice(text, "--direction", kDirectionChoices);
}
std::string to_string(Direction direction) {
  return choice_name(direction, kDirectionChoices);
}

SavedGenerator load_generator(const std::string& checkpoint, const torch::Device& device, Direction direction) {
  SavedGenerator saved;
  saved.direction = direction;
  const bool b_to_a = direction == Direction::b_to_a;
  saved.path = resolve_generator_path(checkpoint, direction);
  const std::string& path = saved.path;
  const bool reference_file = std::filesystem::path(path).extension() == ".pth";
  if (reference_file && b_to_a)
    throw Error("--direction BtoA: " + path + " is a state dict of one generator; name a CycleGAN run's checkpoint");
  if (reference_file) return load_reference_generator(path, device);
  torch::serialize::InputArchive in;
  open_sealed(path, in, device);
  try {
    check_magic_and_version(in, /*generator_file_too=*/true);
    saved.model_shape = read_string(in, "model_shape");
    c10::IValue epoch;
    if (in.try_read("epoch", epoch) && epoch.isInt()) saved.epoch = epoch.toInt();
    saved.trained_on = read_trained_on(in);
    const nets::ModelShape shape = nets::parse_model_shape(saved.model_shape);
    nets::GeneratorOptions options = shape.generator;
    torch::serialize::InputArchive g;
    if (!in.try_read(b_to_a ? "generator_ba" : "generator", g)) {
      if (!b_to_a) throw Error("missing generator weights");
      // A model with a generator back keeps it in its full checkpoints only (as "generator_ba").
      const bool generator_file = read_string(in, "magic") != kCheckpointMagic;
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
  } catch (const Error& e) {
    throw Error("checkpoint " + path + ": " + e.what());
  } catch (const c10::Error& e) {
    throw Error("checkpoint " + path + ": its generator does not fit its model shape: " + e.what_without_backtrace());
  }
  saved.generator->eval();
  return saved;
}

nets::PatchDiscriminator load_discriminator(const std::string& path, const torch::Device& device) {
  torch::serialize::InputArchive in;
  open_sealed(path, in, device);
  nets::PatchDiscriminator discriminator{nullptr};
  try {
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
  } catch (const Error& e) {
    throw Error("checkpoint " + path + ": " + e.what());
  } catch (const c10::Error& e) {
    throw Error("checkpoint " + path +
                ": its discriminator does not fit its model shape: " + e.what_without_backtrace());
  }
  discriminator->eval();
  return discriminator;
}

std::string previous_checkpoint_path(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".prev" + p.extension().string())).string();
}

void keep_previous_checkpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) return;
  const std::string previous = previous_checkpoint_path(path), staging = previous + ".tmp";
  std::error_code ec;
  std::filesystem::remove(staging, ec);
  std::filesystem::create_hard_link(path, staging, ec);
  if (ec) std::filesystem::copy_file(path, staging, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) throw Error("cannot keep " + path + " as " + previous + ": " + ec.message());
  std::filesystem::rename(staging, previous, ec);
  if (ec) throw Error("cannot rename " + staging + " to " + previous + ": " + ec.message());
}

std::vector<std::string> resume_candidates(const std::string& checkpoints_dir) {
  std::vector<std::string> out;
  for (const char* name : {"last.pt", "last.prev.pt"}) {
    const auto path = std::filesystem::path(checkpoints_dir) / name;
    if (std::filesystem::is_regular_file(path)) out.push_back(path.string());
  }
  std::vector<std::string> epochs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("epoch_", 0) == 0 && entry.path().extension() == ".pt") epochs.push_back(entry.path().string());
  }
  std::sort(epochs.rbegin(), epochs.rend());  // epoch_NNNN: zero-padded, so text order is epoch order
  out.insert(out.end(), epochs.begin(), epochs.end());
  return out;
}

}  // namespace pix2pix::checkpoint
