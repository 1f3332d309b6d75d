// translate's parts: what it reads and the names it writes, how an image reaches the U-Net's
// sizes and comes back, and the translation itself (the generator's pixels, skipped and refused
// inputs, and any number of ranks writing what one process writes).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/infer/image_fit.hpp"
#include "pix2pix/infer/translator.hpp"
#include "pix2pix/metrics/image_metrics.hpp"
#include "support/fixtures.hpp"
#include "support/thread_communicator.hpp"

using namespace pix2pix;
using pix2pix::fixtures::error_of;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

bool same_pixels(const cv::Mat& x, const cv::Mat& y) {
  return x.size() == y.size() && x.type() == y.type() && cv::norm(x, y, cv::NORM_INF) == 0;
}

nets::Generator eval_generator(std::int64_t channels) {
  torch::manual_seed(9);
  nets::Generator g = nets::make_generator(nets::GeneratorOptions{channels, channels, 5, 8, nets::Norm::batch, false});
  nets::init_weights(*g);
  g->eval();
  return g;
}

infer::TranslateOptions options(const std::string& output_dir, infer::ResizeMode resize) {
  infer::TranslateOptions o;
  o.output_dir = output_dir;
  o.batch_size = 2;
  o.resize = resize;
  o.geometry = {32, 32, 32};
  o.progress = ProgressStyle::none;
  return o;
}

}  // namespace

TEST(ImageFit, PlansTheSizesTheUnetTakes) {
  const infer::ModelGeometry trained{64, 96, 32}, unknown{0, 0, 32};
  auto plan = infer::plan_fit(50, 70, infer::ResizeMode::model, trained);
  EXPECT_TRUE(plan.resize);
  EXPECT_EQ(plan.model_height, 64);
  EXPECT_EQ(plan.model_width, 96);
  plan = infer::plan_fit(50, 10, infer::ResizeMode::model, unknown);  // nearest multiples, at least one
  EXPECT_EQ(plan.model_height, 64);
  EXPECT_EQ(plan.model_width, 32);
  plan = infer::plan_fit(50, 64, infer::ResizeMode::none, trained);
  EXPECT_FALSE(plan.resize);
  EXPECT_EQ(plan.model_height, 64);
  EXPECT_EQ(plan.model_width, 64);
  EXPECT_EQ(plan.height, 50);
  EXPECT_EQ(plan.width, 64);
  EXPECT_THROW(infer::parse_resize_mode("stretch"), UsageError);
}

TEST(ImageFit, ReflectionPaddingIsTorchsAndCropsBackExactly) {
  const cv::Mat image = fixtures::pattern_image(20, 27, 3, 4);
  const auto plan = infer::plan_fit(20, 27, infer::ResizeMode::none, {0, 0, 32});
  const cv::Mat padded = infer::to_model_size(image, plan);
  ASSERT_EQ(padded.rows, 32);
  ASSERT_EQ(padded.cols, 32);
  const auto chw = torch::from_blob(image.data, {1, 20, 27, 3}, torch::kUInt8).permute({0, 3, 1, 2}).to(torch::kFloat);
  const auto torch_padded = torch::reflection_pad2d(chw, {0, 5, 0, 12}).permute({0, 2, 3, 1}).to(torch::kUInt8);
  EXPECT_TRUE(torch::equal(torch::from_blob(padded.data, {1, 32, 32, 3}, torch::kUInt8), torch_padded));
  EXPECT_TRUE(same_pixels(infer::to_image_size(padded, plan), image));

  // Tiny images reflect more than once; sizes still come out right.
  const cv::Mat tiny = fixtures::pattern_image(3, 5, 1, 2);
  const auto tiny_plan = infer::plan_fit(3, 5, infer::ResizeMode::none, {0, 0, 32});
  EXPECT_EQ(infer::to_model_size(tiny, tiny_plan).size(), cv::Size(32, 32));
  EXPECT_TRUE(same_pixels(infer::to_image_size(infer::to_model_size(tiny, tiny_plan), tiny_plan), tiny));

  // --resize model: an image at the trained size goes through untouched; others come back at their size.
  const auto same = infer::plan_fit(32, 32, infer::ResizeMode::model, {32, 32, 32});
  EXPECT_TRUE(same_pixels(infer::to_model_size(fixtures::pattern_image(32, 32, 1, 1), same),
                          fixtures::pattern_image(32, 32, 1, 1)));
  const auto other = infer::plan_fit(45, 37, infer::ResizeMode::model, {32, 32, 32});
  const cv::Mat in = infer::to_model_size(fixtures::pattern_image(45, 37, 1, 1), other);
  EXPECT_EQ(in.size(), cv::Size(32, 32));
  EXPECT_EQ(infer::to_image_size(in, other).size(), cv::Size(37, 45));
}

TEST(TranslationInputs, MirrorRelativeNamesAndRefuseCollisions) {
  TempDir dir;
  fixtures::write_png(dir / "in/b.png", fixtures::pattern_image(32, 32, 1, 1));
  fixtures::write_png(dir / "in/sub/a.png", fixtures::pattern_image(32, 32, 1, 2));
  cv::imwrite(dir / "in/c.JPG", fixtures::pattern_image(32, 32, 1, 3));
  std::ofstream(dir / "in/notes.txt") << "not an image";
  const auto inputs = infer::list_folder_inputs(dir / "in", ".png");
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(inputs[0].output, "b.png");
  EXPECT_EQ(inputs[1].output, "c.png");
  EXPECT_EQ(inputs[2].output, "sub/a.png");
  EXPECT_EQ(inputs[2].path, dir / "in/sub/a.png");
  infer::check_distinct_outputs(inputs);

  const auto one = infer::list_folder_inputs(dir / "in/sub/a.png", ".jpg");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].output, "a.jpg");

  cv::imwrite(dir / "in/b.jpg", fixtures::pattern_image(32, 32, 1, 4));
  const std::string collision =
      error_of([&] { infer::check_distinct_outputs(infer::list_folder_inputs(dir / "in", ".png")); });
  EXPECT_NE(collision.find((dir / "in/b.jpg") + " and " + (dir / "in/b.png") + " would both be written to b.png"),
            std::string::npos)
      << collision;
  EXPECT_NE(error_of([&] { infer::list_folder_inputs(dir / "nowhere", ".png"); }).find("no such file or folder"),
            std::string::npos);
  fs::create_directories(dir.path() / "empty");
  EXPECT_NE(error_of([&] { infer::list_folder_inputs(dir / "empty", ".png"); }).find("no image files"),
            std::string::npos);
}

TEST(TranslationInputs, DatasetPairsAreNamedByIndexOrStoredName) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "p.h5", 4, 3, 32, 1, 1);
  const auto dataset = data::PairedDataset::open(dir / "p.h5");
  const auto inputs = infer::list_dataset_inputs(*dataset, "val", ".png");
  ASSERT_EQ(inputs.size(), 3u);
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(inputs[static_cast<size_t>(i)].index, i);
    EXPECT_EQ(inputs[static_cast<size_t>(i)].label, (dir / "p.h5") + ":/val[" + std::to_string(i) + "]");
    EXPECT_EQ(fs::path(inputs[static_cast<size_t>(i)].output).extension(), ".png");
  }
  infer::check_distinct_outputs(inputs);
}

TEST(Translator, WritesTheGeneratorsPixelsAndSkipsWhatItCannotRead) {
  TempDir dir;
  fixtures::write_png(dir / "in/a.png", fixtures::pattern_image(32, 32, 1, 1));
  fixtures::write_png(dir / "in/sub/b.png", fixtures::pattern_image(45, 37, 1, 2));
  fixtures::write_png(dir / "in/c.png", fixtures::pattern_image(32, 32, 1, 3));
  std::ofstream(dir / "in/broken.png") << "not a png";
  auto g = eval_generator(1);
  const auto inputs = infer::list_folder_inputs(dir / "in", ".png");
  dist::LocalCommunicator local;
  const auto counts =
      infer::translate_inputs(g, inputs, nullptr, "", options(dir / "out", infer::ResizeMode::model), local);
  EXPECT_EQ(counts.written, 3);
  EXPECT_EQ(counts.skipped, 1);
  EXPECT_FALSE(fs::exists(dir / "out/broken.png"));
  EXPECT_EQ(cv::imread(dir / "out/sub/b.png", cv::IMREAD_UNCHANGED).size(), cv::Size(37, 45));

  // An image at the trained size: the file holds exactly G's output as pixels.
  const cv::Mat a = fixtures::pattern_image(32, 32, 1, 1);
  const auto input = data::to_model_input(torch::from_blob(a.data, {1, 32, 32, 1}, torch::kUInt8).clone());
  const auto expected = metrics::to_pixels(g->forward(input)).to(torch::kUInt8).reshape({32, 32});
  const cv::Mat written = cv::imread(dir / "out/a.png", cv::IMREAD_UNCHANGED);
  ASSERT_EQ(written.type(), CV_8UC1);
  EXPECT_TRUE(torch::equal(torch::from_blob(written.data, {32, 32}, torch::kUInt8), expected));
  for (const auto& entry : fs::recursive_directory_iterator(dir / "out"))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();

  // Existing outputs are named; a channel count the generator does not take is an error.
  const std::string existing = error_of([&] { infer::refuse_existing_outputs(inputs, dir / "out"); });
  EXPECT_NE(existing.find((dir / "out/a.png") + " exists (and 2 more outputs); use --overwrite"), std::string::npos)
      << existing;
  fixtures::write_png(dir / "rgb/x.png", fixtures::pattern_image(32, 32, 3, 1));
  const auto rgb = infer::list_folder_inputs(dir / "rgb", ".png");
  const std::string channels = error_of(
      [&] { infer::translate_inputs(g, rgb, nullptr, "", options(dir / "out2", infer::ResizeMode::model), local); });
  EXPECT_NE(channels.find((dir / "rgb/x.png") + ": 3 channel(s), the generator takes 1 (--channels converts)"),
            std::string::npos)
      << channels;
  auto convert = options(dir / "out2", infer::ResizeMode::model);
  convert.channels = 1;
  EXPECT_EQ(infer::translate_inputs(g, rgb, nullptr, "", convert, local).written, 1);
}

TEST(Translator, AnyNumberOfRanksWritesWhatOneProcessWrites) {
  TempDir dir;
  for (int i = 0; i < 7; ++i)
    fixtures::write_png(dir / ("in/" + std::to_string(i) + ".png"),
                        fixtures::pattern_image(32 + 8 * (i % 3), 40, 1, i));
  const auto inputs = infer::list_folder_inputs(dir / "in", ".png");
  auto g = eval_generator(1);
  dist::LocalCommunicator local;
  infer::translate_inputs(g, inputs, nullptr, "", options(dir / "one", infer::ResizeMode::none), local);
  for (int world : {2, 3}) {
    const std::string out = dir / ("world" + std::to_string(world));
    // Built before the threads: seeding and initialisation use torch's one global generator.
    std::vector<nets::Generator> replicas;
    for (int r = 0; r < world; ++r) replicas.push_back(eval_generator(1));
    fixtures::run_ranks(world, [&](fixtures::ThreadCommunicator& comm) {
      auto& mine = replicas[static_cast<size_t>(comm.rank())];
      const auto counts =
          infer::translate_inputs(mine, inputs, nullptr, "", options(out, infer::ResizeMode::none), comm);
      EXPECT_EQ(counts.written, 7);
    });
    for (const auto& input : inputs)
      EXPECT_EQ(fixtures::read_file(dir / ("one/" + input.output)), fixtures::read_file(out + "/" + input.output))
          << world << " ranks: " << input.output;
  }
}
