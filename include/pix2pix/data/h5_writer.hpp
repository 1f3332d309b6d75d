// Writes a pix2pix-h5 file split by split, one pair at a time (see data/format.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_io.hpp"
#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::data {

struct SplitLayout {
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t channels_a = 0;
  std::int64_t channels_b = 0;
  bool with_labels = false;
  bool with_names = true;
  std::int64_t name_bytes = 1;  // the longest name of the split, in bytes (names are fixed-length)
  // false: an unpaired split (A and B appended separately, no labels); only in a file whose
  // root pairing is format::kPairingUnpaired.
  bool paired = true;
  std::int64_t name_bytes_b = 1;  // unpaired: the longest name of B
  // Each domain's sample type: the same in every split of a file. Not uint8, or channels other
  // than 1 and 3, make the file version 4.
  SampleType type_a = SampleType::uint8;
  SampleType type_b = SampleType::uint8;
};

class PairedFileWriter {
 public:
  // Creates (truncates) `path`. `compression` is the deflate level, 0 = none.
  PairedFileWriter(const std::string& path, int compression);
  ~PairedFileWriter();
  PairedFileWriter(const PairedFileWriter&) = delete;
  PairedFileWriter& operator=(const PairedFileWriter&) = delete;

  // `pairing` format::kPairingUnpaired makes the file version 3 (it may then hold unpaired
  // splits); any other text describes how A relates to B in a version 2 file. The version is
  // written by close(), once the splits and ranges say whether the file needs version 4.
  void write_root_attributes(const std::string& source, const std::string& pairing, const std::string& created_by);
  // Each domain's value range (format::kAttrRangeA/B), written by close(). A range other than
  // [0, 255] makes the file version 4; a float32 domain needs one.
  void set_value_ranges(const ValueRange& a, const ValueRange& b);

  // Starts a split; the previous one, if any, is finished first.
  void begin_split(const std::string& split, const SplitLayout& layout);
  // Appends one pair: `a` holds H*W*channels_a values of type_a (HWC, native byte order), `b`
  // H*W*channels_b of type_b, `name` at most the layout's name_bytes. Pairs are buffered and
  // written kRowsPerWrite at a time (one H5Dwrite per dataset per block).
  void append(const void* a, const void* b, std::int32_t label, const std::string& name);
  // Appends one image to domain A or B of an unpaired split (H*W*channels values of its type).
  void append_image(format::Domain domain, const void* image, const std::string& name);
  // Trims the datasets to the rows written. Returns the count of A (pairs when paired).
  std::int64_t end_split();
  // Finishes the open split and closes the file; further calls are errors.
  void close();

  const std::string& path() const { return path_; }

 private:
  // One extendible dataset of the open split: rows buffered and written kRowsPerWrite at a time
  // (one H5Dwrite per block), the extent grown geometrically and trimmed at the end.
  struct Column {
    h5::Handle dataset;
    h5::Handle string_type;  // fixed-length string columns: their memory type
    hid_t native_type = -1;  // the others'
    size_t row_bytes = 0;
    std::vector<std::uint8_t> buffer;
    std::int64_t count = 0;     // rows appended (written + buffered)
    std::int64_t written = 0;   // rows on disk
    std::int64_t capacity = 0;  // current extent
  };
  void append_row(Column& column, const void* row);
  void append_name(Column& column, const std::string& name, std::int64_t name_bytes);
  void flush(Column& column);
  void require_split(bool paired) const;

  std::string path_;
  int compression_;
  bool unpaired_file_ = false;
  bool needs_samples_version_ = false;  // a split or a range that only format version 4 expresses
  std::optional<ValueRange> range_a_, range_b_;
  std::optional<SampleType> type_a_, type_b_;  // of the first split
  h5::Handle file_;
  h5::Handle group_;
  SplitLayout layout_;
  Column a_, b_, labels_, names_, names_b_;
};

}  // namespace pix2pix::data
