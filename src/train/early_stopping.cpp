// Note [patience counts smoothed evaluations]: before `window` evaluations there is no smoothed
// value to compare, so those evaluations neither improve nor use up patience.
#include "pix2pix/train/early_stopping.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>

#include "pix2pix/common/error.hpp"

namespace pix2pix::train {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string hex(double v) {
  char text[64];
  std::snprintf(text, sizeof(text), "%a", v);
  return text;
}
}  // namespace

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(options), best_smoothed_(kNaN) {
  if (options_.window < 1) throw UsageError("--es-window must be at least 1");
  if (options_.patience < 1) throw UsageError("--es-patience must be at least 1");
  if (!(options_.min_delta >= 0)) throw UsageError("--es-min-delta must be >= 0");
}

Decision EarlyStopping::update(std::int64_t epoch, double raw) {
  Decision d;
  ++evaluations_;
  d.non_finite = !std::isfinite(raw);
  recent_.push_back(d.non_finite ? kNaN : raw);
  if (static_cast<std::int64_t>(recent_.size()) > options_.window) recent_.pop_front();
  d.smoothed = kNaN;
  if (static_cast<std::int64_t>(recent_.size()) == options_.window) {
    d.smoothed = std::accumulate(recent_.begin(), recent_.end(), 0.0) / static_cast<double>(options_.window);
    const bool finite = std::isfinite(d.smoothed);
    const bool beats = options_.lower_is_better ? d.smoothed < best_smoothed_ - options_.min_delta
                                                : d.smoothed > best_smoothed_ + options_.min_delta;
    if (finite && (std::isnan(best_smoothed_) || beats)) {
      best_smoothed_ = d.smoothed;
      best_epoch_ = epoch;
      since_best_ = 0;
      d.improved = true;
    } else {
      ++since_best_;
    }
  }
  d.best_epoch = best_epoch_;
  d.best_smoothed = best_smoothed_;
  if (options_.enabled && since_best_ >= options_.patience) {
    d.stop = true;
    d.reason = "early stopping: smoothed " + options_.metric + " did not improve for " +
               std::to_string(options_.patience) + " evaluations (best " + std::to_string(best_smoothed_) +
               options_.unit + " at epoch " + std::to_string(best_epoch_) + ")";
  }
  return d;
}

std::string EarlyStopping::serialize() const {
  std::ostringstream out;
  out << "es1 " << evaluations_ << " " << since_best_ << " " << best_epoch_ << " " << hex(best_smoothed_) << " "
      << recent_.size();
  for (double v : recent_) out << " " << hex(v);
  return out.str();
}

void EarlyStopping::restore(const std::string& text) {
  std::istringstream in(text);
  std::string tag, best;
  size_t count = 0;
  in >> tag >> evaluations_ >> since_best_ >> best_epoch_ >> best >> count;
  if (!in || tag != "es1" || count > static_cast<size_t>(options_.window))
    throw Error("early-stopping state is damaged or from another --es-window: '" + text.substr(0, 80) + "'");
  best_smoothed_ = std::strtod(best.c_str(), nullptr);
  recent_.clear();
  for (size_t i = 0; i < count; ++i) {
    std::string v;
    if (!(in >> v)) throw Error("early-stopping state is truncated");
    recent_.push_back(std::strtod(v.c_str(), nullptr));
  }
}

}  // namespace pix2pix::train
