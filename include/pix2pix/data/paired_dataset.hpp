// Read access to a pix2pix-h5 file: validated on open, pairs read by arbitrary index lists.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pix2pix/data/format.hpp"
#include "pix2pix/data/samples.hpp"

namespace pix2pix::data {

using format::Domain;

// Serial is the default; mpio opens through MPI-IO (parallel HDF5, collective open/close over
// MPI_COMM_WORLD: every rank must open and close together, and MPI must be initialised).
enum class H5Driver { serial, mpio };
H5Driver parse_h5_driver(const std::string& text);  // "serial" | "mpio", else Error naming the option
std::string to_string(H5Driver driver);
bool mpio_driver_available();  // true when built against parallel HDF5

struct SplitInfo {
  std::string name;
  std::int64_t count = 0;    // A images: the pairs of a paired split
  std::int64_t count_b = 0;  // B images (== count when paired)
  bool paired = true;        // false: A and B are independent sets (format version 3)
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t channels_a = 0;
  std::int64_t channels_b = 0;
  bool has_labels = false;
  bool has_names = false;    // names of the pairs, or of A when unpaired
  bool has_names_b = false;  // unpaired: names of B
  bool compressed = false;
  bool checksummed = false;          // A and B chunks carry Fletcher-32 checksums (version 2)
  bool one_image_per_chunk = false;  // A and B chunked [1, H, W, C], as the format asks
  // Each domain's sample type and range: the same in every split (uint8 on [0, 255] before
  // format version 4).
  DomainSamples samples_a, samples_b;
  // Bytes in memory (as read_images returns them; See Note [uint16 in memory]).
  std::int64_t pair_bytes() const { return image_bytes(Domain::A) + image_bytes(Domain::B); }
  std::int64_t image_bytes(Domain domain) const {
    return height * width * channels(domain) * memory_bytes(samples(domain).type);
  }
  std::int64_t channels(Domain domain) const { return domain == Domain::A ? channels_a : channels_b; }
  const DomainSamples& samples(Domain domain) const { return domain == Domain::A ? samples_a : samples_b; }
  std::int64_t images(Domain domain) const { return domain == Domain::A ? count : count_b; }
  std::int64_t stored_bytes() const { return count * image_bytes(Domain::A) + count_b * image_bytes(Domain::B); }
};

// Pairs per read when a split is read block by block: at most `at_most`, and few enough that a
// block of A and B takes about 64 MiB (at least one pair).
std::int64_t pairs_per_read_block(const SplitInfo& info, std::int64_t at_most);

struct FileAttributes {
  std::string format;
  std::int64_t version = 0;
  std::string source;
  std::string pairing;
  std::string created_by;
  bool unpaired = false;  // version 3 with pairing format::kPairingUnpaired: splits say whether they are paired
};

// Pairs read from one split: tensors [n, H, W, C] of each domain's tensor_type(), in the order
// the indices were given.
struct PairBatch {
  torch::Tensor a;
  torch::Tensor b;
  torch::Tensor labels;  // int32 [n], undefined when the split has no labels
};

class PairedDataset {
 public:
  // Opens `path` read-only and validates the whole layout (not the pixel data) before anything
  // is allocated: the declared shapes against the format's limits, and against what the file
  // really stores (See Note [declared vs stored] in h5_paired_dataset.cpp). Throws Error naming the
  // file and the first problem found.
  static std::shared_ptr<PairedDataset> open(const std::string& path, H5Driver driver = H5Driver::serial);
  ~PairedDataset();
  PairedDataset(const PairedDataset&) = delete;
  PairedDataset& operator=(const PairedDataset&) = delete;

  const std::string& path() const { return path_; }
  H5Driver driver() const { return driver_; }
  const FileAttributes& attributes() const { return attributes_; }
  bool has_split(const std::string& split) const { return splits_.count(split) != 0; }
  const SplitInfo& split(const std::string& split) const;  // Error if absent
  std::vector<std::string> split_names() const;            // in format order: train, val, test

  // Reads the pairs at `indices` (any order, repeats allowed; each in [0, count)), one H5Dread
  // per run of consecutive indices. Errors name the file, the dataset and the pairs; Error for an
  // unpaired split (read_images reads its domains).
  PairBatch read(const std::string& split, const std::vector<std::int64_t>& indices) const;
  // The images of one domain at `indices` (each in [0, images(domain))): [n, H, W, C] of the
  // domain's tensor_type() (uint8, int32 for uint16, float32). Float values must be finite: Error
  // naming the pair and the pixel of the first NaN or infinite value, unless refuse_non_finite(false).
  // See Note [non-finite data stops a run].
  torch::Tensor read_images(const std::string& split, Domain domain, const std::vector<std::int64_t>& indices) const;
  // `inspect` reads the values as they are, to report them all.
  void refuse_non_finite(bool refuse) { refuse_non_finite_ = refuse; }
  // Every label of a split (int32 [count]) without reading its images; Error naming the file when
  // the split has no labels or they cannot be read.
  torch::Tensor read_labels(const std::string& split) const;
  // The smallest and largest of them; Error as read_labels, and for an empty split.
  std::pair<std::int32_t, std::int32_t> label_range(const std::string& split) const;
  // The names of those pairs ("" where the split has none). Format 1 names are read in an
  // isolated process (data/h5_isolated_read.hpp).
  // `domain` B: the names of B's images in an unpaired split (a paired split's names are A's).
  std::vector<std::string> read_names(const std::string& split, const std::vector<std::int64_t>& indices,
                                      Domain domain = Domain::A) const;

 private:
  PairedDataset(std::string path, H5Driver driver);
  static std::shared_ptr<PairedDataset> open_validated(const std::string& path, H5Driver driver);
  struct Impl;
  std::string path_;
  H5Driver driver_;
  FileAttributes attributes_;
  std::map<std::string, SplitInfo> splits_;
  std::unique_ptr<Impl> impl_;
  bool refuse_non_finite_ = true;
};

}  // namespace pix2pix::data
