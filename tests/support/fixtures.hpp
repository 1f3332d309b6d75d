// Test fixtures: temporary folders, generated images and datasets, and running the CLI.
#pragma once

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace pix2pix::fixtures {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The message of what `f` throws, or "(no error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// Whether this OpenCV reads and writes TIFF (the GPU bundle's is built with PNG and JPEG only).
inline const bool kTiff = cv::haveImageWriter("x.tif");

// A fresh folder under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A deterministic 8-bit image (RGB or grey) whose pixels encode `id`, so that tests can tell
// which source image ended up where.
cv::Mat pattern_image(int height, int width, int channels, int id);
// Writes `image` (RGB or grey) as a PNG, creating parent folders.
void write_png(const std::string& path, const cv::Mat& image);
// Writes `count` images under `dir` named img000.png, ... (A|B side by side when aligned).
void write_pattern_folder(const std::string& dir, int count, int height, int width, int channels, bool aligned = false,
                          int first_id = 0);

struct CommandResult {
  int status = -1;     // exit code, or 128+signal
  std::string output;  // stdout and stderr together
};
// Runs `pix2pix <args>` through the shell and collects its output.
CommandResult run_cli(const std::string& args);
// Runs a shell command line (stderr joined to stdout), e.g. pix2pix under prlimit or timeout.
CommandResult run_shell(const std::string& shell_command);
std::string pix2pix_bin();  // the binary under test
// The Python whose PyTorch runs the reference scripts (CMake's PIX2PIX_TEST_PYTHON), then a space.
std::string reference_python();
// "prlimit --as=N ", N being the bytes of the binary under test and the libraries it loads plus
// `headroom` bytes: an address-space limit that leaves the program `headroom` to allocate, whatever
// its libraries map (a CUDA build's run to gigabytes).
std::string address_space_limit(long long headroom);

std::string fashion_mnist(const std::string& file);  // path under Debian's dataset folder

// The whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

// Prepares the first `limit` Fashion-MNIST test images as an edges -> image dataset at `out`
// (size 0 keeps 28x28), through the library's prepare.
void make_fashion_edges_dataset(const std::string& out, std::int64_t limit, int size, bool labels = false,
                                int compression = 0);

// An unpaired file (format version 3) through the library's `prepare --unpaired`: Fashion-MNIST
// test-set shirts (class 6) as A and pullovers (class 2) as B, `shirts` and `pullovers` of them
// (different numbers), resized to `size`; 1/8 of each becomes the unpaired val split. The PNGs
// go to `work`.
void make_fashion_unpaired_dataset(const std::string& out, const std::string& work, int shirts, int pullovers,
                                   int size);

// An unpaired file written directly: `train_a`/`train_b` and `val_a`/`val_b` images of patterns
// (A ids from 0, B ids from 1000), split val paired when `paired_val` (then val_b is ignored).
void make_unpaired_pattern_dataset(const std::string& out, int train_a, int train_b, int val_a, int val_b, int size,
                                   int channels_a, int channels_b, bool paired_val = false);

// Builds a small valid dataset file through the library (prepare of generated images).
void make_pattern_dataset(const std::string& out, int train, int val, int size, int channels_a, int channels_b,
                          bool labels = false);

}  // namespace pix2pix::fixtures
