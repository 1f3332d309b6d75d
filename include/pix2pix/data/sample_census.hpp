// What prepare learns about one domain while it writes it: every image must have the sample type
// and channel count of the domain's first one, float data must be finite, and the values seen
// decide (--range-X auto) or are checked against (--range-X lo,hi) the range stored for it.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::data {

// --range-a / --range-b: "auto" (measure the data), "lo,hi", or unset (the sample type's natural
// range; float32 data is then measured, and prepare says so).
struct RangeRequest {
  bool automatic = false;
  std::optional<ValueRange> given;
};
RangeRequest parse_range_request(const std::string& text, const std::string& option);  // UsageError naming option

class DomainCensus {
 public:
  DomainCensus(std::string domain, std::string option, RangeRequest request);

  // Counts `image`, decoded from `file`. Error naming `file` (and the domain's first file) when its
  // sample type or channel count differs from the first image's, or float values are NaN or infinite.
  void add(const cv::Mat& image, const std::string& file);

  // Takes `image`'s sample type and channels as the domain's, without counting its values (it
  // is added later, in its turn); nothing when the domain already has a first image.
  void declare(const cv::Mat& image, const std::string& file);
  bool seen() const { return first_file_.has_value(); }
  SampleType type() const { return type_; }
  int channels() const { return channels_; }
  // The range to store, once every image was added: the given one, the measured one (auto, or
  // float data without a request), or the type's natural one. Error when a measured range is
  // empty (every value the same).
  ValueRange range() const;
  bool measured() const;
  std::int64_t values_outside() const { return outside_; }  // of a given range
  // "uint16, 1 channel, on [0, 65535]", with how the range was chosen and what fell outside it.
  std::string describe() const;

 private:
  std::string domain_, option_;
  RangeRequest request_;
  std::optional<std::string> first_file_;
  SampleType type_ = SampleType::uint8;
  int channels_ = 0;
  std::string lower_domain() const;  // "a": the letter of the domain's options
  bool counted_ = false;
  double min_ = 0, max_ = 0;
  std::int64_t outside_ = 0;
};

}  // namespace pix2pix::data
