// Turns a `prepare` source (aligned folder, two paired folders, single-domain folder, IDX file,
// or two unpaired domains) into an ordered list of jobs per split, before any image is decoded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pix2pix/data/idx_reader.hpp"

namespace pix2pix::data {

// unpaired: two folders of A and B images that are not pairs (--unpaired DIR_A DIR_B, or the
// reference CycleGAN layout DIR/trainA, DIR/trainB, … with --cyclegan-layout DIR).
enum class SourceKind { aligned, paired, images, unpaired };

// One pair to produce. Folder sources name files; IDX sources name an image index.
struct PairJob {
  std::string name;    // stored in `names`: the path relative to the split folder
  std::string path_a;  // aligned: the A|B image; paired: A; images: the image; unpaired: the image
  std::string path_b;  // paired only
  std::int64_t idx_index = -1;
  std::int32_t label = -1;
};

struct SourcePlan {
  SourceKind kind = SourceKind::images;
  std::string description;                               // stored as the `source` attribute
  std::map<std::string, std::vector<PairJob>> splits;    // keyed by format split names (unpaired: A's images)
  std::map<std::string, std::vector<PairJob>> splits_b;  // unpaired splits: B's images (a paired split has none)
  std::vector<std::string> class_names;                  // label i = class_names[i]
  std::vector<std::string> unmatched;                    // paired: files with no partner
  std::vector<std::string> ignored;                      // files without an image extension
  std::shared_ptr<const IdxImages> idx;                  // IDX sources: the decoded stack
  std::vector<std::string> source_files;                 // IDX sources: the image and label files
  bool had_val_split = false;
  bool is_paired(const std::string& split) const { return splits_b.count(split) == 0; }
};

struct SourceRequest {
  SourceKind kind = SourceKind::images;
  std::string dir;               // aligned / images folder, or "idx:PATH"
  std::string dir_b;             // paired: the B folder (dir is A)
  bool labels = false;           // class labels from sub-folder names or the IDX label file
  std::int64_t limit = -1;       // at most this many pairs per source split (< 0: all)
  std::string test_dir;          // --test: a second source of the same kind, all of it the test split
  bool cyclegan_layout = false;  // unpaired: `dir` holds trainA, trainB, valA, valB, testA, testB
  bool paired_val = false;       // unpaired: the val folders hold the same scenes, matched by file name
};

// Lists the source. A folder with train/val/test sub-folders yields those splits, any other
// folder yields `train`. Throws Error naming the folder or file when it is missing or empty.
SourcePlan plan_sources(const SourceRequest& request);

// Moves a deterministic random `fraction` of train into val (at least one pair when
// fraction > 0). Does nothing when the plan already has a val split. Unpaired: of each domain,
// independently (an unpaired val split).
void carve_validation(SourcePlan& plan, double fraction, std::uint64_t seed);

bool has_image_extension(const std::string& path);

struct ImageListing {
  std::vector<std::string> images;   // relative paths with an image extension, sorted
  std::vector<std::string> ignored;  // relative paths of the other files, sorted
};
// The files under `folder`, recursively (following folder links), by path relative to it: the
// same folder always lists in the same order. Error naming the folder when it cannot be listed.
ImageListing list_image_folder(const std::string& folder);

}  // namespace pix2pix::data
