#include "pix2pix/data/h5_root_attributes.hpp"

#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_io.hpp"
#include "pix2pix/data/h5_isolated_read.hpp"

namespace pix2pix::data {

using format::Domain;

namespace {

[[noreturn]] void invalid(const std::string& path, const std::string& where, const std::string& why) {
  throw Error(path + ": " + where + ": " + why);
}

}  // namespace

FileStrings read_root_strings(const std::string& path, hid_t file, std::int64_t version) {
  const std::vector<std::string> names = {format::kAttrFormat, format::kAttrSource, format::kAttrPairing,
                                          format::kAttrCreatedBy};
  std::vector<std::optional<std::string>> values;
  if (version == 1) {
    values = h5::read_variable_string_attributes_isolated(path, names);
    // Other tools wrote version-1 files with fixed-length attributes too; those are safe to read.
    for (size_t i = 0; i < names.size(); ++i) {
      if (values[i]) continue;
      try {
        values[i] = h5::read_string_attribute(file, names[i]);
      } catch (const Error&) {
      }
    }
  } else {
    for (const std::string& name : names) {
      try {
        values.push_back(h5::read_string_attribute(file, name));
      } catch (const Error& e) {
        invalid(path, "root attribute '" + name + "'", e.what());
      }
    }
  }
  return {values[0], values[1], values[2], values[3]};
}

bool split_is_paired(const std::string& path, hid_t file, const std::string& split) {
  const std::string where = "/" + split;
  h5::Handle group = h5::take_group(H5_CHECK(H5Gopen2(file, split.c_str(), H5P_DEFAULT)));
  std::optional<std::string> read;
  try {
    read = h5::read_string_attribute(group.get(), format::kAttrPairing);
  } catch (const Error& e) {
    invalid(path, where + " attribute '" + format::kAttrPairing + "'", e.what());
  }
  if (!read)
    invalid(path, where,
            std::string("has no string attribute '") + format::kAttrPairing + "' (the file's pairing is \"" +
                format::kPairingUnpaired + "\", so every split must say \"" + format::kSplitPaired + "\" or \"" +
                format::kSplitUnpaired + "\")");
  const std::string pairing = *read;
  if (pairing != format::kSplitPaired && pairing != format::kSplitUnpaired)
    invalid(path, where + " attribute '" + format::kAttrPairing + "'",
            "is \"" + pairing + "\", expected \"" + format::kSplitPaired + "\" or \"" + format::kSplitUnpaired + "\"");
  return pairing == format::kSplitPaired;
}

std::array<std::optional<ValueRange>, 2> read_value_ranges(const std::string& path, hid_t file, std::int64_t version) {
  std::array<std::optional<ValueRange>, 2> declared;
  for (const Domain domain : {Domain::A, Domain::B}) {
    const std::string name = format::range_of(domain);
    std::optional<std::vector<double>> values;
    try {
      values = h5::read_double_array_attribute(file, name, 2);
    } catch (const Error& e) {
      invalid(path, "root attribute '" + name + "'", e.what());
    }
    if (!values) continue;
    if (version < format::kSamplesVersion)
      invalid(path, "root attribute '" + name + "'",
              "value ranges need format version 4; this file says version " + std::to_string(version) +
                  ", whose readers would ignore it");
    const ValueRange range{(*values)[0], (*values)[1]};
    check_range(range, path + ": root attribute '" + name + "'");
    declared[domain == Domain::A ? 0 : 1] = range;
  }
  return declared;
}

}  // namespace pix2pix::data
