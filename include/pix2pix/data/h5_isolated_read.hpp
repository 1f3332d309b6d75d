// Format version 1 stores strings variable-length: their bytes live in HDF5's global heap, which
// has no checksum, and HDF5 1.10 follows a damaged heap into a crash (SIGSEGV in H5HG_read).
// Such strings are read here, in a forked child process that opens the file on its own (serial
// driver), sends the strings back through a pipe and exits: a damaged heap ends the child, and
// this process reports it as an Error naming the file. Version 2 files have no such strings.
// Must not run while another thread of this process is inside HDF5 (See Note [one reader thread]).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pix2pix::data::h5 {

// The root attributes `names`, each nullopt when absent or not a variable-length string.
std::vector<std::optional<std::string>> read_variable_string_attributes_isolated(const std::string& path,
                                                                                 const std::vector<std::string>& names);

// Rows `rows` (sorted, unique) of the one-dimensional variable-length string dataset `dataset`.
std::vector<std::string> read_variable_strings_isolated(const std::string& path, const std::string& dataset,
                                                        const std::vector<std::int64_t>& rows);

}  // namespace pix2pix::data::h5
