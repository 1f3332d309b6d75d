// SHA-256 against FIPS 180-4's examples and against sha256sum on files (See Note [a SHA-256 of our own]).
#include <gtest/gtest.h>

#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/sha256.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;

TEST(Sha256, TheStandardsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FilesAsSha256sumSeesThem) {
  fixtures::TempDir dir;
  // Sizes around the 64-byte block and the 56-byte padding boundary, and one over a read chunk.
  for (const size_t size : {0u, 55u, 56u, 63u, 64u, 65u, 1u << 20, (1u << 20) + 17}) {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + size) & 0xff);
    const std::string path = dir / ("f" + std::to_string(size));
    std::ofstream(path, std::ios::binary) << bytes;
    const auto tool = fixtures::run_shell("sha256sum " + path + " | cut -d' ' -f1");
    EXPECT_EQ(file_sha256(path) + "\n", tool.output) << size;
    EXPECT_EQ(file_sha256(path), sha256_hex(bytes));
  }
  EXPECT_THROW(file_sha256(dir / "missing"), Error);
}
