// Source listing is deterministic: files are sorted by their path relative to the split folder,
// so the same folder always yields the same file order whatever the file system returns.
#include "pix2pix/data/image_sources.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <tuple>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/random.hpp"
#include "pix2pix/data/format.hpp"

namespace fs = std::filesystem;

namespace pix2pix::data {
namespace {

const std::set<std::string> kImageExtensions = {".png",  ".jpg", ".jpeg", ".bmp", ".tif", ".tiff",
                                                ".webp", ".ppm", ".pgm",  ".pbm", ".jp2", ".npy"};

void require_folder(const std::string& dir, const std::string& option) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw Error(option + " " + dir + ": no such folder");
  if (!fs::is_directory(dir, ec)) throw Error(option + " " + dir + ": is not a folder");
}

// Split name → folder. Sub-folders named like splits win; otherwise the folder is `train`.
std::map<std::string, fs::path> split_roots(const fs::path& dir) {
  std::map<std::string, fs::path> roots;
  for (const char* split : format::kSplits) {
    std::error_code ec;
    if (fs::is_directory(dir / split, ec)) roots[split] = dir / split;
  }
  if (roots.empty()) roots[format::kTrain] = dir;
  return roots;
}

std::string class_of(const std::string& rel) {
  const auto slash = rel.find('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

std::string without_extension(const std::string& rel) {
  return (fs::path(rel).parent_path() / fs::path(rel).stem()).string();
}

void apply_limit(std::vector<PairJob>& jobs, std::int64_t limit) {
  if (limit >= 0 && static_cast<std::int64_t>(jobs.size()) > limit) jobs.resize(static_cast<size_t>(limit));
}

// Labels from class sub-folders: the first folder under the split folder names the class.
// Classes of all splits are collected first, then numbered in sorted order, so that a class has
// the same index in every split.
void collect_classes(SourcePlan& plan, const std::vector<PairJob>& jobs, const fs::path& root) {
  for (const PairJob& job : jobs) {
    const std::string cls = class_of(job.name);
    if (cls.empty())
      throw Error("--labels: " + (root / job.name).string() + " is not inside a class sub-folder of " + root.string());
    plan.class_names.push_back(cls);
  }
}

void number_classes(SourcePlan& plan) {
  std::sort(plan.class_names.begin(), plan.class_names.end());
  plan.class_names.erase(std::unique(plan.class_names.begin(), plan.class_names.end()), plan.class_names.end());
  if (plan.class_names.empty()) return;
  for (auto& [split, jobs] : plan.splits)
    for (PairJob& job : jobs)
      job.label = static_cast<std::int32_t>(
          std::lower_bound(plan.class_names.begin(), plan.class_names.end(), class_of(job.name)) -
          plan.class_names.begin());
}

// One job per image file under `root` (its other files go to plan.ignored).
std::vector<PairJob> folder_jobs(const fs::path& root, SourcePlan& plan) {
  ImageListing listing = list_image_folder(root);
  for (const auto& f : listing.ignored) plan.ignored.push_back((root / f).string());
  std::vector<PairJob> jobs;
  for (const auto& rel : listing.images) {
    PairJob job;
    job.name = rel;
    job.path_a = (root / rel).string();
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// A job for each file of root_a with a file of the same name (any extension) in root_b; files
// of either without a partner go to plan.unmatched.
std::vector<PairJob> match_by_name(const fs::path& root_a, const fs::path& root_b, SourcePlan& plan) {
  const ImageListing a = list_image_folder(root_a), b = list_image_folder(root_b);
  for (const auto& f : a.ignored) plan.ignored.push_back((root_a / f).string());
  for (const auto& f : b.ignored) plan.ignored.push_back((root_b / f).string());
  std::map<std::string, std::string> b_by_stem;
  for (const auto& rel : b.images) b_by_stem[without_extension(rel)] = rel;
  std::vector<PairJob> jobs;
  for (const auto& rel : a.images) {
    auto match = b_by_stem.find(without_extension(rel));
    if (match == b_by_stem.end()) {
      plan.unmatched.push_back((root_a / rel).string());
      continue;
    }
    jobs.push_back({rel, (root_a / rel).string(), (root_b / match->second).string(), -1, -1});
    b_by_stem.erase(match);
  }
  for (const auto& [stem, rel] : b_by_stem) plan.unmatched.push_back((root_b / rel).string());
  return jobs;
}

// Folder sources (aligned or single-domain images): one job per image file.
SourcePlan plan_folder(const SourceRequest& request, const std::string& option) {
  require_folder(request.dir, option);
  SourcePlan plan;
  plan.kind = request.kind;
  for (const auto& [split, root] : split_roots(request.dir)) {
    auto& jobs = plan.splits[split];
    jobs = folder_jobs(root, plan);
    apply_limit(jobs, request.limit);
    if (request.labels) collect_classes(plan, jobs, root);
  }
  number_classes(plan);
  return plan;
}

SourcePlan plan_paired(const SourceRequest& request) {
  require_folder(request.dir, "--paired (A)");
  require_folder(request.dir_b, "--paired (B)");
  SourcePlan plan;
  plan.kind = SourceKind::paired;
  const auto roots_a = split_roots(request.dir), roots_b = split_roots(request.dir_b);
  for (const auto& [split, root_a] : roots_a) {
    auto it = roots_b.find(split);
    if (it == roots_b.end())
      throw Error("--paired: " + request.dir + " has split '" + split + "' but " + request.dir_b + " does not");
    auto& jobs = plan.splits[split];
    jobs = match_by_name(root_a, it->second, plan);
    apply_limit(jobs, request.limit);
    if (request.labels) collect_classes(plan, jobs, root_a);
  }
  number_classes(plan);
  for (const auto& [split, root_b] : roots_b)
    if (!roots_a.count(split))
      throw Error("--paired: " + request.dir_b + " has split '" + split + "' but " + request.dir + " does not");
  plan.description = "paired folders A=" + request.dir + " B=" + request.dir_b;
  return plan;
}

// Two domains: each split's A and B images listed apart (or, with paired_val, the val split's
// matched by name), from two folders with the same split sub-folders or from one folder in the
// reference CycleGAN layout.
SourcePlan plan_unpaired(const SourceRequest& request) {
  SourcePlan plan;
  plan.kind = SourceKind::unpaired;
  std::map<std::string, fs::path> roots_a, roots_b;
  std::string where_a, where_b;  // how errors name the two sides
  if (request.cyclegan_layout) {
    require_folder(request.dir, "--cyclegan-layout");
    for (const char* split : format::kSplits) {
      std::error_code ec;
      const fs::path a = fs::path(request.dir) / (std::string(split) + "A");
      const fs::path b = fs::path(request.dir) / (std::string(split) + "B");
      if (fs::is_directory(a, ec)) roots_a[split] = a;
      if (fs::is_directory(b, ec)) roots_b[split] = b;
    }
    if (!roots_a.count(format::kTrain) || !roots_b.count(format::kTrain))
      throw Error("--cyclegan-layout " + request.dir +
                  ": needs the folders trainA and trainB (the reference layout: trainA, trainB, testA, testB; valA and "
                  "valB optional)");
    where_a = where_b = "--cyclegan-layout " + request.dir;
    plan.description = "cyclegan layout " + request.dir;
  } else {
    require_folder(request.dir, "--unpaired (A)");
    require_folder(request.dir_b, "--unpaired (B)");
    roots_a = split_roots(request.dir);
    roots_b = split_roots(request.dir_b);
    where_a = "--unpaired: " + request.dir;
    where_b = "--unpaired: " + request.dir_b;
    plan.description = "unpaired folders A=" + request.dir + " B=" + request.dir_b;
  }
  for (const auto& [split, root] : roots_a)
    if (!roots_b.count(split))
      throw Error(where_a + ": has " + root.string() + " but no B folder of split '" + split + "'");
  for (const auto& [split, root] : roots_b)
    if (!roots_a.count(split))
      throw Error(where_b + ": has " + root.string() + " but no A folder of split '" + split + "'");
  if (request.paired_val && !roots_a.count(format::kVal))
    throw Error("--paired-val: " + where_a + " has no val folders to match by name");
  for (const auto& [split, root_a] : roots_a) {
    const fs::path& root_b = roots_b.at(split);
    if (split == format::kVal && request.paired_val) {
      auto& jobs = plan.splits[split];
      jobs = match_by_name(root_a, root_b, plan);
      apply_limit(jobs, request.limit);
      if (jobs.empty())
        throw Error("--paired-val: " + root_a.string() + " and " + root_b.string() + " hold no files of the same name");
      continue;
    }
    auto& jobs_a = plan.splits[split];
    auto& jobs_b = plan.splits_b[split];
    jobs_a = folder_jobs(root_a, plan);
    jobs_b = folder_jobs(root_b, plan);
    apply_limit(jobs_a, request.limit);
    apply_limit(jobs_b, request.limit);
    // An empty domain could train nothing (train) or validate half a model (val, test).
    for (const auto& [jobs, root, side] : {std::tuple{&jobs_a, &root_a, "A"}, std::tuple{&jobs_b, &root_b, "B"}})
      if (jobs->empty())
        throw Error(root->string() + ": no images: domain " + side + " of split '" + split +
                    "' is empty (an unpaired split needs images in both domains)");
  }
  return plan;
}

SourcePlan plan_idx(const SourceRequest& request) {
  const std::string path = request.dir.substr(4);
  std::error_code ec;
  require_readable_file(path, "--images idx:");
  SourcePlan plan;
  plan.kind = SourceKind::images;
  plan.source_files.push_back(path);
  auto images = std::make_shared<IdxImages>(read_idx_images(path, request.limit));
  std::vector<std::int32_t> labels;
  if (request.labels) {
    const std::string label_path = idx_labels_path_for(path);
    if (label_path.empty() || !fs::exists(label_path, ec))
      throw Error("--labels: no IDX label file next to " + path + " (expected '" + label_path + "')");
    require_readable_file(label_path, "--labels:");
    plan.source_files.push_back(label_path);
    labels = read_idx_labels(label_path, images->count);
    if (static_cast<std::int64_t>(labels.size()) != images->count)
      throw Error(label_path + ": has " + std::to_string(labels.size()) + " labels for " +
                  std::to_string(images->count) + " images");
    const auto max_label = labels.empty() ? -1 : *std::max_element(labels.begin(), labels.end());
    for (int c = 0; c <= max_label; ++c) plan.class_names.push_back(std::to_string(c));
  }
  auto& jobs = plan.splits[format::kTrain];
  const std::string base = fs::path(path).filename().string();
  for (std::int64_t i = 0; i < images->count; ++i) {
    PairJob job;
    job.name = base + "#" + std::to_string(i);
    job.idx_index = i;
    job.label = labels.empty() ? -1 : labels[static_cast<size_t>(i)];
    jobs.push_back(std::move(job));
  }
  plan.idx = std::move(images);
  plan.description = "idx " + path;
  return plan;
}

// --test SRC: planned like the main source, and the whole of it becomes the test split. IDX
// stacks are joined (the pair jobs name images by index into one stack); labels are matched to
// the main source's classes by name.
void add_test_source(SourcePlan& plan, const SourceRequest& request) {
  if (plan.splits.count(format::kTest) != 0 && !plan.splits[format::kTest].empty())
    throw Error(request.dir + ": has a test sub-folder already; drop --test " + request.test_dir);
  SourceRequest test = request;
  test.dir = request.test_dir;
  test.test_dir.clear();
  SourcePlan extra = plan_sources(test);
  if (extra.splits.size() != 1 || extra.splits.count(format::kTrain) == 0)
    throw Error("--test " + test.dir + ": give one folder of images (no train/val/test sub-folders) or idx:PATH");
  std::vector<PairJob> jobs = std::move(extra.splits[format::kTrain]);
  if ((extra.idx != nullptr) != (plan.idx != nullptr))
    throw Error("--test " + test.dir + ": must be the same kind of source as " + request.dir +
                " (both folders, or both idx:PATH)");
  if (extra.idx != nullptr) {
    if (extra.idx->rows != plan.idx->rows || extra.idx->cols != plan.idx->cols)
      throw Error("--test " + test.dir + ": images are " + std::to_string(extra.idx->rows) + "x" +
                  std::to_string(extra.idx->cols) + ", those of " + request.dir + " " + std::to_string(plan.idx->rows) +
                  "x" + std::to_string(plan.idx->cols));
    auto joined = std::make_shared<IdxImages>(*plan.idx);
    joined->pixels.insert(joined->pixels.end(), extra.idx->pixels.begin(), extra.idx->pixels.end());
    joined->count += extra.idx->count;
    for (auto& job : jobs) job.idx_index += plan.idx->count;
    plan.idx = std::move(joined);
    plan.source_files.insert(plan.source_files.end(), extra.source_files.begin(), extra.source_files.end());
  }
  for (auto& job : jobs) {
    if (job.label < 0) continue;
    const std::string& name = extra.class_names.at(static_cast<size_t>(job.label));
    auto it = std::find(plan.class_names.begin(), plan.class_names.end(), name);
    if (it == plan.class_names.end()) it = plan.class_names.insert(plan.class_names.end(), name);
    job.label = static_cast<std::int32_t>(it - plan.class_names.begin());
  }
  plan.ignored.insert(plan.ignored.end(), extra.ignored.begin(), extra.ignored.end());
  plan.unmatched.insert(plan.unmatched.end(), extra.unmatched.begin(), extra.unmatched.end());
  plan.splits[format::kTest] = std::move(jobs);
  plan.description += "; test: " + extra.description;
}

}  // namespace

ImageListing list_image_folder(const std::string& folder) {
  const fs::path root(folder);
  ImageListing listing;
  std::error_code ec;
  // Linked folders are followed, but each real folder is listed once: a link to a parent (a loop)
  // made 10 images 410 pairs, and val copies of train.
  std::set<std::pair<std::uint64_t, std::uint64_t>> listed;
  const auto first_visit = [&listed](const fs::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) != 0 ||
           listed.emplace(static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)).second;
  };
  first_visit(root);
  for (fs::recursive_directory_iterator it(root, fs::directory_options::follow_directory_symlink, ec), end; it != end;
       it.increment(ec)) {
    if (ec) throw Error(root.string() + ": cannot list folder: " + ec.message());
    if (it->is_directory(ec)) {
      if (!first_visit(it->path())) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = fs::relative(it->path(), root).string();
    (has_image_extension(rel) ? listing.images : listing.ignored).push_back(rel);
  }
  if (ec) throw Error(root.string() + ": cannot list folder: " + ec.message());
  std::sort(listing.images.begin(), listing.images.end());
  std::sort(listing.ignored.begin(), listing.ignored.end());
  return listing;
}

bool has_image_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return kImageExtensions.count(ext) != 0;
}

SourcePlan plan_sources(const SourceRequest& request) {
  SourcePlan plan;
  if (request.kind == SourceKind::paired) {
    plan = plan_paired(request);
  } else if (request.kind == SourceKind::unpaired) {
    plan = plan_unpaired(request);
  } else if (request.kind == SourceKind::images && request.dir.rfind("idx:", 0) == 0) {
    plan = plan_idx(request);
  } else {
    const std::string option = request.kind == SourceKind::aligned ? "--aligned" : "--images";
    plan = plan_folder(request, option);
    plan.description = (request.kind == SourceKind::aligned ? "aligned folder " : "image folder ") + request.dir;
  }
  size_t total = 0;
  for (const auto& [split, jobs] : plan.splits) total += jobs.size();
  if (total == 0) {
    const std::string where = request.kind == SourceKind::paired ? request.dir + " and " + request.dir_b : request.dir;
    throw Error(
        where + ": no images found" +
        (plan.unmatched.empty() ? "" : " that pair up (" + std::to_string(plan.unmatched.size()) + " unmatched)"));
  }
  if (!request.test_dir.empty()) add_test_source(plan, request);
  plan.had_val_split = plan.splits.count(format::kVal) != 0 && !plan.splits[format::kVal].empty();
  return plan;
}

namespace {
// Moves a seeded `fraction` of `train` (at least one, at most all but one) to the returned list.
std::vector<PairJob> carve(std::vector<PairJob>& train, double fraction, std::uint64_t seed) {
  if (train.empty()) return {};
  const auto n = static_cast<std::int64_t>(train.size());
  std::int64_t n_val = std::max<std::int64_t>(1, std::llround(fraction * static_cast<double>(n)));
  n_val = std::min(n_val, n - 1);
  if (n_val <= 0) return {};
  const std::vector<std::int64_t> order = seeded_permutation(n, seed);
  std::vector<bool> to_val(train.size(), false);
  for (std::int64_t i = 0; i < n_val; ++i) to_val[order[static_cast<size_t>(i)]] = true;
  std::vector<PairJob> keep, val;
  for (size_t i = 0; i < train.size(); ++i) (to_val[i] ? val : keep).push_back(std::move(train[i]));
  train = std::move(keep);
  return val;  // both keep the source order
}
}  // namespace

void carve_validation(SourcePlan& plan, double fraction, std::uint64_t seed) {
  if (plan.had_val_split || fraction <= 0.0) return;
  plan.splits[format::kVal] = carve(plan.splits[format::kTrain], fraction, seed);
  if (!plan.is_paired(format::kTrain))
    plan.splits_b[format::kVal] = carve(plan.splits_b[format::kTrain], fraction, mix_seed(seed, 0x42));
}

}  // namespace pix2pix::data
