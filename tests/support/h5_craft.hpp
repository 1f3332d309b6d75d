// Hand-made HDF5 files for reader tests: any layout, type and declared shape, written with the raw
// HDF5 API so that files the library would never write (broken, hostile, or of format version 1)
// can be opened by it.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>
#include <vector>

namespace pix2pix::fixtures {

struct CraftedDataset {
  std::string name;  // "A", "B", "labels", "names"
  hid_t type;        // file type; variable-length strings are written as "name0", "name1", ...
  std::vector<hsize_t> dims;
  bool stored = true;  // write every element (zeros), so every chunk exists; false: declare only
};

// Root attributes `format` (absent when nullptr; variable-length in version 1, fixed-length
// otherwise) and `version`, the groups, then the datasets (chunked one element per chunk,
// except that A and B get one image per chunk).
void craft_h5(const std::string& path, const std::vector<std::string>& groups,
              const std::vector<std::pair<std::string, CraftedDataset>>& datasets,
              const char* format_attr = "pix2pix-h5", int version = 2);

// A valid split: A uint8 [n, 8, 8, 3], B uint8 [n, 8, 8, 1].
std::vector<std::pair<std::string, CraftedDataset>> crafted_split(const std::string& group, hsize_t n = 4,
                                                                  hsize_t side = 8);

// The byte offset of the first occurrence of `signature` in the file at `path` (-1: none).
long find_bytes(const std::string& path, const std::string& signature);

}  // namespace pix2pix::fixtures
