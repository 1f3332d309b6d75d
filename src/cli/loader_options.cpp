#include "pix2pix/cli/loader_options.hpp"

#include "pix2pix/data/format.hpp"

namespace pix2pix::cli {

OptionGroup loader_options(data::LoaderOptions& loader, data::H5Driver& driver) {
  OptionGroup g("Input pipeline");
  // The batch per rank may change on resume: an elastic resume to another world size changes it
  // by design (See Note [options a resume may change]).
  g.count("batch-size", loader.batch_size, 1, 1LL << 31, "pairs per step on each rank").how_the_job_runs();
  g.choice("cache", loader.cache, "auto", data::parse_cache_mode,
           "auto | device | host | none: where the decoded shard is kept (none streams from HDF5)")
      .how_the_job_runs();
  g.choice("preprocess", loader.augment.preprocess, "resize_and_crop", data::parse_preprocess,
           "resize_and_crop | crop | none: pix2pix random jitter, crop only, or no augmentation");
  g.count("load-size", loader.augment.load_size, 0, 2 * data::format::kMaxSide,
          "jitter: resize to this side first (0: crop * 286 / 256)");
  g.count("crop-size", loader.augment.crop_size, 0, data::format::kMaxSide, "output side (0: the stored image side)");
  g.flag("no-flip", loader.augment.flip, "no random horizontal flips", /*when_given=*/false);
  g.flag("no-shuffle", loader.shuffle, "keep file order (sharding and batches)", /*when_given=*/false);
  g.value("seed", loader.seed, "seed of sharding, order and augmentation");
  g.count("prefetch", loader.prefetch_batches, 1, 1024, "--cache none: batches read ahead by the reader thread");
  g.choice("h5-driver", driver, "serial", data::parse_h5_driver, "serial | mpio (parallel HDF5)").how_the_job_runs();
  return g;
}

}  // namespace pix2pix::cli
