// The input-pipeline options shared by every command that loads batches (bench now, train
// later): declared once so that names, defaults and help stay the same everywhere.
#pragma once

#include "pix2pix/cli/options.hpp"
#include "pix2pix/data/batch_loader.hpp"

namespace pix2pix::cli {

// --batch-size --cache --preprocess --load-size --crop-size --no-flip --no-shuffle --seed
// --h5-driver --prefetch; `default_batch_size` per command (train: 1, as the reference; the
// classifier: 32, See Note [batch norm over too few images]).
po::options_description loader_option_descriptions(long default_batch_size = 1);
data::LoaderOptions loader_options_from(const po::variables_map& vm);
data::H5Driver h5_driver_from(const po::variables_map& vm);

}  // namespace pix2pix::cli
