#include "pix2pix/cli/loader_options.hpp"

#include "pix2pix/data/format.hpp"

namespace pix2pix::cli {

po::options_description loader_option_descriptions(long default_batch_size) {
  po::options_description d("Input pipeline");
  d.add_options()("batch-size", po::value<long>()->default_value(default_batch_size), "pairs per step on each rank")(
      "cache", po::value<std::string>()->default_value("auto"),
      "auto | device | host | none: where the decoded shard is kept (none streams from HDF5)")(
      "preprocess", po::value<std::string>()->default_value("resize_and_crop"),
      "resize_and_crop | crop | none: pix2pix random jitter, crop only, or no augmentation")(
      "load-size", po::value<long>()->default_value(0), "jitter: resize to this side first (0: crop * 286 / 256)")(
      "crop-size", po::value<long>()->default_value(0), "output side (0: the stored image side)")(
      "no-flip", po::bool_switch(), "no random horizontal flips")("no-shuffle", po::bool_switch(),
                                                                  "keep file order (sharding and batches)")(
      "seed", po::value<unsigned long>()->default_value(0), "seed of sharding, order and augmentation")(
      "prefetch", po::value<int>()->default_value(2), "--cache none: batches read ahead by the reader thread")(
      "h5-driver", po::value<std::string>()->default_value("serial"), "serial | mpio (parallel HDF5)");
  return d;
}

data::LoaderOptions loader_options_from(const po::variables_map& vm) {
  data::LoaderOptions o;
  o.batch_size = integer_option(vm, "batch-size", 1, 1L << 31);
  o.cache = data::parse_cache_mode(vm["cache"].as<std::string>());
  o.augment.preprocess = data::parse_preprocess(vm["preprocess"].as<std::string>());
  o.augment.load_size = integer_option(vm, "load-size", 0, 2 * data::format::kMaxSide);
  o.augment.crop_size = integer_option(vm, "crop-size", 0, data::format::kMaxSide);
  o.augment.flip = !vm["no-flip"].as<bool>();
  o.shuffle = !vm["no-shuffle"].as<bool>();
  o.seed = vm["seed"].as<unsigned long>();
  o.prefetch_batches = static_cast<int>(integer_option(vm, "prefetch", 1, 1024));
  return o;
}

data::H5Driver h5_driver_from(const po::variables_map& vm) {
  return data::parse_h5_driver(vm["h5-driver"].as<std::string>());
}

}  // namespace pix2pix::cli
