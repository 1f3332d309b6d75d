// The features of a dataset's real images, kept between evaluations: they depend only on the data
// file, the split, the domain and the feature network (with how images are fed to it), not on the
// generator, so a second evaluation of the same split reads them instead of recomputing them.
// See Note [what keys the real-feature cache].
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "pix2pix/metrics/feature_network.hpp"

namespace pix2pix::infer {

// $XDG_CACHE_HOME/pix2pix/features, else $HOME/.cache/pix2pix/features; "" when neither is set.
std::string default_feature_cache_dir();

// The text that identifies one set of real features (a few lines; its SHA-256 names the entry).
std::string real_feature_key(const std::string& data_file, const std::string& split, const std::string& domain,
                             const metrics::FeatureFacts& facts);

// The cached float32 [rows, dimensions] features for `key` (`dimensions` 0: any D >= 1), or
// nullopt when there is none. An entry that is damaged (another key, shape or type, NaN or
// infinite values, not a regular file of the folder) gives a warning on stderr naming its file,
// and nullopt: the caller recomputes, and the entry is written anew.
std::optional<torch::Tensor> read_cached_features(const std::string& dir, const std::string& key, std::int64_t rows,
                                                  std::int64_t dimensions = 0);

// Stores `features` for `key` (each file written whole). Never throws: a cache that cannot be
// written (a read-only home, a full disk) gives a warning, and the evaluation goes on.
void write_cached_features(const std::string& dir, const std::string& key, const torch::Tensor& features);

}  // namespace pix2pix::infer
