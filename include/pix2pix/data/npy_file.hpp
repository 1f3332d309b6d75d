// NumPy's .npy format (format versions 1.0 to 3.0, C order, little-endian): the arrays anyone can
// read with numpy.load. `evaluate --dump-features` writes its feature matrices as .npy, and the
// cache of real-set features keeps them so.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pix2pix::data {

// `array` (uint8, uint16, float32 or float64, any shape, on any device) as `path`, written whole
// (atomic_file). Error naming the file for another type.
void write_npy(const std::string& path, const torch::Tensor& array);

// The same for raw values: `descr` a NumPy type ("|u1", "<u2", "<f4"), `data` the C-order bytes
// of an array of `shape`.
void write_npy_bytes(const std::string& path, const std::string& descr, const std::vector<std::int64_t>& shape,
                     const void* data, std::size_t bytes);

// The array of `path` on the CPU, of the file's type (uint16 as int32: LibTorch 1.13 has no
// uint16). Error naming the file when it is not a .npy file, is Fortran-ordered or big-endian, has
// a type other than those above, or holds fewer bytes than its shape says.
torch::Tensor read_npy(const std::string& path);

}  // namespace pix2pix::data
