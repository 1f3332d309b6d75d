#include "pix2pix/checkpoint/classifier_file.hpp"

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/checkpoint/checkpoint_archive.hpp"
#include "pix2pix/checkpoint/checkpoint_seal.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::checkpoint {

void save_classifier(const std::string& path, nets::ClassifierImpl& network, const ClassifierRecord& record) {
  const nets::ClassifierOptions& o = network.options();
  write_atomically(path, [&](const std::string& tmp) {
    torch::serialize::OutputArchive out, weights;
    out.write("magic", c10::IValue(std::string(kClassifierMagic)));
    out.write("version", c10::IValue(kClassifierVersion));
    out.write("input", c10::IValue(std::string(nets::kClassifierInput)));
    out.write("channels", c10::IValue(o.channels));
    out.write("height", c10::IValue(o.height));
    out.write("width", c10::IValue(o.width));
    out.write("classes", c10::IValue(o.classes));
    out.write("filters", c10::IValue(o.filters));
    out.write("blocks", c10::IValue(o.blocks));
    out.write("norm", c10::IValue(nets::to_string(o.norm)));
    out.write("epoch", c10::IValue(record.epoch));
    out.write("val_accuracy", c10::IValue(record.val_accuracy));
    out.write("data", c10::IValue(record.data));
    network.save(weights);
    out.write("network", weights);
    save_sealed(out, tmp);
  });
}

namespace {

// Generous bounds: they only keep a damaged field from building an absurd network.
std::int64_t bounded(torch::serialize::InputArchive& in, const std::string& key, std::int64_t low, std::int64_t high) {
  const std::int64_t value = read_int(in, key);
  if (value < low || value > high)
    throw Error(key + " = " + std::to_string(value) + " is outside [" + std::to_string(low) + ", " +
                std::to_string(high) + "]");
  return value;
}

}  // namespace

SavedClassifier load_classifier(const std::string& path, const torch::Device& device) {
  SavedClassifier saved;
  saved.path = path;
  torch::serialize::InputArchive in;
  open_sealed(path, in, device, "classifier file");
  saved.checksum = sealed_checksum(path);
  naming_the_file("classifier " + path, ": its weights do not fit its shape: ", [&] {
    c10::IValue magic;
    if (!in.try_read("magic", magic) || !magic.isString() || magic.toStringRef() != kClassifierMagic)
      throw Error("not a pix2pix-mpi classifier file (pix2pix train-classifier writes them)");
    const std::int64_t version = read_int(in, "version");
    if (version != kClassifierVersion)
      throw Error("classifier file version " + std::to_string(version) + ", this build reads " +
                  std::to_string(kClassifierVersion));
    const std::string input = read_string(in, "input");
    if (input != nets::kClassifierInput)
      throw Error("made for inputs '" + input + "', this build gives '" + nets::kClassifierInput + "'");
    nets::ClassifierOptions o;
    o.channels = bounded(in, "channels", 1, 64);
    o.height = bounded(in, "height", 8, 1 << 16);
    o.width = bounded(in, "width", 8, 1 << 16);
    o.classes = bounded(in, "classes", 2, 1 << 20);
    o.filters = bounded(in, "filters", 1, 4096);
    o.blocks = bounded(in, "blocks", 1, 16);
    try {
      o.norm = nets::parse_norm(read_string(in, "norm"));
    } catch (const UsageError& e) {
      throw Error(std::string("norm: ") + e.what());
    }
    saved.record.epoch = read_int(in, "epoch");
    saved.record.val_accuracy = read_double(in, "val_accuracy");
    saved.record.data = read_string(in, "data");
    saved.network = nets::Classifier(o);
    saved.network->to(device);
    torch::serialize::InputArchive weights;
    if (!in.try_read("network", weights)) throw Error("missing network weights");
    load_checked(*saved.network, weights, "its network's");
  });
  saved.network->eval();
  for (auto& p : saved.network->parameters()) p.requires_grad_(false);
  return saved;
}

void check_classifier_fits(const SavedClassifier& saved, const ClassifierUse& use, const std::string& option) {
  const nets::ClassifierOptions& o = saved.network->options();
  const std::string where = option + " " + saved.path + ": ";
  if (use.channels != o.channels)
    throw UsageError(where + "a classifier of " + std::to_string(o.channels) +
                     "-channel images, the images here have " + std::to_string(use.channels));
  if (use.height != o.height || use.width != o.width)
    throw UsageError(where + "a classifier of " + std::to_string(o.height) + "x" + std::to_string(o.width) +
                     " images, the images here are " + std::to_string(use.height) + "x" + std::to_string(use.width));
  if (use.max_label >= o.classes)
    throw UsageError(where + "a classifier of " + std::to_string(o.classes) + " classes (0.." +
                     std::to_string(o.classes - 1) + "), the data has label " + std::to_string(use.max_label));
}

std::int32_t largest_label(const data::PairedDataset& dataset, const std::string& split, const std::string& option) {
  if (!dataset.split(split).has_labels)
    throw UsageError(option + " needs labels, and the " + split + " split of " + dataset.path() +
                     " has no labels (pix2pix prepare --labels adds them)");
  const auto [low, high] = dataset.label_range(split);
  if (low < 0) throw Error(dataset.path() + ": negative label " + std::to_string(low) + " in the " + split + " split");
  return high;
}

}  // namespace pix2pix::checkpoint
