#include "pix2pix/data/sample_census.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/image_ops.hpp"

namespace pix2pix::data {

RangeRequest parse_range_request(const std::string& text, const std::string& option) {
  RangeRequest request;
  if (text == "auto")
    request.automatic = true;
  else
    request.given = parse_range(text, option);
  return request;
}

DomainCensus::DomainCensus(std::string domain, std::string option, RangeRequest request)
    : domain_(std::move(domain)), option_(std::move(option)), request_(request) {}

std::string DomainCensus::lower_domain() const {
  std::string text = domain_;
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

namespace {
std::string describe_samples(SampleType type, int channels) {
  return to_string(type) + ", " + std::to_string(channels) + (channels == 1 ? " channel" : " channels");
}
}  // namespace

void DomainCensus::declare(const cv::Mat& image, const std::string& file) {
  if (first_file_) return;
  const std::optional<SampleType> type = sample_type_of(image.depth());
  if (!type) throw Error(file + ": an image of a type prepare does not store");
  first_file_ = file;
  type_ = *type;
  channels_ = image.channels();
}

void DomainCensus::add(const cv::Mat& image, const std::string& file) {
  const std::optional<SampleType> type = sample_type_of(image.depth());
  if (!type) throw Error(file + ": an image of a type prepare does not store");
  if (!first_file_) {
    first_file_ = file;
    type_ = *type;
    channels_ = image.channels();
  } else if (*type != type_ || image.channels() != channels_) {
    throw Error(file + ": " + describe_samples(*type, image.channels()) + ", but domain " + domain_ +
                "'s first image (" + *first_file_ + ") is " + describe_samples(type_, channels_) +
                ": a domain holds one sample type and channel count (convert the files" +
                (image.channels() != channels_ ? ", or choose the channels with --channels-" + lower_domain() : "") +
                ")");
  }
  const cv::Mat values = image.reshape(1);
  if (const std::string where = first_non_finite(image); !where.empty())
    throw Error(file + ": holds NaN or infinite values (the first at " + where + "); domain " + domain_ +
                " must be finite");
  double lo = 0, hi = 0;
  cv::minMaxLoc(values, &lo, &hi);
  min_ = counted_ ? std::min(min_, lo) : lo;
  max_ = counted_ ? std::max(max_, hi) : hi;
  counted_ = true;
  if (request_.given) {
    cv::Mat inside;
    cv::inRange(values, request_.given->lo, request_.given->hi, inside);
    outside_ += static_cast<std::int64_t>(values.total()) - cv::countNonZero(inside);
  }
}

bool DomainCensus::measured() const {
  return request_.automatic || (!request_.given && !natural_range(type_));
}

ValueRange DomainCensus::range() const {
  if (request_.given) return *request_.given;
  if (!measured()) return *natural_range(type_);
  const ValueRange range{min_, max_};
  if (!(range.lo < range.hi))
    throw Error("domain " + domain_ + ": every value is " + std::to_string(min_) +
                ", so its range cannot be measured; give it with " + option_ + " lo,hi");
  return range;
}

std::string DomainCensus::describe() const {
  std::string text = describe_samples(type_, channels_) + ", on " + to_string(range());
  if (request_.given)
    text += " (" + option_ + ")";
  else if (measured())
    text += request_.automatic ? " (" + option_ + " auto: measured)"
                               : " (measured: float data has no natural range; " + option_ + " sets one)";
  if (outside_ > 0) text += "; " + std::to_string(outside_) + " values outside it (they map beyond [-1, 1])";
  return text;
}

}  // namespace pix2pix::data
