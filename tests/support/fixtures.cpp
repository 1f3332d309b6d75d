#include "support/fixtures.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "pix2pix/data/idx_reader.hpp"
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

std::string reference_python() {
  return std::string(PIX2PIX_TEST_PYTHON) + " ";
}

std::string address_space_limit(long long headroom) {
  // ldd's lines: "libx.so.1 => /path/libx.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
  const auto listing = run_shell("ldd " + pix2pix_bin());
  if (listing.status != 0) throw std::runtime_error("ldd " + pix2pix_bin() + ": " + listing.output);
  long long bytes = static_cast<long long>(std::filesystem::file_size(pix2pix_bin()));
  std::istringstream lines(listing.output);
  std::string line;
  while (std::getline(lines, line)) {
    const auto arrow = line.find("=> ");
    const auto from = arrow == std::string::npos ? line.find_first_not_of(" \t") : arrow + 3;
    if (from == std::string::npos) continue;
    const std::string path = line.substr(from, line.find(' ', from) - from);
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (!error) bytes += static_cast<long long>(size);
  }
  return "prlimit --as=" + std::to_string(bytes + headroom) + " ";
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

void make_fashion_unpaired_dataset(const std::string& out, const std::string& work, int shirts, int pullovers,
                                   int size) {
  const auto images = data::read_idx_images(fashion_mnist("t10k-images-idx3-ubyte.gz"));
  const auto labels = data::read_idx_labels(fashion_mnist("t10k-labels-idx1-ubyte.gz"));
  constexpr std::int32_t kShirt = 6, kPullover = 2;
  int written_a = 0, written_b = 0;
  for (std::int64_t i = 0; i < images.count && (written_a < shirts || written_b < pullovers); ++i) {
    const std::int32_t label = labels[static_cast<size_t>(i)];
    const bool to_a = label == kShirt && written_a < shirts, to_b = label == kPullover && written_b < pullovers;
    if (!to_a && !to_b) continue;
    const cv::Mat image(static_cast<int>(images.rows), static_cast<int>(images.cols), CV_8UC1,
                        const_cast<std::uint8_t*>(images.pixels.data() + i * images.rows * images.cols));
    char name[32];
    std::snprintf(name, sizeof(name), "%05lld.png", static_cast<long long>(i));
    write_png(work + (to_a ? "/shirts/" : "/pullovers/") + name, image);
    ++(to_a ? written_a : written_b);
  }
  data::PrepareOptions o;
  o.source.kind = data::SourceKind::unpaired;
  o.source.dir = work + "/shirts";
  o.source.dir_b = work + "/pullovers";
  o.channels_a = o.channels_b = 1;
  o.size = size;
  o.val_fraction = 0.125;
  o.out = out;
  data::run_prepare(o);
}

void make_unpaired_pattern_dataset(const std::string& out, int train_a, int train_b, int val_a, int val_b, int size,
                                   int channels_a, int channels_b, bool paired_val) {
  data::PairedFileWriter writer(out, 0);
  writer.write_root_attributes("test patterns", data::format::kPairingUnpaired, "tests");
  data::SplitLayout layout{size, size, channels_a, channels_b, false, true, 16};
  layout.paired = false;
  layout.name_bytes_b = 16;
  writer.begin_split(data::format::kTrain, layout);
  for (int i = 0; i < train_a; ++i)
    writer.append_image(data::format::Domain::A, pattern_image(size, size, channels_a, i).data,
                        "a" + std::to_string(i));
  for (int i = 0; i < train_b; ++i)
    writer.append_image(data::format::Domain::B, pattern_image(size, size, channels_b, 1000 + i).data,
                        "b" + std::to_string(i));
  layout.paired = paired_val;
  writer.begin_split(data::format::kVal, layout);
  for (int i = 0; i < val_a; ++i) {
    const cv::Mat a = pattern_image(size, size, channels_a, 500 + i);
    if (paired_val) {
      writer.append(a.data, pattern_image(size, size, channels_b, 1500 + i).data, 0, "v" + std::to_string(i));
    } else {
      writer.append_image(data::format::Domain::A, a.data, "va" + std::to_string(i));
    }
  }
  for (int i = 0; i < (paired_val ? 0 : val_b); ++i)
    writer.append_image(data::format::Domain::B, pattern_image(size, size, channels_b, 1500 + i).data,
                        "vb" + std::to_string(i));
  writer.close();
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
