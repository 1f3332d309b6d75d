// .npy files: written as NumPy reads them (header layout checked byte by byte), read back, and
// the files NumPy writes in other versions and types read; what is not read is refused by name.
#include <gtest/gtest.h>

#include <fstream>

#include "pix2pix/data/npy_file.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::error_of;
using pix2pix::fixtures::TempDir;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A .npy file of format `version` with `header` (padded here) and `data`.
void write_raw(const std::string& path, int version, std::string header, const std::string& data) {
  const size_t prefix = version == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY", 6) + static_cast<char>(version) + '\0';
  for (size_t i = 0; i < prefix - 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream(path, std::ios::binary) << bytes << header << data;
}

}  // namespace

TEST(NpyFile, WrittenAsNumpyWritesAndReadBack) {
  TempDir dir;
  const auto f = torch::randn({3, 5});
  data::write_npy(dir / "f.npy", f);
  const std::string bytes = file_bytes(dir / "f.npy");
  ASSERT_EQ(bytes.size(), 128u + 3 * 5 * 4);  // the data starts at a multiple of 64
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }";
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes.find_first_not_of(' ', 10 + dict.size()), 127u);  // spaces, then the newline
  EXPECT_EQ(bytes[127], '\n');
  EXPECT_TRUE(torch::equal(data::read_npy(dir / "f.npy"), f));
  for (const auto& t : {torch::arange(7, torch::kUInt8), torch::randn({2, 3, 4}, torch::kFloat64), torch::ones({})}) {
    data::write_npy(dir / "t.npy", t);
    const auto back = data::read_npy(dir / "t.npy");
    EXPECT_EQ(back.scalar_type(), t.scalar_type());
    EXPECT_TRUE(torch::equal(back, t));
  }
  EXPECT_NE(file_bytes(dir / "t.npy").find("'shape': ()"), std::string::npos);
  data::write_npy(dir / "v.npy", torch::zeros({4}));
  EXPECT_NE(file_bytes(dir / "v.npy").find("'shape': (4,)"), std::string::npos);
}

TEST(NpyFile, ReadsUint16AndLaterVersionsRefusesTheRest) {
  TempDir dir;
  write_raw(dir / "u2.npy", 2, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
            std::string("\x01\x00\xff\xff", 4));
  const auto u = data::read_npy(dir / "u2.npy");
  EXPECT_EQ(u.scalar_type(), torch::kInt32);
  EXPECT_EQ(u[0].item<int>(), 1);
  EXPECT_EQ(u[1].item<int>(), 65535);
  const auto refusal = [&](const std::string& header, const std::string& data) {
    write_raw(dir / "bad.npy", 1, header, data);
    return error_of([&] { data::read_npy(dir / "bad.npy"); });
  };
  EXPECT_NE(refusal("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", "abcd").find("Fortran order"),
            std::string::npos);
  EXPECT_NE(refusal("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "abcd").find("type '>f4'"),
            std::string::npos);
  EXPECT_NE(refusal("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", "abcd").find("holds 4 data bytes"),
            std::string::npos);
  std::ofstream(dir / "text.npy") << "x,y\n1,2\n";
  const std::string text = error_of([&] { data::read_npy(dir / "text.npy"); });
  EXPECT_NE(text.find("text.npy: not a .npy array"), std::string::npos) << text;
}
