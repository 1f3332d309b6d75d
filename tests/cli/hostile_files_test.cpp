// The smaller hostile cases of "nothing lost, nothing silent" (docs/input-checks.md): folders that
// link back into themselves, an absurd thread count, a label that would size a terabyte, a FIFO as
// --input, an image too large for memory, a config file with a byte-order mark, and messages that
// must say what a file is rather than what it is not.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::fixtures::pattern_image;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::run_shell;
using pix2pix::fixtures::TempDir;
using pix2pix::fixtures::write_png;
namespace fs = std::filesystem;

namespace {

std::string bin() {
  return pix2pix::fixtures::pix2pix_bin();
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  const std::string typed = std::string(type, 4) + data;
  out += typed;
  put_u32(out, static_cast<std::uint32_t>(
                   crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size()))));
}

// A valid black RGB PNG of side x side pixels, small on disk (zeros compress 1000:1) but
// side^2 x 3 bytes once decoded.
void write_huge_png(const std::string& path, std::uint32_t side) {
  z_stream z{};
  deflateInit(&z, 9);
  const std::string row(3 * side + 1, '\0');
  std::string compressed;
  std::vector<unsigned char> buffer(1 << 16);
  for (std::uint32_t y = 0; y <= side; ++y) {
    const bool last = y == side;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(row.data()));
    z.avail_in = last ? 0 : static_cast<uInt>(row.size());
    do {
      z.next_out = buffer.data();
      z.avail_out = static_cast<uInt>(buffer.size());
      deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      compressed.append(reinterpret_cast<char*>(buffer.data()), buffer.size() - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string header;
  put_u32(header, side);
  put_u32(header, side);
  header += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, no filter, no interlace
  put_chunk(png, "IHDR", header);
  put_chunk(png, "IDAT", compressed);
  put_chunk(png, "IEND", "");
  std::ofstream(path, std::ios::binary) << png;
}

// Element `index` of the int32 dataset `where` of an HDF5 file becomes `value`.
void write_int32_element(const std::string& path, const char* where, hsize_t index, std::int32_t value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t dataset = H5Dopen2(file, where, H5P_DEFAULT);
  const hid_t space = H5Dget_space(dataset);
  const hsize_t one = 1;
  H5Sselect_hyperslab(space, H5S_SELECT_SET, &index, nullptr, &one, nullptr);
  const hid_t memory = H5Screate_simple(1, &one, nullptr);
  EXPECT_GE(H5Dwrite(dataset, H5T_NATIVE_INT32, memory, space, H5P_DEFAULT, &value), 0);
  H5Sclose(memory);
  H5Sclose(space);
  H5Dclose(dataset);
  H5Fclose(file);
}

// The root attribute `name` becomes an integer.
void make_root_attribute_an_integer(const std::string& path, const char* name, std::int32_t value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Adelete(file, name);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(file, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(attribute, H5T_NATIVE_INT32, &value), 0);
  H5Aclose(attribute);
  H5Sclose(space);
  H5Fclose(file);
}

}  // namespace

TEST(HostileFiles, AFolderThatLinksBackIntoItselfIsListedOnce) {
  TempDir dir;
  for (int i = 0; i < 10; ++i) write_png(dir / ("src/img" + std::to_string(i) + ".png"), pattern_image(32, 32, 1, i));
  fs::create_directory_symlink(dir / "src", dir / "src/loop");   // to itself
  fs::create_directory_symlink(dir / "src", dir / "src/again");  // the same folder twice
  const auto r = run_cli("prepare --images " + (dir / "src") + " --derive edges --size 32 --val-fraction 0.2 --out " +
                         (dir / "d.h5"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto info = run_cli("inspect " + (dir / "d.h5"));
  EXPECT_TRUE(contains(info.output, "train 8 pairs")) << info.output;
  EXPECT_TRUE(contains(info.output, "val   2 pairs")) << info.output;
}

TEST(HostileFiles, AnAbsurdThreadCountIsLoweredWithAWarningNotACrash) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  const auto r = run_shell("OMP_NUM_THREADS=100000 timeout 120 " + bin() + " train --config " + smoke + " --data " +
                           (dir / "d.h5") + " --run-dir " + (dir / "r") + " --max-epochs 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "warning: OMP_NUM_THREADS=100000 is more than the")) << r.output;
}

TEST(HostileFiles, ALabelBeyondTheFormatsLimitIsNamedNotAllocated) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  // A labelled copy whose one label is 2^31 - 1.
  const std::string data = dir / "labels.h5";
  auto r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                   " --labels --derive edges --size 32 --limit 40 --out " + data);
  ASSERT_EQ(r.status, 0) << r.output;
  write_int32_element(data, "/train/labels", 3, 2147483647);
  r = run_cli("inspect " + data + " --check");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "/train/labels: label 2147483647 in pairs")) << r.output;
  EXPECT_TRUE(contains(r.output, "beyond the format's limit of 65536 classes")) << r.output;
  r = run_shell("prlimit --as=$(numfmt --from=iec 3G) timeout 120 " + bin() + " train-classifier --data " + data +
                " --out " + (dir / "c.pt") + " --max-epochs 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "/train/labels: label 2147483647 is beyond the format's limit")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "c.pt"));
}

TEST(HostileFiles, TranslateRefusesAFifoAndSkipsAnImageTooLargeForMemory) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  ASSERT_EQ(mkfifo((dir / "pipe.png").c_str(), 0600), 0);
  auto r = run_shell("timeout 20 " + bin() + " translate --checkpoint " + (dir / "run") + " --input " +
                     (dir / "pipe.png") + " --output " + (dir / "out"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--input " + (dir / "pipe.png") + ": is a FIFO (named pipe), not a regular file"))
      << r.output;
  // 30000 x 30000 RGB: 2.7 GB decoded, more than the 1.3 GiB this process may map beyond its
  // program and libraries. On the CPU: a GPU's context would not fit in that limit.
  fs::create_directories(dir / "in");
  write_huge_png(dir / "in/huge.png", 30000);
  write_png(dir / "in/small.png", pattern_image(32, 32, 1, 3));
  r = run_shell(pix2pix::fixtures::address_space_limit(1300LL << 20) + "timeout 120 " + bin() +
                " translate --device cpu --checkpoint " + (dir / "run") + " --input " + (dir / "in") + " --output " +
                (dir / "out") + " --channels 1 --max-bad 0.5");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "warning: skipping " + (dir / "in/huge.png") + ": ")) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 1 of 2 images (1 skipped)")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "out/small.png"));
}

TEST(HostileFiles, MessagesSayWhatAFileIs) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  const std::string train = "train --config " + smoke + " --data " + (dir / "d.h5") + " --run-dir " + (dir / "r");
  // --resume with G's weights alone.
  auto r = run_cli(train + " --resume " + (dir / "run/checkpoints/best_generator.pt"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "a generator file (G's weights only, as best_generator.pt), not a full checkpoint"))
      << r.output;
  // A damaged --aux-classifier is a classifier file, not a "checkpoint".
  std::ofstream(dir / "c.pt") << "not a classifier";
  r = run_cli(train + " --aux-classifier " + (dir / "c.pt"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "classifier file " + (dir / "c.pt") + " is damaged")) << r.output;
  // bench --what names train among its choices.
  r = run_cli("bench --what nothing --data " + (dir / "d.h5"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--what must be one of loader, read, train; got 'nothing'")) << r.output;
  // A config file that starts with a UTF-8 byte-order mark reads as one without.
  std::ofstream(dir / "bom.cfg") << "\xEF\xBB\xBFmax-epochs = 1\n";
  r = run_cli("train --config " + (dir / "bom.cfg") + " --data " + (dir / "d.h5") + " --run-dir " + (dir / "b") +
              " --ngf 8 --ndf 8 --batch-size 8 --no-early-stop");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "reached --max-epochs 1")) << r.output;
  // An attribute of the wrong type is named as such, not as missing.
  fs::copy_file(dir / "d.h5", dir / "typed.h5");
  make_root_attribute_an_integer(dir / "typed.h5", "format", 7);
  r = run_cli("inspect " + (dir / "typed.h5"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "attribute 'format' is an integer, not a string")) << r.output;
}
