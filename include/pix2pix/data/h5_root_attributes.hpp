// The root and split-group attributes of a pix2pix-h5 file as PairedDataset::open reads them:
// the strings (isolated for format version 1), a split's pairing (version 3) and the domains'
// value ranges (version 4). Errors name the file and the attribute.
#pragma once

#include <hdf5.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::data {

struct FileStrings {
  std::optional<std::string> format, source, pairing, created_by;
};
// The root string attributes: fixed-length in version 2; variable-length in version 1, read in
// an isolated process (data/h5_isolated_read.hpp).
FileStrings read_root_strings(const std::string& path, hid_t file, std::int64_t version);

// Version 3, root pairing "unpaired": whether `split`'s group says it is paired.
bool split_is_paired(const std::string& path, hid_t file, const std::string& split);

// range_A and range_B (index 0 and 1) where the file declares them: checked (finite, lo < hi)
// and refused in a file older than version 4.
std::array<std::optional<ValueRange>, 2> read_value_ranges(const std::string& path, hid_t file, std::int64_t version);

}  // namespace pix2pix::data
