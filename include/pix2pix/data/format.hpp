// The pix2pix-h5 dataset format, versions 2 to 4 (version 1 is still read): the only place that spells
// group, dataset and attribute names, and the limits a file must respect. docs/data-format.md
// describes it for people.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace pix2pix::data::format {

inline constexpr const char* kFormatName = "pix2pix-h5";
// Version 2 (what prepare writes): every string is fixed-length (no HDF5 global heap, which has
// no checksum and which a damaged file can use to crash a reader), every metadata object is
// checksummed (HDF5 1.10 file-format objects), and every chunk carries a Fletcher-32 checksum.
// Version 1: the same layout with variable-length strings and HDF5's oldest object formats.
// Version 3: version 2 plus unpaired splits (kPairingUnpaired). prepare writes 3 only for a file
// that has them, so that paired files stay readable by builds that read up to version 2.
// Version 4: version 3 plus uint16 and float32 images, 1 to kMaxChannels channels, and each
// domain's value range (kAttrRangeA/B). prepare writes 4 only for a file that needs it: a domain
// that is not uint8 on [0, 255] with 1 or 3 channels (an older reader would misread the values).
inline constexpr int kVersion = 4;        // the newest this build reads
inline constexpr int kPairedVersion = 2;  // what prepare writes for a file of paired splits only
inline constexpr int kUnpairedVersion = 3;
inline constexpr int kSamplesVersion = 4;
inline constexpr int kOldestReadableVersion = 1;

// Root attributes.
inline constexpr const char* kAttrFormat = "format";    // string, == kFormatName
inline constexpr const char* kAttrVersion = "version";  // int32, == kVersion
inline constexpr const char* kAttrSource = "source";    // string: where the images came from
inline constexpr const char* kAttrPairing = "pairing";  // string: how A relates to B
// The root `pairing` of a version 3 file with unpaired splits: then every split group carries
// kAttrPairing too, kSplitPaired or kSplitUnpaired. In an unpaired split A and B hold different
// images, in different numbers (index i of A has nothing to do with index i of B).
inline constexpr const char* kPairingUnpaired = "unpaired";
inline constexpr const char* kSplitPaired = "paired";
inline constexpr const char* kSplitUnpaired = "unpaired";
inline constexpr const char* kAttrCreatedBy = "created_by";  // string: program, version, options
// Version 4: float64 [2] = [lo, hi], the stored values that map to the networks' -1 and 1, one
// per domain (the same in every split). Absent: the sample type's natural range (uint8 [0, 255],
// uint16 [0, 65535]); float32 data must have one. Older versions have none: uint8 on [0, 255].
inline constexpr const char* kAttrRangeA = "range_A";
inline constexpr const char* kAttrRangeB = "range_B";

// Splits (groups). `train` and `val` are required, `test` is optional.
inline constexpr const char* kTrain = "train";
inline constexpr const char* kVal = "val";
inline constexpr const char* kTest = "test";
inline constexpr std::array<const char*, 3> kSplits = {kTrain, kVal, kTest};
inline bool is_required_split(const std::string& split) {
  return split == kTrain || split == kVal;
}

// Datasets inside a split.
inline constexpr const char* kImagesA = "A";       // uint8 (v4: uint16, float32) [N, H, W, C], one image per chunk
inline constexpr const char* kImagesB = "B";       // uint8 [N, H, W, C'], same N (unpaired: N_B), H, W as A
inline constexpr const char* kLabels = "labels";   // optional int32 [N], >= 0; paired splits only
inline constexpr const char* kNames = "names";     // optional UTF-8 strings [N] (fixed-length in version 2); A's
inline constexpr const char* kNamesB = "names_B";  // unpaired splits: optional strings [N_B], B's sources

// The two image domains of a split, and the datasets that hold each.
enum class Domain { A, B };
inline const char* images_of(Domain domain) {
  return domain == Domain::A ? kImagesA : kImagesB;
}
inline const char* range_of(Domain domain) {
  return domain == Domain::A ? kAttrRangeA : kAttrRangeB;
}

// Limits that a valid file respects; checked before anything is allocated, so that a damaged
// or hostile file cannot make a reader allocate terabytes.
inline constexpr std::int64_t kMaxSide = 16384;              // H and W
inline constexpr std::int64_t kMaxPairs = 1LL << 31;         // N per split (N_A, N_B when unpaired)
inline constexpr std::int64_t kMaxImageBytes = 1LL << 28;    // one image in memory (256 MiB)
inline constexpr std::int64_t kMaxChannels = 16;             // version 4 (before: 1 or 3)
inline constexpr std::int64_t kMaxNameBytes = 4096;          // one name (version 2: the string size)
inline constexpr std::int64_t kMaxAttributeBytes = 1 << 20;  // one root attribute
// Labels are class indices in [0, kMaxClasses): a classifier sizes its last layer by the largest
// one, so a label of 2^31 - 1 asked for a terabyte (ImageNet-21k has 21,841 classes).
inline constexpr std::int64_t kMaxClasses = 1 << 16;
inline bool is_valid_channels(std::int64_t c, std::int64_t version = kVersion) {
  return version >= kSamplesVersion ? c >= 1 && c <= kMaxChannels : c == 1 || c == 3;
}

}  // namespace pix2pix::data::format
