// The input-pipeline options shared by every command that loads batches (train, bench,
// train-classifier): declared once so that names, defaults and help stay the same everywhere.
#pragma once

#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/paired_dataset.hpp"

namespace pix2pix::cli {

// --batch-size --cache --preprocess --load-size --crop-size --no-flip --no-shuffle --seed
// --prefetch --h5-driver, bound to `loader` and `driver`, whose values are the defaults (train's
// batch 1, as the reference; the classifier's 32, See Note [batch norm over too few images]).
OptionGroup loader_options(data::LoaderOptions& loader, data::H5Driver& driver);

}  // namespace pix2pix::cli
