// What one dataset's type, creation properties and storage say, for the reader's validation:
// raw HDF5 queries that PairedDataset::open combines with the format's rules.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::data::h5 {

// The image sample type of `dataset` (unsigned 8 or 16 bits, 32-bit float; either byte order);
// nullopt for any other type.
std::optional<data::SampleType> sample_type(hid_t dataset);
// A sample type's HDF5 types (See Note [the sample-type table]): in a file we write (little-
// endian), its values as stored in this machine's order (what a writer hands HDF5), and what a
// read converts them to for a tensor (uint16 to int32: See Note [uint16 in memory]).
hid_t file_type(data::SampleType type);
hid_t stored_native_type(data::SampleType type);
hid_t memory_type(data::SampleType type);
std::string describe_type(hid_t dataset);                 // "uint8", "float32", "string", ...
std::string dims_text(const std::vector<hsize_t>& dims);  // "[4, 8, 8, 3]"
// Chunked as [1, dims[1:]]: one image per chunk.
bool is_one_image_per_chunk(hid_t dataset, const std::vector<hsize_t>& dims);
bool has_filter(hid_t dataset, H5Z_filter_t filter);

// Why the dataset does not store what its shape `dims` declares, within a file of `file_size`
// bytes (See Note [declared vs stored] in h5_layout.cpp); nullopt when it does.
std::optional<std::string> storage_problem(hid_t dataset, const std::vector<hsize_t>& dims, std::int64_t file_size);

}  // namespace pix2pix::data::h5
