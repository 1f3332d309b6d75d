// A reader of TensorBoard event files written independently of the writer under test
// (metrics/tensorboard_events.cpp): its own bitwise CRC-32C, every record's two masked CRCs
// checked, and the Event fields the trainer writes decoded from the protobuf wire format.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pix2pix::tensorboard_reader {

inline std::uint32_t crc32c_bitwise(const std::string& bytes) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char byte : bytes) {
    c ^= byte;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

inline std::uint32_t masked(const std::string& bytes) {
  const std::uint32_t c = crc32c_bitwise(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

struct Image {
  std::string tag;
  std::uint64_t height = 0, width = 0, colorspace = 0;
  std::string png;
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> scalars;
  std::vector<Image> images;
  std::int64_t session_status = -1;  // SessionLog.status, -1 without one
};

// A protobuf message's fields: (number, wire type, varint value or bytes).
struct Field {
  int number = 0, wire = 0;
  std::uint64_t value = 0;
  std::string bytes;
};

inline std::vector<Field> fields(const std::string& message) {
  std::vector<Field> out;
  size_t at = 0;
  const auto varint = [&]() {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (at >= message.size() || shift > 63) throw std::runtime_error("truncated varint");
      const auto byte = static_cast<unsigned char>(message[at++]);
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
  };
  const auto take = [&](size_t n) {
    if (message.size() - at < n) throw std::runtime_error("truncated field");
    std::string bytes = message.substr(at, n);
    at += n;
    return bytes;
  };
  while (at < message.size()) {
    const std::uint64_t key = varint();
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0)
      f.value = varint();
    else if (f.wire == 1)
      f.bytes = take(8);
    else if (f.wire == 2)
      f.bytes = take(static_cast<size_t>(varint()));
    else if (f.wire == 5)
      f.bytes = take(4);
    else
      throw std::runtime_error("unexpected wire type " + std::to_string(f.wire));
    out.push_back(f);
  }
  return out;
}

inline Event decode(const std::string& payload) {
  Event e;
  for (const Field& f : fields(payload)) {
    if (f.number == 1 && f.wire == 1) std::memcpy(&e.wall_time, f.bytes.data(), 8);
    if (f.number == 2 && f.wire == 0) e.step = static_cast<std::int64_t>(f.value);
    if (f.number == 3 && f.wire == 2) e.file_version = f.bytes;
    if (f.number == 6 && f.wire == 2)
      for (const Field& s : fields(f.bytes))
        if (s.number == 1) e.session_status = static_cast<std::int64_t>(s.value);
    if (f.number != 5 || f.wire != 2) continue;
    for (const Field& value : fields(f.bytes)) {
      if (value.number != 1) continue;
      std::string tag;
      float simple = 0;
      bool has_simple = false;
      Image image;
      bool has_image = false;
      for (const Field& v : fields(value.bytes)) {
        if (v.number == 1) tag = v.bytes;
        if (v.number == 2 && v.wire == 5) std::memcpy(&simple, v.bytes.data(), 4), has_simple = true;
        if (v.number == 4 && v.wire == 2) {
          has_image = true;
          for (const Field& i : fields(v.bytes)) {
            if (i.number == 1) image.height = i.value;
            if (i.number == 2) image.width = i.value;
            if (i.number == 3) image.colorspace = i.value;
            if (i.number == 4) image.png = i.bytes;
          }
        }
      }
      if (has_simple) e.scalars.emplace_back(tag, simple);
      if (has_image) image.tag = tag, e.images.push_back(image);
    }
  }
  return e;
}

// Every record of `path`; std::runtime_error naming the record for a bad CRC or a short record.
inline std::vector<Event> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Event> events;
  size_t at = 0;
  while (at < bytes.size()) {
    const std::string record = "record " + std::to_string(events.size()) + " of " + path;
    if (bytes.size() - at < 12) throw std::runtime_error(record + ": truncated header");
    const std::string length_bytes = bytes.substr(at, 8);
    std::uint64_t length = 0;
    std::uint32_t length_crc = 0, payload_crc = 0;
    std::memcpy(&length, length_bytes.data(), 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    if (length_crc != masked(length_bytes)) throw std::runtime_error(record + ": bad length CRC");
    if (bytes.size() - at - 12 < length + 4) throw std::runtime_error(record + ": truncated payload");
    const std::string payload = bytes.substr(at + 12, static_cast<size_t>(length));
    std::memcpy(&payload_crc, bytes.data() + at + 12 + length, 4);
    if (payload_crc != masked(payload)) throw std::runtime_error(record + ": bad payload CRC");
    events.push_back(decode(payload));
    at += 12 + static_cast<size_t>(length) + 4;
  }
  return events;
}

}  // namespace pix2pix::tensorboard_reader
