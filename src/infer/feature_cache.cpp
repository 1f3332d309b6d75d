#include "pix2pix/infer/feature_cache.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/sha256.hpp"
#include "pix2pix/data/npy_file.hpp"

// Note [what keys the real-feature cache]
// An entry is used only when its key, stored beside it and compared whole, is the one asked for:
// the data file's canonical path, size, modification time and fingerprint (its first and last
// 64 KiB: cheap where a SHA-256 of a multi-GB HDF5 file would cost more than the features), the
// split, the domain whose images are the real set (B; A for --direction BtoA), the feature
// network's SHA-256, and the range, channels, size and call it is fed with. A data file rewritten
// in place changes its modification time, a copy elsewhere is another entry. The features are
// float32 as the network gives them, so FID/KID from a cached entry are bit-identical to those of
// a first evaluation (the test checks).

namespace pix2pix::infer {
namespace {

namespace fs = std::filesystem;

void warn(const std::string& what) {
  std::fprintf(stderr, "warning: feature cache: %s\n", what.c_str());
}

}  // namespace

std::string default_feature_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "pix2pix/features").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache/pix2pix/features").string();
  return "";
}

std::string real_feature_key(const std::string& data_file, const std::string& split, const std::string& domain,
                             const metrics::FeatureFacts& facts) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(data_file, ec);
  struct stat st {};
  const long long mtime_ns = ::stat(data_file.c_str(), &st) == 0
                                 ? static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec
                                 : -1;
  return "pix2pix-mpi real features 1\ndata " + (ec ? data_file : canonical.string()) + "\nmtime_ns " +
         std::to_string(mtime_ns) + "\nfingerprint " + file_fingerprint(data_file) + "\nsplit " + split + "\ndomain " +
         domain + "\nfeatures_sha256 " + facts.sha256 + "\ninput " + metrics::to_string(facts.input) + "\nchannels " +
         std::to_string(facts.channels) + "\nsize " + std::to_string(facts.size) + "\nreturn_features " +
         (facts.return_features ? "1" : "0") + "\n";
}

std::optional<torch::Tensor> read_cached_features(const std::string& dir, const std::string& key, std::int64_t rows,
                                                  std::int64_t dimensions) {
  const std::string name = sha256_hex(key), stem = (fs::path(dir) / name).string();
  // Files of the cache folder itself, regular and bounded: a FIFO planted there must not block an
  // evaluation, a link must not make it read elsewhere (See Note [a run directory is untrusted input]).
  try {
    const auto stored = read_beneath(dir, name + ".key", 1 << 20, /*must_exist=*/false);
    if (!stored) return std::nullopt;
    if (*stored != key) {
      warn(stem + ".key holds another key; recomputing");
      return std::nullopt;
    }
    open_beneath(dir, name + ".npy", std::numeric_limits<std::int64_t>::max());
    auto features = data::read_npy(stem + ".npy");
    const std::string expected =
        "float32 [" + std::to_string(rows) + ", " + (dimensions > 0 ? std::to_string(dimensions) : "D") + "]";
    if (features.dim() != 2 || features.size(0) != rows || features.scalar_type() != torch::kFloat32 ||
        features.size(1) < 1 || (dimensions > 0 && features.size(1) != dimensions)) {
      warn(stem + ".npy is not " + expected + " (damaged); recomputing");
    } else if (!torch::isfinite(features).all().item<bool>()) {
      warn(stem + ".npy holds NaN or infinite values (damaged); recomputing");
    } else {
      return features;
    }
  } catch (const std::exception& e) {
    warn(std::string(e.what()) + "; recomputing");
  }
  return std::nullopt;
}

void write_cached_features(const std::string& dir, const std::string& key, const torch::Tensor& features) {
  try {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
    const fs::path stem = fs::path(dir) / sha256_hex(key);
    // The array first: a key without its array is a miss, an array without its key is never read.
    data::write_npy(stem.string() + ".npy", features);
    write_file_atomically(stem.string() + ".key", key);
  } catch (const std::exception& e) {
    warn(std::string("not stored: ") + e.what());
  }
}

}  // namespace pix2pix::infer
