// A checkpoint is one torch archive (a zip file) followed by a seal (checkpoint_seal.hpp): a
// truncated or damaged newest checkpoint is told from a good one before anything is loaded.
#include "pix2pix/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/train/checkpoint_seal.hpp"

namespace pix2pix::train {
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

std::string read_string(torch::serialize::InputArchive& in, const std::string& key) {
  c10::IValue v;
  if (!in.try_read(key, v) || !v.isString()) throw Error("missing entry '" + key + "'");
  return v.toStringRef();
}

std::int64_t read_int(torch::serialize::InputArchive& in, const std::string& key) {
  c10::IValue v;
  if (!in.try_read(key, v) || !v.isInt()) throw Error("missing entry '" + key + "'");
  return v.toInt();
}

torch::Tensor read_tensor(torch::serialize::InputArchive& in, const std::string& key) {
  torch::Tensor t;
  if (!in.try_read(key, t)) throw Error("missing entry '" + key + "'");
  return t;
}

void save_sealed(torch::serialize::OutputArchive& archive, const std::string& path) {
  SealedFileWriter file(path);
  archive.save_to([&file](const void* data, size_t n) { return file.write(data, n); });
  file.finish();
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

void save_checkpoint(const std::string& path, torch::nn::Module& generator, torch::nn::Module& discriminator,
                     torch::optim::Optimizer& opt_g, torch::optim::Optimizer& opt_d, const TrainingState& s) {
  write_atomically(path, [&](const std::string& tmp) {
    torch::serialize::OutputArchive out, g, d, og, od;
    out.write("magic", c10::IValue(std::string(kCheckpointMagic)));
    out.write("version", c10::IValue(kCheckpointVersion));
    out.write("model_shape", c10::IValue(s.model_shape));
    out.write("epoch", c10::IValue(s.epoch));
    out.write("global_step", c10::IValue(s.global_step));
    out.write("step_in_epoch", c10::IValue(s.step_in_epoch));
    out.write("epoch_sums", doubles(s.epoch_sums));
    out.write("world", c10::IValue(s.world));
    out.write("global_batch", c10::IValue(s.global_batch));
    out.write("early_stopping", c10::IValue(s.early_stopping));
    out.write("scaler_g", doubles(s.scaler_g));
    out.write("scaler_d", doubles(s.scaler_d));
    generator.save(g);
    discriminator.save(d);
    opt_g.save(og);
    opt_d.save(od);
    out.write("generator", g);
    out.write("discriminator", d);
    out.write("optimizer_g", og);
    out.write("optimizer_d", od);
    save_sealed(out, tmp);
  });
}

TrainingState load_checkpoint(const std::string& path, torch::nn::Module& generator, torch::nn::Module& discriminator,
                              torch::optim::Optimizer& opt_g, torch::optim::Optimizer& opt_d,
                              const std::string& expected_model_shape) {
  require_readable_file(path, "checkpoint");
  if (const auto damage = check_seal(path)) throw Error("checkpoint " + path + " is damaged: " + *damage);
  torch::serialize::InputArchive in;
  try {
    // Straight onto the networks' device: loading replaces each parameter's storage.
    const auto params = generator.parameters();
    in.load_from(path, params.empty() ? torch::Device(torch::kCPU) : params.front().device());
  } catch (const c10::Error&) {
    throw Error("checkpoint " + path + " is truncated or damaged (cannot be opened as a torch archive)");
  }
  TrainingState s;
  try {
    c10::IValue magic;
    if (!in.try_read("magic", magic) || !magic.isString() || magic.toStringRef() != kCheckpointMagic)
      throw Error("not a pix2pix-mpi checkpoint");
    const std::int64_t version = read_int(in, "version");
    if (version != kCheckpointVersion)
      throw Error("checkpoint version " + std::to_string(version) + ", this build reads " +
                  std::to_string(kCheckpointVersion));
    s.model_shape = read_string(in, "model_shape");
    if (s.model_shape != expected_model_shape)
      throw Error("written for another model shape:\n  checkpoint: " + s.model_shape +
                  "\n  options:    " + expected_model_shape);
    s.epoch = read_int(in, "epoch");
    s.global_step = read_int(in, "global_step");
    s.step_in_epoch = read_int(in, "step_in_epoch");
    s.epoch_sums = to_vector(read_tensor(in, "epoch_sums"));
    s.world = read_int(in, "world");
    s.global_batch = read_int(in, "global_batch");
    s.early_stopping = read_string(in, "early_stopping");
    s.scaler_g = to_vector(read_tensor(in, "scaler_g"));
    s.scaler_d = to_vector(read_tensor(in, "scaler_d"));
    torch::serialize::InputArchive g, d, og, od;
    if (!in.try_read("generator", g) || !in.try_read("discriminator", d) || !in.try_read("optimizer_g", og) ||
        !in.try_read("optimizer_d", od))
      throw Error("missing network or optimizer state");
    generator.load(g);
    discriminator.load(d);
    opt_g.load(og);
    opt_d.load(od);
  } catch (const Error& e) {
    throw Error("checkpoint " + path + ": " + e.what());
  } catch (const c10::Error& e) {
    throw Error("checkpoint " + path + " does not fit the networks: " + e.what_without_backtrace());
  }
  return s;
}

void save_generator(const std::string& path, torch::nn::Module& generator, const std::string& model_shape) {
  write_atomically(path, [&](const std::string& tmp) {
    torch::serialize::OutputArchive out, g;
    out.write("magic", c10::IValue(std::string(kCheckpointMagic) + "-generator"));
    out.write("version", c10::IValue(kCheckpointVersion));
    out.write("model_shape", c10::IValue(model_shape));
    generator.save(g);
    out.write("generator", g);
    save_sealed(out, tmp);
  });
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

}  // namespace pix2pix::train
