// What `inspect` reports about a pix2pix-h5 file: pixel statistics per split, and a full check
// that reads every chunk.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pix2pix/data/paired_dataset.hpp"

namespace pix2pix::data {

struct PixelStats {  // of the stored values, in the domain's own units
  double mean = 0, std = 0;
  double min = 0, max = 0;
};

struct SplitStats {
  std::int64_t pairs_read = 0;     // how many pairs (unpaired: A images) the statistics cover
  std::int64_t images_b_read = 0;  // how many B images (== pairs_read when paired)
  PixelStats a, b;
  std::map<std::int32_t, std::int64_t> label_counts;
};

// Statistics over `sample` pairs spread evenly over the split (all when sample <= 0 or >= N);
// over `sample` images of each domain when the split is unpaired.
SplitStats compute_split_stats(const PairedDataset& dataset, const std::string& split, std::int64_t sample);

// Reads every pair, label and name of every split and checks what open() cannot see without
// reading: the data is readable (no corrupt chunk), float values are finite, labels are >= 0, the chunk layout is one
// image per chunk (an unpaired split: every image of A and of B, and both name lists). Returns the problems found
// (empty when the file is valid), stopping at the first unreadable block. With `parts` > 1 only the blocks b with b %
// parts == part are read, so that the ranks of a job can check one file together.
// With `outside`: the values of each domain outside its range are added to it (out-of-range
// values are not an error: they map beyond [-1, 1]; NaN or infinite float values are a problem).
struct ValuesOutside {
  std::int64_t a = 0, b = 0;
};
std::vector<std::string> check_dataset(const PairedDataset& dataset, int part = 0, int parts = 1,
                                       ValuesOutside* outside = nullptr);

}  // namespace pix2pix::data
