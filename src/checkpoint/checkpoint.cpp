// A checkpoint is one torch archive (a zip file) followed by a seal (checkpoint_seal.hpp): a
// truncated or damaged newest checkpoint is told from a good one before anything is loaded.
#include "pix2pix/checkpoint/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "pix2pix/checkpoint/checkpoint_archive.hpp"
#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/host_values.hpp"

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

// Note [epoch sums of older checkpoints]: before models had named losses (every checkpoint was
// Pix2Pix's), one "epoch_sums" tensor held [loss_D, loss_G_gan, loss_G_l1, skipped] and later a
// fifth value, loss_G_aux (0 without --aux-classifier). A Pix2Pix model reports loss_G_aux only
// with a classifier, which the resume check holds to the checkpoint's (s.recognition).
void read_epoch_sums(torch::serialize::InputArchive& in, TrainingState& s) {
  c10::IValue v;
  torch::Tensor losses;  // loaded onto the networks' device: host_doubles reads it on the host
  if (in.try_read("epoch_losses", losses)) {
    s.epoch_losses = host_doubles(losses);
    if (!in.try_read("epoch_skipped", v) || !v.isInt()) throw Error("missing epoch_skipped");
    s.epoch_skipped = v.toInt();
    return;
  }
  const std::vector<double> old = host_doubles(read_tensor(in, "epoch_sums"));
  if (old.empty()) return;  // written at an epoch boundary
  if (old.size() != 4 && old.size() != 5)
    throw Error("epoch_sums holds " + std::to_string(old.size()) + " values, not 4 or 5");
  s.epoch_losses = {old[0], old[1], old[2]};
  if (!s.recognition.empty()) s.epoch_losses.push_back(old.size() == 5 ? old[4] : 0.0);
  s.epoch_skipped = static_cast<std::int64_t>(old[3]);
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  // A name nobody had before, made by us (See Note [fresh temporary names]); the writer reopens it
  // with O_NOFOLLOW, so a link put in its place meanwhile is refused, not written through.
  std::string tmp;
  if (create_fresh_file(path + ".tmp", tmp).get() < 0)
    throw Error("cannot write " + path + ": " + std::strerror(errno) + " (the previous file, if any, is untouched)");
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
    out.write("train_seconds", c10::IValue(s.train_seconds));
    out.write("wall_seconds", c10::IValue(s.wall_seconds));
    for (const auto* networks : {&parts.networks, &parts.optional_networks})
      for (const auto& [key, network] : *networks) {
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
  naming_the_file("checkpoint " + path, " does not fit the networks: ", [&] {
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
      s.scalers.emplace_back(key, host_doubles(read_tensor(in, "scaler_" + key)));
    s.trained_on = read_trained_on(in);
    // Absent from checkpoints written before --aux-classifier: trained without one.
    c10::IValue v;
    if (in.try_read("recognition", v) && v.isString()) s.recognition = v.toStringRef();
    if (in.try_read("best_recognition", v) && v.isDouble()) s.best_recognition = v.toDouble();
    if (in.try_read("train_seconds", v) && v.isDouble()) s.train_seconds = v.toDouble();
    if (in.try_read("wall_seconds", v) && v.isDouble()) s.wall_seconds = v.toDouble();
    if (in.try_read("es_metric", v) && v.isString()) s.es_metric = v.toStringRef();
    if (in.try_read("options", v) && v.isString()) s.options = v.toStringRef();
    read_epoch_sums(in, s);
    for (const auto& [key, network] : parts.networks) {
      torch::serialize::InputArchive archive;
      if (!in.try_read(key, archive)) throw Error("missing the " + key + "'s weights");
      load_checked(*network, archive, key);
    }
    for (const auto& [key, network] : parts.optional_networks) {
      torch::serialize::InputArchive archive;
      if (in.try_read(key, archive))
        load_checked(*network, archive, key);
      else
        s.absent_networks.push_back(key);
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
  });
  return s;
}

std::string previous_checkpoint_path(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".prev" + p.extension().string())).string();
}

void keep_previous_checkpoint(const std::string& path) {
  std::error_code ec;
  // Only a file of ours: a link planted as last.pt is not kept (See Note [a run directory is untrusted input]).
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) return;
  const std::string previous = previous_checkpoint_path(path), staging = fresh_name(previous + ".tmp");
  // Both fail rather than follow a name that exists (copy_file without overwrite uses O_EXCL).
  std::filesystem::create_hard_link(path, staging, ec);
  if (ec) std::filesystem::copy_file(path, staging, std::filesystem::copy_options::none, ec);
  if (ec) throw Error("cannot keep " + path + " as " + previous + ": " + ec.message());
  std::filesystem::rename(staging, previous, ec);
  if (ec) throw Error("cannot rename " + staging + " to " + previous + ": " + ec.message());
}

std::vector<std::string> resume_candidates(const std::string& checkpoints_dir) {
  std::vector<std::string> out;
  for (const char* name : {"last.pt", "last.prev.pt"}) {
    const auto path = std::filesystem::path(checkpoints_dir) / name;
    std::error_code ec;  // a link is listed too, for the reader to refuse by name
    if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) out.push_back(path.string());
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
