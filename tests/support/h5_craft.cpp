#include "support/h5_craft.hpp"

#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace pix2pix::fixtures {
namespace {

void write_string_attribute(hid_t file, const char* value, int version) {
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t type = H5Tcopy(H5T_C_S1);
  if (version == 1) {
    H5Tset_size(type, H5T_VARIABLE);
    const hid_t attr = H5Acreate2(file, "format", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, &value);
    H5Aclose(attr);
  } else {
    H5Tset_size(type, std::strlen(value));
    const hid_t attr = H5Acreate2(file, "format", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, value);
    H5Aclose(attr);
  }
  H5Tclose(type);
  H5Sclose(scalar);
}

void write_zeros(hid_t dataset, hid_t type, const std::vector<hsize_t>& dims) {
  hsize_t elements = 1;
  for (hsize_t d : dims) elements *= d;
  if (H5Tis_variable_str(type) > 0) {
    std::vector<std::string> texts;
    std::vector<const char*> pointers;
    for (hsize_t i = 0; i < elements; ++i) texts.push_back("name" + std::to_string(i));
    for (const auto& t : texts) pointers.push_back(t.c_str());
    H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data());
  } else {
    std::vector<char> zeros(elements * H5Tget_size(type), 0);
    H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data());
  }
}

}  // namespace

void craft_h5(const std::string& path, const std::vector<std::string>& groups,
              const std::vector<std::pair<std::string, CraftedDataset>>& datasets, const char* format_attr,
              int version) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (version >= 2) H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  ASSERT_GE(file, 0) << path;
  if (format_attr != nullptr) write_string_attribute(file, format_attr, version);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t vattr = H5Acreate2(file, "version", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(vattr, H5T_NATIVE_INT, &version);
  H5Aclose(vattr);
  H5Sclose(scalar);
  for (const auto& g : groups) H5Gclose(H5Gcreate2(file, g.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  for (const auto& [group, d] : datasets) {
    const hid_t space = H5Screate_simple(static_cast<int>(d.dims.size()), d.dims.data(), nullptr);
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    std::vector<hsize_t> chunk(d.dims.size(), 1);
    if ((d.name == "A" || d.name == "B") && d.dims.size() == 4)
      for (size_t i = 1; i < 4; ++i) chunk[i] = std::max<hsize_t>(1, d.dims[i]);
    H5Pset_chunk(plist, static_cast<int>(chunk.size()), chunk.data());
    const std::string where = group + "/" + d.name;
    const hid_t ds = H5Dcreate2(file, where.c_str(), d.type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    ASSERT_GE(ds, 0) << where;
    if (d.stored) write_zeros(ds, d.type, d.dims);
    H5Dclose(ds);
    H5Pclose(plist);
    H5Sclose(space);
  }
  H5Fclose(file);
}

std::vector<std::pair<std::string, CraftedDataset>> crafted_split(const std::string& group, hsize_t n, hsize_t side) {
  return {{group, {"A", H5T_STD_U8LE, {n, side, side, 3}}}, {group, {"B", H5T_STD_U8LE, {n, side, side, 1}}}};
}

long find_bytes(const std::string& path, const std::string& signature) {
  const std::string bytes = read_file(path);
  const auto at = bytes.find(signature);
  return at == std::string::npos ? -1 : static_cast<long>(at);
}

}  // namespace pix2pix::fixtures
