// prepare: list the source, decode/resize/derive blocks of pairs on worker threads, append
// them in source order (so the file is the same whatever --threads), then rename into place.
#include "pix2pix/data/prepare.hpp"

#include <unistd.h>

#include <opencv2/core.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/common/random.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "pix2pix/data/prepare_loading.hpp"
#include "pix2pix/data/sample_census.hpp"

namespace fs = std::filesystem;

namespace pix2pix::data {
namespace {

constexpr int kPairsPerThreadPerBlock = 64;

// Removes the temporary file unless the run committed it.
struct TemporaryFile {
  std::string path;
  bool committed = false;
  ~TemporaryFile() {
    if (!committed && !path.empty()) {
      std::error_code ec;
      fs::remove(path, ec);
    }
  }
};

void check_output(const PrepareOptions& o) {
  if (o.out.empty()) throw UsageError("--out is required");
  std::error_code ec;
  const fs::path out(o.out);
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) throw Error("--out " + o.out + ": folder " + dir.string() + " does not exist");
  if (fs::exists(out, ec)) {
    if (fs::is_directory(out, ec)) throw Error("--out " + o.out + ": is a folder");
    if (!o.overwrite) throw Error("--out " + o.out + ": file exists; pass --overwrite to replace it");
  }
  if (access(dir.c_str(), W_OK) != 0)
    throw Error("--out " + o.out + ": folder " + dir.string() + " is not writable: " + std::strerror(errno));
}

void check_derive_params(const DeriveParams& p) {
  if (!(p.canny_low >= 0 && p.canny_high >= p.canny_low))
    throw UsageError("--canny-low and --canny-high must satisfy 0 <= low <= high");
  if (!(p.blur_sigma > 0)) throw UsageError("--blur-sigma must be > 0");
  if (p.downsample_factor < 1) throw UsageError("--downsample-factor must be >= 1");
  if (!(p.noise_sigma >= 0)) throw UsageError("--noise-sigma must be >= 0");
  if (!(p.mask_fraction > 0 && p.mask_fraction <= 1)) throw UsageError("--mask-fraction must be in (0, 1]");
}

// Every file the plan reads: what --out must not be.
std::vector<std::string> input_files(const SourcePlan& plan) {
  std::vector<std::string> files = plan.source_files;
  for (const auto* splits : {&plan.splits, &plan.splits_b})
    for (const auto& [split, jobs] : *splits)
      for (const PairJob& job : jobs)
        for (const std::string* path : {&job.path_a, &job.path_b})
          if (!path->empty()) files.push_back(*path);
  return files;
}

// Names are stored fixed-length: the split's longest, in bytes.
std::int64_t longest_name(const std::vector<PairJob>& jobs) {
  size_t longest = 1;
  for (const PairJob& job : jobs) longest = std::max(longest, job.name.size());
  if (longest > static_cast<size_t>(format::kMaxNameBytes))
    throw Error("a source name is " + std::to_string(longest) + " bytes long, more than the format's " +
                std::to_string(format::kMaxNameBytes));
  return static_cast<std::int64_t>(longest);
}

std::string describe_pairing(const SourcePlan& plan, const PrepareOptions& o) {
  switch (plan.kind) {
    case SourceKind::aligned:
      return "aligned: A is the left half, B the right half of each image";
    case SourceKind::paired:
      return "paired: A and B are files of the same name in two folders";
    case SourceKind::images:
      return "derived: B is the image, A = " + to_string(o.derive) + "(B)";
    case SourceKind::unpaired:
      return format::kPairingUnpaired;
  }
  return "";
}

}  // namespace

std::int64_t PrepareSummary::pairs() const {
  std::int64_t n = 0;
  for (const auto& [name, s] : splits) n += s.pairs;
  return n;
}

std::int64_t PrepareSummary::images() const {
  std::int64_t n = 0;
  for (const auto& [name, s] : splits) n += s.paired ? 2 * s.pairs : s.pairs + s.images_b;
  return n;
}

PrepareSummary run_prepare(const PrepareOptions& o) {
  if (o.source.kind == SourceKind::images && !o.derive_enabled)
    throw UsageError("--images needs --derive edges|gray|blur|downsample|noise|mask");
  if (o.source.kind == SourceKind::unpaired && o.source.labels)
    throw UsageError("--labels: labels go with pairs; an unpaired file (--unpaired, --cyclegan-layout) stores none");
  if (o.size < 0 || o.size > format::kMaxSide)
    throw UsageError("--size must be in 0.." + std::to_string(format::kMaxSide));
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) throw UsageError("--val-fraction must be in [0, 1)");
  if (!(o.max_bad >= 0 && o.max_bad <= 1)) throw UsageError("--max-bad must be in [0, 1]");
  if (o.threads < 1) throw UsageError("--threads must be at least 1");
  if (o.compression < 0 || o.compression > 9) throw UsageError("--compression must be 0-9");
  check_derive_params(o.derive_params);
  check_output(o);

  PrepareSummary summary;
  const auto started = std::chrono::steady_clock::now();
  SourcePlan plan = plan_sources(o.source);
  refuse_output_among_inputs("--out", o.out, input_files(plan));
  carve_validation(plan, o.val_fraction, o.seed);
  if (plan.splits[format::kVal].empty() || (!plan.is_paired(format::kVal) && plan.splits_b[format::kVal].empty()))
    throw Error("no validation pairs: the source has no val split and --val-fraction " +
                std::to_string(o.val_fraction) + " of " + std::to_string(plan.splits[format::kTrain].size()) +
                " training " + (plan.is_paired(format::kTrain) ? "pairs" : "A images") +
                " leaves none; raise --val-fraction or add a val folder");
  const Channels channels = resolve_channels(o, plan);
  summary.unmatched = plan.unmatched;
  summary.ignored = plan.ignored;

  std::int64_t total_jobs = 0;
  for (const auto* splits : {&plan.splits, &plan.splits_b})
    for (const auto& [split, jobs] : *splits) total_jobs += static_cast<std::int64_t>(jobs.size());
  const auto allowed_bad = static_cast<std::int64_t>(o.max_bad * static_cast<double>(total_jobs));

  const fs::path out(o.out);
  TemporaryFile temp;
  temp.path = (out.has_parent_path() ? out.parent_path() : fs::path(".")) /
              ("." + out.filename().string() + ".tmp-" + std::to_string(getpid()));
  PairedFileWriter writer(temp.path, o.compression);
  writer.write_root_attributes(plan.description, describe_pairing(plan, o), o.created_by);

  DomainCensus census_a("A", "--range-a", o.range_a), census_b("B", "--range-b", o.range_b);
  Progress progress("prepare " + o.out, total_jobs, stderr, o.progress);
  std::int64_t height = o.size, width = o.size;
  for (size_t split_index = 0; split_index < format::kSplits.size(); ++split_index) {
    const char* split_name = format::kSplits[split_index];
    auto it = plan.splits.find(split_name);
    if (it == plan.splits.end() || it->second.empty()) continue;
    const bool paired = plan.is_paired(split_name);
    // What this split writes: its pairs, or the images of A then those of B.
    std::vector<std::pair<const std::vector<PairJob>*, std::optional<format::Domain>>> lists;
    if (paired) {
      lists.emplace_back(&it->second, std::nullopt);
    } else {
      lists.emplace_back(&it->second, format::Domain::A);
      lists.emplace_back(&plan.splits_b.at(split_name), format::Domain::B);
    }
    SplitSummary& written = summary.splits[split_name];
    written.paired = paired;
    const std::uint64_t split_seed = mix_seed(o.seed, split_index);
    // An unpaired split writes all of A before B, but its datasets are created with B's sample
    // type: B's first decodable image says what it is before A's are written.
    if (!paired && !census_b.seen()) {
      for (const PairJob& job : *lists[1].first) {
        throw_if_interrupted("preparing " + o.out + " (it was not written)");
        const LoadedPair probe = load_single(job, o, channels.b, channels.given_b);
        if (probe.error.empty()) {
          census_b.declare(probe.a, job.path_a);
          break;
        }
      }
      if (!census_b.seen())
        throw Error("no usable B images in split '" + std::string(split_name) +
                    "' (an unpaired split needs both domains); " + o.out + " was not written");
    }
    bool begun = false;
    const size_t block = static_cast<size_t>(kPairsPerThreadPerBlock * std::max(1, o.threads));
    for (const auto& [list, domain] : lists) {
      const std::vector<PairJob>& jobs = *list;
      for (size_t first = 0; first < jobs.size(); first += block) {
        throw_if_interrupted("preparing " + o.out + " (it was not written)");
        const size_t last = std::min(jobs.size(), first + block);
        std::vector<LoadedPair> loaded = load_block(plan, jobs, first, last, o, channels, split_seed, domain);
        throw_if_interrupted("preparing " + o.out + " (it was not written)");
        for (size_t i = 0; i < loaded.size(); ++i) {
          LoadedPair& p = loaded[i];
          const PairJob& job = jobs[first + i];
          const std::string input = job.path_a.empty() ? job.name : job.path_a;
          const cv::Mat& sized = domain ? p.a : p.b;  // what sets the file's image size
          if (p.error.empty() && height == 0) {
            height = sized.rows;
            width = sized.cols;
          }
          if (p.error.empty() && (sized.rows != height || sized.cols != width))
            p.error = "size " + std::to_string(sized.cols) + "x" + std::to_string(sized.rows) + " differs from " +
                      std::to_string(width) + "x" + std::to_string(height) + " (use --size)";
          if (!p.non_finite.empty())
            throw Error(p.non_finite + "; float data must be finite (" + o.out + " was not written)");
          if (!p.error.empty()) {
            summary.skipped.emplace_back(input, p.error);
            std::fprintf(stderr, "warning: skipping %s: %s\n", input.c_str(), p.error.c_str());
            if (static_cast<std::int64_t>(summary.skipped.size()) > allowed_bad)
              throw Error(std::to_string(summary.skipped.size()) + " unusable inputs, more than --max-bad " +
                          std::to_string(o.max_bad) + " of " + std::to_string(total_jobs) + " allows (last: " + input +
                          ": " + p.error + ")");
            continue;
          }
          if (!domain) {
            // B first: a derived A (--derive) inherits B's NaN, which is named where it is, in B's file.
            census_b.add(p.b, job.path_b.empty() ? input : job.path_b);
            census_a.add(p.a, input);
          } else {
            (*domain == format::Domain::A ? census_a : census_b).add(p.a, input);
          }
          if (!begun) {
            SplitLayout layout{height,          width, census_a.channels(),          census_b.channels(),
                               o.source.labels, true,  longest_name(*lists[0].first)};
            layout.type_a = census_a.type();
            layout.type_b = census_b.type();
            layout.paired = paired;
            if (!paired) layout.name_bytes_b = longest_name(*lists[1].first);
            writer.begin_split(split_name, layout);
            begun = true;
          }
          if (!domain) {
            writer.append(p.a.data, p.b.data, job.label, job.name);
            ++written.pairs;
          } else {
            writer.append_image(*domain, p.a.data, job.name);
            ++(*domain == format::Domain::A ? written.pairs : written.images_b);
          }
        }
        progress.advance(static_cast<std::int64_t>(loaded.size()));
      }
    }
    writer.end_split();
    if (!paired && (written.pairs == 0 || written.images_b == 0))
      throw Error("no usable " + std::string(written.pairs == 0 ? "A" : "B") + " images in split '" + split_name +
                  "' (an unpaired split needs both domains); " + o.out + " was not written");
  }
  progress.finish();
  for (const char* required : {format::kTrain, format::kVal})
    if (summary.splits[required].pairs == 0)
      throw Error("no usable pairs in split '" + std::string(required) + "'; " + o.out + " was not written");
  writer.set_value_ranges(census_a.range(), census_b.range());
  summary.samples_a = {census_a.type(), census_a.range()};
  summary.samples_b = {census_b.type(), census_b.range()};
  summary.describe_a = census_a.describe();
  summary.describe_b = census_b.describe();
  summary.channels_a = census_a.channels();
  summary.channels_b = census_b.channels();
  writer.close();
  std::error_code ec;
  fs::rename(temp.path, out, ec);
  if (ec) throw Error("cannot rename " + temp.path + " to " + o.out + ": " + ec.message());
  temp.committed = true;
  summary.height = height;
  summary.width = width;
  summary.file_bytes = static_cast<std::int64_t>(fs::file_size(out, ec));
  summary.seconds = seconds_since(started);
  return summary;
}

std::string format_summary(const PrepareSummary& s, const std::string& out) {
  std::ostringstream text;
  bool unpaired = false;
  for (const auto& [split, info] : s.splits) unpaired = unpaired || !info.paired;
  text << "wrote " << out << ": ";
  if (unpaired)
    text << s.images() << " images (unpaired)";
  else
    text << s.pairs() << " pairs";
  text << " of " << s.width << "x" << s.height << " (A " << s.channels_a << " ch, B " << s.channels_b << " ch)\n";
  if (!s.samples_a.is_byte_default() || !s.samples_b.is_byte_default() ||
      !format::is_valid_channels(s.channels_a, format::kUnpairedVersion) ||
      !format::is_valid_channels(s.channels_b, format::kUnpairedVersion))
    text << "  A: " << s.describe_a << "\n  B: " << s.describe_b << "\n";
  for (const auto& [split, info] : s.splits) {
    if (info.paired)
      text << "  " << split << ": " << info.pairs << " pairs\n";
    else
      text << "  " << split << ": " << info.pairs << " A and " << info.images_b << " B images (unpaired)\n";
  }
  const double secs = std::max(s.seconds, 1e-9);
  char line[256];
  std::snprintf(line, sizeof(line), "  %.1f MiB, %.2f s, %.0f images/s\n",
                static_cast<double>(s.file_bytes) / (1 << 20), s.seconds,
                static_cast<double>(unpaired ? s.images() : s.pairs()) / secs);
  text << line;
  auto list = [&text](const char* what, const std::vector<std::string>& items) {
    if (items.empty()) return;
    text << "  " << items.size() << " " << what << ":\n";
    for (size_t i = 0; i < std::min<size_t>(items.size(), 20); ++i) text << "    " << items[i] << "\n";
    if (items.size() > 20) text << "    ... and " << items.size() - 20 << " more\n";
  };
  std::vector<std::string> skipped;
  for (const auto& [input, why] : s.skipped) skipped.push_back(input + ": " + why);
  list("skipped", skipped);
  list("unmatched (no partner in the other folder)", s.unmatched);
  list("ignored (not an image file name)", s.ignored);
  return text.str();
}

}  // namespace pix2pix::data
