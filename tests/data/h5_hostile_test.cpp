// Files that lie: shapes declared but never stored, splits that disagree, format-1 strings in a
// damaged global heap, paths that are not files. Each is refused with an Error naming the file,
// quickly and without allocating what the header claims or crashing the reader.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/dataset_check.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"
#include "support/h5_craft.hpp"

using namespace pix2pix;
using fixtures::craft_h5;
using fixtures::crafted_split;
using fixtures::TempDir;

using pix2pix::fixtures::contains;

namespace {

std::string open_error(const std::string& path) {
  try {
    data::PairedDataset::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::vector<std::pair<std::string, fixtures::CraftedDataset>> declared_only(hsize_t n, hsize_t side, hsize_t c) {
  auto split = crafted_split("train");
  split[0].second.dims = {n, side, side, c};
  split[1].second.dims = {n, side, side, c};
  split[0].second.stored = split[1].second.stored = false;
  for (auto& d : crafted_split("val")) split.push_back(d);
  return split;
}

}  // namespace

TEST(HostileDataset, DeclaredButUnstoredPairsAreRefusedOnOpen) {
  TempDir dir;
  // The probe's files: shapes within every limit, not one chunk written (a few KB on disk).
  craft_h5(dir / "wide.h5", {"train", "val"}, declared_only(2147483647, 32, 1));
  craft_h5(dir / "huge.h5", {"train", "val"}, declared_only(1000000000, 4096, 3));
  for (const char* name : {"wide.h5", "huge.h5"}) {
    const std::string path = dir / name;
    ASSERT_LT(std::filesystem::file_size(path), 100000u);
    // In a child that may map 2 GiB more: a reader that sized anything from the declared count
    // (a permutation of 2^31 pairs is 16 GiB) fails there, not on this machine.
    const auto outcome = fixtures::run_in_child(
        [&] {
          fixtures::limit_address_space(2LL << 30);
          try {
            const auto ds = data::PairedDataset::open(path);
            data::LoaderOptions o;
            o.batch_size = 4;
            data::BatchLoader loader(ds, o, torch::kCPU);
            return 0;  // accepted: wrong
          } catch (const Error& e) {
            const std::string m = e.what();
            return contains(m, path) && contains(m, "/train/A") && contains(m, "declares") &&
                           contains(m, "stores only 0 of its")
                       ? 10
                       : 11;
          } catch (...) {
            return 12;  // std::bad_alloc or a LibTorch allocation failure: the header sized memory
          }
        },
        60);
    EXPECT_TRUE(outcome.exited && outcome.code == 10) << name << ": " << outcome.describe() << "; " << open_error(path);
  }
}

TEST(HostileDataset, PartlyWrittenAndUnallocatedStorageAreRefused) {
  TempDir dir;
  // Chunked: 4 pairs declared, 2 written.
  auto split = crafted_split("train");
  for (auto& d : crafted_split("val")) split.push_back(d);
  split[0].second.stored = false;
  craft_h5(dir / "part.h5", {"train", "val"}, split);
  {
    const hid_t file = H5Fopen((dir / "part.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t a = H5Dopen2(file, "/train/A", H5P_DEFAULT);
    const hid_t space = H5Dget_space(a);
    const hsize_t start[4] = {0, 0, 0, 0}, count[4] = {2, 8, 8, 3};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
    const hid_t mem = H5Screate_simple(4, count, nullptr);
    std::vector<unsigned char> zeros(2 * 8 * 8 * 3, 7);
    ASSERT_GE(H5Dwrite(a, H5T_NATIVE_UINT8, mem, space, H5P_DEFAULT, zeros.data()), 0);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(a);
    H5Fclose(file);
  }
  const std::string part = open_error(dir / "part.h5");
  EXPECT_TRUE(contains(part, "/train/A: declares 4 pairs") && contains(part, "stores only 2 of its 4 chunks")) << part;

  // Contiguous, never written: no storage allocated at all.
  craft_h5(dir / "contig.h5", {"train", "val"}, split);
  {
    const hid_t file = H5Fopen((dir / "contig.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(file, "/train/A", H5P_DEFAULT);
    const hsize_t dims[4] = {4, 8, 8, 3};
    const hid_t space = H5Screate_simple(4, dims, nullptr);
    const hid_t a = H5Dcreate2(file, "/train/A", H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(a, 0);
    H5Dclose(a);
    H5Sclose(space);
    H5Fclose(file);
  }
  const std::string contig = open_error(dir / "contig.h5");
  EXPECT_TRUE(contains(contig, "/train/A: declares 4 pairs") && contains(contig, "storage holds 0 bytes")) << contig;
}

TEST(HostileDataset, SplitsOfAnotherImageSizeOrChannelCountAreRefused) {
  TempDir dir;
  auto split = crafted_split("train", 4, 8);
  for (auto& d : crafted_split("val", 4, 16)) split.push_back(d);
  craft_h5(dir / "size.h5", {"train", "val"}, split);
  const std::string size = open_error(dir / "size.h5");
  EXPECT_TRUE(contains(size, "size.h5: /val: pairs of 16x16") && contains(size, "differ from /train's 8x8")) << size;

  auto channels = crafted_split("train");
  auto val = crafted_split("val");
  val[1].second.dims[3] = 3;
  channels.insert(channels.end(), val.begin(), val.end());
  craft_h5(dir / "ch.h5", {"train", "val"}, channels);
  const std::string ch = open_error(dir / "ch.h5");
  EXPECT_TRUE(contains(ch, "/val: pairs of 8x8 (A 3 ch, B 3 ch) differ from /train's 8x8 (A 3 ch, B 1 ch)")) << ch;
}

TEST(HostileDataset, Format1FilesAreStillReadTheirStringsInAnIsolatedProcess) {
  TempDir dir;
  const hid_t variable_string = H5Tcopy(H5T_C_S1);
  H5Tset_size(variable_string, H5T_VARIABLE);
  auto split = crafted_split("train");
  for (auto& d : crafted_split("val")) split.push_back(d);
  split.push_back({"train", {"names", variable_string, {4}}});
  craft_h5(dir / "v1.h5", {"train", "val"}, split, "pix2pix-h5", 1);
  H5Tclose(variable_string);
  const auto ds = data::PairedDataset::open(dir / "v1.h5");
  EXPECT_EQ(ds->attributes().version, 1);
  EXPECT_EQ(ds->attributes().format, "pix2pix-h5");
  EXPECT_EQ(ds->read_names("train", {3, 1}), (std::vector<std::string>{"name3", "name1"}));
  EXPECT_TRUE(data::check_dataset(*ds, 0, 1).empty());
}

TEST(HostileDataset, DamagedGlobalHeapOfAFormat1FileIsAnErrorNotACrash) {
  TempDir dir;
  const hid_t variable_string = H5Tcopy(H5T_C_S1);
  H5Tset_size(variable_string, H5T_VARIABLE);
  auto split = crafted_split("train", 40);
  for (auto& d : crafted_split("val")) split.push_back(d);
  split.push_back({"train", {"names", variable_string, {40}}});
  const std::string pristine = dir / "pristine.h5";
  craft_h5(pristine, {"train", "val"}, split, "pix2pix-h5", 1);
  H5Tclose(variable_string);
  // The global heap collection holds every string as an object: index (2 bytes), reference
  // count (2), reserved (4), size (8), then the bytes. An object that claims 1 MiB makes HDF5
  // 1.10 copy past the collection: SIGSEGV in H5HG_read, as in the probe's damaged file, which the
  // isolated reader turns into an error; HDF5 1.14 checks the size itself and fails the read (its
  // error through our check macro). Either way: an error naming the file. Damage the string of the
  // root attribute 'format' ("pix2pix-h5"), then one of the names ("name7").
  for (const char* victim : {"pix2pix-h5", "name7"}) {
    const std::string path = dir / (std::string(victim) + ".h5");
    std::filesystem::copy_file(pristine, path);
    const long object = fixtures::find_bytes(path, victim);
    ASSERT_GT(object, 16) << victim;
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(object - 8);
      const char size[8] = {0, 0, 0x10, 0, 0, 0, 0, 0};
      f.write(size, 8);
    }
    const auto outcome = fixtures::run_in_child(
        [&] {
          try {
            const auto ds = data::PairedDataset::open(path);
            for (const auto& problem : data::check_dataset(*ds, 0, 1))
              if (contains(problem, path) && contains(problem, "/train/names") && contains(problem, "crashed"))
                return 10;
            return 11;
          } catch (const Error& e) {
            const bool explained = contains(e.what(), "global heap") || contains(e.what(), "HDF5 call");
            return contains(e.what(), path) && explained ? 10 : 12;
          }
        },
        120);
    EXPECT_TRUE(outcome.exited && outcome.code == 10) << victim << ": " << outcome.describe();
  }
}

TEST(HostileDataset, PathsThatAreNotRegularFilesAreRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir / "pipe.h5";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto outcome = fixtures::run_in_child(
      [&] { return contains(open_error(fifo), "pipe.h5: is a FIFO (named pipe), not a regular file") ? 10 : 11; }, 20);
  EXPECT_TRUE(outcome.exited && outcome.code == 10) << outcome.describe();
  EXPECT_TRUE(contains(open_error("/dev/zero"), "/dev/zero: is a character device")) << open_error("/dev/zero");
  EXPECT_TRUE(contains(open_error(dir.path().string()), "is a directory")) << open_error(dir.path().string());
  EXPECT_TRUE(contains(open_error(dir / "absent.h5"), "absent.h5: no such file"));
}
