#include "pix2pix/metrics/tensorboard_events.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"

// Note [TensorBoard's file format]
// An event file is a sequence of TFRecords: the payload length as a little-endian uint64, the
// masked CRC-32C of those 8 bytes, the payload, the masked CRC-32C of the payload (mask:
// rotate right by 15, add 0xa282ead8). Each payload is a serialized tensorflow.Event protobuf:
// wall_time (1, double), step (2, int64), file_version (3, "brain.Event:2", in the first record),
// summary (5: Summary { repeated Value value = 1 }; Value { tag = 1, simple_value = 2 (float),
// image = 4: Image { height = 1, width = 2, colorspace = 3, encoded_image_string = 4 } }) and
// session_log (6: SessionLog { status = 1, START = 1 }). The few fields needed are written with
// the protobuf wire format by hand: linking TensorFlow's or TensorBoard's .proto files for five
// messages would cost more than the 40 lines below, and the test reads the files back with a
// reader of its own that checks every CRC and decodes every field.

namespace pix2pix::metrics {
namespace {

namespace fs = std::filesystem;

std::array<std::uint32_t, 256> crc32c_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reflected Castagnoli
    table[i] = c;
  }
  return table;
}

// Protobuf wire format: a field key is (number << 3 | wire type).
void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire) {
  varint(out, static_cast<std::uint64_t>(field << 3 | wire));
}
void fixed(std::string& out, const void* bytes, size_t n) {
  out.append(static_cast<const char*>(bytes), n);
}
void length_delimited(std::string& out, int field, const std::string& bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

// An Event with wall_time and step, and `rest` (its other fields, encoded) after them.
std::string event(std::int64_t step, const std::string& rest) {
  std::string e;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  key(e, 1, 1);
  fixed(e, &now, 8);
  key(e, 2, 0);
  varint(e, static_cast<std::uint64_t>(step));
  return e + rest;
}

std::string tag_of(const std::string& name) {
  if (name.rfind("loss_", 0) == 0) return "loss/" + name.substr(5);
  if (name.rfind("val_", 0) == 0) return "val/" + name.substr(4);
  return "train/" + name;
}

}  // namespace

std::uint32_t crc32c(const void* data, size_t n) {
  static const auto table = crc32c_table();
  std::uint32_t c = 0xffffffffu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::uint32_t masked_crc32c(const void* data, size_t n) {
  const std::uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardEvents::TensorBoardEvents(const std::string& dir, std::int64_t resumed_at) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("--tensorboard: cannot create " + dir + ": " + ec.message());
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // TensorBoard reads every events.out.tfevents.* file of a folder; the pid, and a count where a
  // file of this second and process exists, keep each writer's file its own.
  const std::string stem =
      "events.out.tfevents." + std::to_string(seconds) + "." + host + "." + std::to_string(::getpid());
  for (int n = 0;; ++n) {
    path_ = (fs::path(dir) / (stem + (n ? "." + std::to_string(n) : "") + ".pix2pix")).string();
    if (!fs::exists(path_, ec)) break;
  }
  std::string version;
  length_delimited(version, 3, "brain.Event:2");
  write(event(0, version));
  if (resumed_at >= 0) {
    std::string start, log;
    key(log, 1, 0);
    varint(log, 1);  // SessionLog.START
    length_delimited(start, 6, log);
    write(event(resumed_at, start));
  }
}

void TensorBoardEvents::write(const std::string& payload) {
  std::string record;
  const std::uint64_t length = payload.size();
  fixed(record, &length, 8);  // little-endian on every host this builds for (x86-64, aarch64)
  const std::uint32_t length_crc = masked_crc32c(&length, 8),
                      payload_crc = masked_crc32c(payload.data(), payload.size());
  fixed(record, &length_crc, 4);
  record += payload;
  fixed(record, &payload_crc, 4);
  append_to_file(path_, record);
}

void TensorBoardEvents::scalars(std::int64_t step, const std::vector<std::string>& names,
                                const std::vector<double>& values) {
  std::string summary;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    std::string value;
    length_delimited(value, 1, tag_of(names[i]));
    const float f = static_cast<float>(values[i]);
    key(value, 2, 5);
    fixed(value, &f, 4);
    length_delimited(summary, 1, value);
  }
  std::string rest;
  length_delimited(rest, 5, summary);
  write(event(step, rest));
}

void TensorBoardEvents::epoch(const EpochMetrics& m) {
  const auto names = m.columns(), texts = m.values();
  std::vector<std::string> tags;
  std::vector<double> values;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] != "epoch" && names[i] != "step") {
      tags.push_back(names[i]);
      values.push_back(texts[i] == "null" ? std::nan("") : std::strtod(texts[i].c_str(), nullptr));
    }
  scalars(m.epoch, tags, values);
}

void TensorBoardEvents::image(std::int64_t step, const std::string& tag, const torch::Tensor& hwc) {
  const auto pixels = hwc.to(torch::kCPU, torch::kUInt8).contiguous();
  const int h = static_cast<int>(pixels.size(0)), w = static_cast<int>(pixels.size(1)),
            c = static_cast<int>(pixels.size(2));
  cv::Mat mat(h, w, CV_8UC(c), pixels.data_ptr<std::uint8_t>()), bgr;
  if (c == 3)
    cv::cvtColor(mat, bgr, cv::COLOR_RGB2BGR);
  else
    bgr = mat;
  std::vector<std::uint8_t> png;
  if (!cv::imencode(".png", bgr, png)) throw Error("--tensorboard: cannot encode the " + tag + " image as PNG");
  std::string image;
  key(image, 1, 0);
  varint(image, static_cast<std::uint64_t>(h));
  key(image, 2, 0);
  varint(image, static_cast<std::uint64_t>(w));
  key(image, 3, 0);
  varint(image, static_cast<std::uint64_t>(c));
  length_delimited(image, 4, std::string(png.begin(), png.end()));
  std::string value;
  length_delimited(value, 1, tag);
  length_delimited(value, 4, image);
  std::string summary, rest;
  length_delimited(summary, 1, value);
  length_delimited(rest, 5, summary);
  write(event(step, rest));
}

}  // namespace pix2pix::metrics
