#include "support/fixtures.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "pix2pix/data/prepare.hpp"

namespace fs = std::filesystem;

namespace pix2pix::fixtures {

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "pix2pix-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

cv::Mat pattern_image(int height, int width, int channels, int id) {
  cv::Mat image(height, width, CV_8UC(channels));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        image.ptr<std::uint8_t>(y)[x * channels + c] =
            static_cast<std::uint8_t>((id * 37 + y * 7 + x * 3 + c * 50) % 256);
  return image;
}

void write_png(const std::string& path, const cv::Mat& image) {
  fs::create_directories(fs::path(path).parent_path());
  cv::Mat bgr = image;
  if (image.channels() == 3) cv::cvtColor(image, bgr, cv::COLOR_RGB2BGR);
  if (!cv::imwrite(path, bgr)) throw std::runtime_error("cannot write " + path);
}

void write_pattern_folder(const std::string& dir, int count, int height, int width, int channels, bool aligned,
                          int first_id) {
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "img%03d.png", first_id + i);
    cv::Mat image = pattern_image(height, width, channels, first_id + i);
    if (aligned) {
      cv::Mat b = pattern_image(height, width, channels, 1000 + first_id + i);
      cv::hconcat(image, b, image);
    }
    write_png((fs::path(dir) / name).string(), image);
  }
}

CommandResult run_cli(const std::string& args) {
  return run_shell(std::string(PIX2PIX_BIN) + " " + args);
}

CommandResult run_shell(const std::string& shell_command) {
  const std::string command = shell_command + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed");
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string pix2pix_bin() {
  return PIX2PIX_BIN;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string fashion_mnist(const std::string& file) {
  return std::string(FASHION_MNIST_DIR) + "/" + file;
}

void make_fashion_edges_dataset(const std::string& out, std::int64_t limit, int size, bool labels, int compression) {
  data::PrepareOptions o;
  o.source.kind = data::SourceKind::images;
  o.source.dir = "idx:" + fashion_mnist("t10k-images-idx3-ubyte.gz");
  o.source.limit = limit;
  o.source.labels = labels;
  o.derive_enabled = true;
  o.derive = data::DeriveMode::edges;
  o.size = size;
  o.compression = compression;
  o.out = out;
  data::run_prepare(o);
}

void make_pattern_dataset(const std::string& out, int train, int val, int size, int channels_a, int channels_b,
                          bool labels) {
  data::PairedFileWriter writer(out, 0);
  writer.write_root_attributes("test patterns", "A = pattern(id), B = pattern(1000 + id)", "tests");
  int id = 0;
  for (const auto& [split, count] :
       {std::pair<const char*, int>{data::format::kTrain, train}, {data::format::kVal, val}}) {
    writer.begin_split(split, {size, size, channels_a, channels_b, labels, true, 16});
    for (int i = 0; i < count; ++i, ++id) {
      const cv::Mat a = pattern_image(size, size, channels_a, id);
      const cv::Mat b = pattern_image(size, size, channels_b, 1000 + id);
      writer.append(a.data, b.data, id % 10, "pair" + std::to_string(id));
    }
    writer.end_split();
  }
  writer.close();
}

}  // namespace pix2pix::fixtures
