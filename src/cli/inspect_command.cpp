// `pix2pix inspect FILE`: attributes, splits, shapes, pixel statistics; --check reads it all.
#include <cstdio>
#include <iostream>
#include <memory>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/data/dataset_check.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::cli {
namespace {

void print_report(const data::PairedDataset& ds, std::int64_t sample) {
  const auto& attrs = ds.attributes();
  std::printf("%s\n  format:   %s version %lld\n  source:   %s\n  pairing:  %s\n", ds.path().c_str(),
              attrs.format.c_str(), static_cast<long long>(attrs.version), attrs.source.c_str(), attrs.pairing.c_str());
  const data::SplitInfo& train = ds.split(data::format::kTrain);
  std::printf("  values:   A %s, B %s%s\n", data::to_string(train.samples_a).c_str(),
              data::to_string(train.samples_b).c_str(),
              attrs.version >= data::format::kSamplesVersion ? " (range_A, range_B: the values that map to -1 and 1)"
                                                             : " (before version 4: 8-bit on [0, 255])");
  for (const std::string& split : ds.split_names()) {
    const data::SplitInfo& s = ds.split(split);
    const auto n = [](std::int64_t v) { return static_cast<long long>(v); };
    const std::string counted =
        s.paired ? std::to_string(s.count) + " pairs"
                 : std::to_string(s.count) + " A + " + std::to_string(s.count_b) + " B images (unpaired)";
    std::printf("  %-5s %s  A %s [%lld, %lld, %lld, %lld]  B %s [%lld, %lld, %lld, %lld]%s%s%s%s%s\n", split.c_str(),
                counted.c_str(), data::to_string(s.samples_a.type).c_str(), n(s.count), n(s.height), n(s.width),
                n(s.channels_a), data::to_string(s.samples_b.type).c_str(), n(s.count_b), n(s.height), n(s.width),
                n(s.channels_b), s.has_labels ? "  labels" : "", s.has_names ? "  names" : "",
                s.has_names_b ? "  names_B" : "", s.compressed ? "  deflate" : "", s.checksummed ? "  fletcher32" : "");
    const data::SplitStats st = data::compute_split_stats(ds, split, sample);
    const std::string over =
        s.paired ? std::to_string(st.pairs_read) + " pairs"
                 : std::to_string(st.pairs_read) + " A and " + std::to_string(st.images_b_read) + " B images";
    std::printf("        pixels over %s: A mean %.2f std %.2f min %g max %g | B mean %.2f std %.2f min %g max %g\n",
                over.c_str(), st.a.mean, st.a.std, st.a.min, st.a.max, st.b.mean, st.b.std, st.b.min, st.b.max);
    if (!st.label_counts.empty()) {
      std::printf("        labels:");
      for (const auto& [label, count] : st.label_counts) std::printf(" %d:%lld", label, static_cast<long long>(count));
      std::printf("\n");
    }
  }
}

}  // namespace

int run_inspect(int argc, char** argv) {
  const CommandSpec spec{"inspect", "pix2pix inspect FILE [--check] [options]",
                         "Describes a pix2pix-h5 file: attributes, splits, shapes, pixel statistics.\n"
                         "--check reads every chunk and exits non-zero with the problems found."};
  std::string file;
  bool check = false;
  long sample = 1000;
  data::H5Driver driver = data::H5Driver::serial;
  OptionGroup options("Options");
  options.optional_text("file", file, "the .h5 file (also the first positional argument)").value_name("FILE");
  options.flag("check", check, "read and validate the whole file");
  options.count("sample", sample, 0, kNoLimit, "pairs per split used for statistics (0: all)");
  options.choice("h5-driver", driver, "serial", data::parse_h5_driver, "serial or mpio (parallel HDF5)");
  po::positional_options_description positional;
  positional.add("file", 1);
  if (!parse_command(spec, options.description(), positional, argc, argv)) return 0;
  if (file.empty()) throw UsageError("missing FILE");

  // MPI-IO needs MPI; the serial driver must not require a launcher.
  std::unique_ptr<dist::MpiSession> mpi;
  if (driver == data::H5Driver::mpio) mpi = std::make_unique<dist::MpiSession>(&argc, &argv);
  // Under mpirun with mpio, every rank opens the file (collectively), rank 0 reports, and
  // --check divides the blocks among the ranks.
  const int rank = mpi ? mpi->rank() : 0, world = mpi ? mpi->world() : 1;
  bool failed = false;
  {
    const auto ds = data::PairedDataset::open(file, driver);
    ds->refuse_non_finite(false);  // reported, with every other problem
    if (rank == 0) print_report(*ds, sample);
    if (check) {
      data::ValuesOutside outside;
      const auto problems = data::check_dataset(*ds, rank, world, &outside);
      for (const auto& p : problems) std::fprintf(stderr, "check: %s: %s\n", ds->path().c_str(), p.c_str());
      failed = !problems.empty();
      if (mpi) {
        failed = mpi->any(failed);
        for (std::int64_t* count : {&outside.a, &outside.b}) {
          std::int64_t all = 0;
          for (const std::string& each : mpi->allgather(std::to_string(*count))) all += std::stoll(each);
          *count = all;
        }
      }
      if (!failed && rank == 0) {
        const data::SplitInfo& train = ds->split(data::format::kTrain);
        std::printf("check: values outside their domain's range: A %lld (of %s), B %lld (of %s)%s\n",
                    static_cast<long long>(outside.a), data::to_string(train.samples_a.range).c_str(),
                    static_cast<long long>(outside.b), data::to_string(train.samples_b.range).c_str(),
                    outside.a + outside.b > 0 ? ": they map beyond [-1, 1]" : "");
      }
      if (!failed && rank == 0)
        std::printf("check: OK, every image of every split read and validated (%d reader%s)\n", world,
                    world > 1 ? "s" : "");
    }
  }
  return failed ? 1 : 0;
}

}  // namespace pix2pix::cli
