#include "pix2pix/infer/translation_inputs.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/data/image_sources.hpp"

namespace pix2pix::infer {
namespace {

namespace fs = std::filesystem;

// "a/b.jpg" → "a/b.png"; a stored name without an image extension ("t10k.gz#12") keeps all of
// it: "t10k.gz#12.png".
std::string with_extension(const std::string& rel, const std::string& extension) {
  if (!data::has_image_extension(rel)) return rel + extension;
  return fs::path(rel).replace_extension(extension).string();
}

// A stored name we may use as a path under --output: relative, without "..", not empty.
bool usable_relative_path(const std::string& name) {
  if (name.empty() || name.find('\0') != std::string::npos) return false;
  const fs::path p(name);
  if (p.is_absolute() || !p.has_filename()) return false;
  for (const auto& part : p)
    if (part == ".." || part == ".") return false;
  return true;
}

}  // namespace

std::vector<TranslationInput> list_folder_inputs(const std::string& input, const std::string& extension) {
  std::error_code ec;
  if (!fs::exists(input, ec)) throw Error("--input " + input + ": no such file or folder");
  std::vector<TranslationInput> inputs;
  if (!fs::is_directory(input, ec)) {
    require_readable_file(input, "--input");  // a FIFO would block the reader for ever
    const std::string name = fs::path(input).filename().string();
    inputs.push_back({input, input, -1, with_extension(name, extension)});
    return inputs;
  }
  const data::ImageListing listing = data::list_image_folder(input);
  if (listing.images.empty())
    throw Error("--input " + input + ": no image files (by extension: .png, .jpg, ...) under it");
  for (const auto& rel : listing.images) {
    const std::string path = (fs::path(input) / rel).string();
    inputs.push_back({path, path, -1, with_extension(rel, extension)});
  }
  return inputs;
}

std::vector<TranslationInput> list_dataset_inputs(const data::PairedDataset& dataset, const std::string& split,
                                                  const std::string& extension, data::Domain domain) {
  const auto& info = dataset.split(split);
  const std::int64_t count = info.images(domain);
  std::vector<std::int64_t> all(static_cast<size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) all[static_cast<size_t>(i)] = i;
  std::vector<std::string> names;
  if ((info.paired || domain == data::Domain::A) ? info.has_names : info.has_names_b) {
    names = dataset.read_names(split, all, domain);
    std::set<std::string> seen;
    for (const auto& name : names)
      if (!usable_relative_path(name) || !seen.insert(with_extension(name, extension)).second) {
        names.clear();
        break;
      }
  }
  std::vector<TranslationInput> inputs;
  for (std::int64_t i = 0; i < count; ++i) {
    char number[32];
    std::snprintf(number, sizeof(number), "%06lld", static_cast<long long>(i));
    const std::string label = dataset.path() + ":/" + split +
                              (info.paired ? "" : "/" + std::string(data::format::images_of(domain))) + "[" +
                              std::to_string(i) + "]";
    const std::string rel = names.empty() ? std::string(number) : names[static_cast<size_t>(i)];
    inputs.push_back({label, "", i, with_extension(rel, extension)});
  }
  return inputs;
}

void check_distinct_outputs(const std::vector<TranslationInput>& inputs) {
  std::map<std::string, const TranslationInput*> by_output;
  for (const auto& input : inputs) {
    const auto [it, fresh] = by_output.emplace(input.output, &input);
    if (!fresh)
      throw Error(it->second->label + " and " + input.label + " would both be written to " + input.output +
                  "; translate them separately or rename one");
  }
}

}  // namespace pix2pix::infer
