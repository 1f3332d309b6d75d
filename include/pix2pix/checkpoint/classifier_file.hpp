// A trained recognition network as one sealed file (`train-classifier --out`): its weights and
// what a later use must match: classes, input size, channels, the input normalisation, and the
// network's shape; with the epoch and validation accuracy it was kept at and the data it was
// trained on. Written atomically like every checkpoint (checkpoint.hpp).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/nets/classifier.hpp"

namespace pix2pix::checkpoint {

inline constexpr const char* kClassifierMagic = "pix2pix-mpi-classifier";
inline constexpr std::int64_t kClassifierVersion = 1;

struct ClassifierRecord {
  std::int64_t epoch = -1;  // the epoch whose weights these are
  double val_accuracy = 0;  // top-1 on the val split at that epoch
  std::string data;         // the dataset file it was trained on
};

struct SavedClassifier {
  nets::Classifier network{nullptr};  // eval mode, no gradients for its parameters
  std::string path;
  ClassifierRecord record;
  std::uint64_t checksum = 0;  // of the file's contents (its seal's)
};

void save_classifier(const std::string& path, nets::ClassifierImpl& network, const ClassifierRecord& record);

// Rebuilds the network from the file's shape and loads it onto `device`, frozen. Error naming the
// file when it is missing, damaged, not a classifier file, of another version, or made for
// another input normalisation.
SavedClassifier load_classifier(const std::string& path, const torch::Device& device);

// What a use of the classifier must match (images it will see, largest label it will be given);
// Error naming the file, `option` and both values at the first mismatch.
struct ClassifierUse {
  std::int64_t channels = 0, height = 0, width = 0;
  std::int64_t max_label = -1;  // -1: not checked
};
void check_classifier_fits(const SavedClassifier& saved, const ClassifierUse& use, const std::string& option);

// The largest label of `split`, for ClassifierUse::max_label: UsageError naming `option` when the
// split has no labels, Error naming the file for a negative label.
std::int32_t largest_label(const data::PairedDataset& dataset, const std::string& split, const std::string& option);

}  // namespace pix2pix::checkpoint
