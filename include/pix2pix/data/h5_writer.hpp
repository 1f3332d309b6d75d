// Writes a pix2pix-h5 file split by split, one pair at a time (see data/format.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "pix2pix/data/h5_io.hpp"

namespace pix2pix::data {

struct SplitLayout {
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t channels_a = 0;
  std::int64_t channels_b = 0;
  bool with_labels = false;
  bool with_names = true;
  std::int64_t name_bytes = 1;  // the longest name of the split, in bytes (names are fixed-length)
};

class PairedFileWriter {
 public:
  // Creates (truncates) `path`. `compression` is the deflate level, 0 = none.
  PairedFileWriter(const std::string& path, int compression);
  ~PairedFileWriter();
  PairedFileWriter(const PairedFileWriter&) = delete;
  PairedFileWriter& operator=(const PairedFileWriter&) = delete;

  void write_root_attributes(const std::string& source, const std::string& pairing, const std::string& created_by);

  // Starts a split; the previous one, if any, is finished first.
  void begin_split(const std::string& split, const SplitLayout& layout);
  // Appends one pair: `a` holds H*W*channels_a bytes (HWC), `b` H*W*channels_b, `name` at most
  // the layout's name_bytes. Pairs are buffered and written kRowsPerWrite at a time (one
  // H5Dwrite per dataset per block).
  void append(const std::uint8_t* a, const std::uint8_t* b, std::int32_t label, const std::string& name);
  // Trims the datasets to the pairs written. Returns that count.
  std::int64_t end_split();
  // Finishes the open split and closes the file; further calls are errors.
  void close();

  const std::string& path() const { return path_; }

 private:
  void grow_to(std::int64_t capacity);
  void flush_rows();

  std::string path_;
  int compression_;
  h5::Handle file_;
  h5::Handle group_;
  h5::Handle a_, b_, labels_, names_;
  SplitLayout layout_;
  std::int64_t count_ = 0;     // pairs appended (written + buffered)
  std::int64_t written_ = 0;   // pairs on disk
  std::int64_t capacity_ = 0;  // current extent of the datasets
  std::vector<std::uint8_t> buffer_a_, buffer_b_;
  std::vector<std::int32_t> buffer_labels_;
  std::vector<char> buffer_names_;  // name_bytes per pair, null-padded
};

}  // namespace pix2pix::data
