// What `translate` reads and what it writes for each: image files under a folder (or one file),
// or the A images of a dataset split, each mapped to an output path that mirrors its name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pix2pix/data/paired_dataset.hpp"

namespace pix2pix::infer {

struct TranslationInput {
  std::string label;        // how messages name it: the file's path, or FILE.h5:/split[i]
  std::string path;         // the image file ("" for a dataset pair)
  std::int64_t index = -1;  // the pair in the dataset split (-1 for files)
  std::string output;       // relative to --output: the input's relative name, extension replaced
};

// `input` a folder: every file with an image extension under it (recursively, sorted by relative
// path); a file: that image alone. `extension`: of the outputs (".png", ".jpg"). Error naming
// the input when it does not exist or holds no image.
std::vector<TranslationInput> list_folder_inputs(const std::string& input, const std::string& extension);

// Every image of `domain` in `split` (its pairs' A or B; an unpaired split's images of that
// domain), named by the stored names when each is a usable relative path (no "..", not
// absolute, distinct), otherwise by zero-padded index (000042.png).
std::vector<TranslationInput> list_dataset_inputs(const data::PairedDataset& dataset, const std::string& split,
                                                  const std::string& extension, data::Domain domain = data::Domain::A);

// Error naming both inputs when two of them would write the same file (a.jpg and a.png → a.png).
void check_distinct_outputs(const std::vector<TranslationInput>& inputs);

}  // namespace pix2pix::infer
