// The model registry (See Note [the model registry]): what the shipped rows say, and a model added
// the way docs/architecture.md's "Adding a model" walks through it: a GanModel of its own, an
// option of its own and a validation score of its own, in a row registered here (it is not
// shipped), then declared and checked by the command line, trained by the shared run loop (which
// calls its score), resumed exactly, refused by another model's checkpoint, and loaded for
// inference, with no other file touched.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli/cli_helpers.hpp"
#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/cli/options.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/nets/model_shape.hpp"
#include "pix2pix/train/trainer.hpp"
#include "support/cpu_device.hpp"
#include "support/fixtures.hpp"
#include "support/model_access.hpp"

using namespace pix2pix;
namespace po = boost::program_options;
using pix2pix::fixtures::TempDir;
using pix2pix::fixtures::weights;

namespace {

using pix2pix::fixtures::kCpu;

// The smallest GanModel: a generator alone, learning B from A by L1 (a regression, no adversary).
class L1OnlyModel : public gan::GanModel {
 public:
  L1OnlyModel(const gan::ModelOptions& options, const gan::ModelInputs& inputs, const torch::Device& device,
              dist::Communicator& comm)
      : options_(options), weight_(gan::parameter(options, "l1only-weight")), device_(device) {
    generator_ = nets::make_generator(gan::generator_options(options_, inputs));
    nets::init_weights(*generator_);
    generator_->to(device_);
    // A paired model's shape line wants a discriminator's fields: those it would have.
    shape_ = nets::describe_model_shape(
        generator_->options(), gan::discriminator_options(options_, inputs, inputs.channels_a + inputs.channels_b));
    update_ = std::make_unique<optim::UpdateGroup>("G", "generator", generator_->parameters(), options_.update, device_,
                                                   comm);
  }

  gan::StepLosses step(const data::Batch& batch) override {
    update_->zero_grad();
    torch::Tensor fake_b;
    {
      optim::AutocastGuard autocast(device_, options_.update.precision);
      fake_b = generator_->forward(batch.a);
    }
    const torch::Tensor loss = gan::pixel_l1_loss(fake_b, batch.b) * weight_;
    update_->backward(loss);
    update_->average();
    const torch::Tensor skipped = update_->step();
    gan::StepLosses out;
    out.values = torch::stack({gan::loss_value(loss)});
    out.skipped = gan::skipped_flags({skipped});
    return out;
  }
  const std::vector<std::string>& loss_names() const override { return names_; }
  std::string progress_status(const std::vector<double>& losses) const override {
    return "L1 " + std::to_string(losses.at(0));
  }
  std::vector<gan::NamedNetwork> networks() override { return {{"G", "generator", generator_.get()}}; }
  std::vector<optim::UpdateGroup*> update_groups() override { return {update_.get()}; }
  nets::Generator& translator() override { return generator_; }
  std::string shape() const override { return shape_; }

 private:
  gan::ModelOptions options_;
  double weight_;  // --l1only-weight
  torch::Device device_;
  std::vector<std::string> names_{"loss_G_l1"};
  nets::Generator generator_{nullptr};
  std::string shape_;
  std::unique_ptr<optim::UpdateGroup> update_;
};

// What its validation score saw, call by call.
struct ScoreCall {
  std::int64_t a_images, b_images, sample_count;
  bool translator;  // it was handed the generator the model translates with
};
std::vector<ScoreCall>& score_calls() {
  static std::vector<ScoreCall> calls;
  return calls;
}
nets::Generator* l1only_translator = nullptr;  // the last L1OnlyModel's

// Its score, "input": a stand-in that says which call it is (10 + the call's number), so that the
// test sees each validation's value reach metrics.csv.
gan::ContentScore input_score() {
  gan::ContentScore score;
  score.name = "input";
  score.metric = "input PSNR";
  score.why_unpaired = " (a test's)";
  score.reported = "input (a test's)";
  score.score = [](const gan::ValImages& v) {
    score_calls().push_back({v.a.size(0), v.b.size(0), v.sample_count,
                             l1only_translator != nullptr && v.generator->get() == l1only_translator->get()});
    gan::ContentResult result;
    result.psnr = 10.0 + static_cast<double>(score_calls().size());
    return result;
  };
  return score;
}

// Its row, registered once for every test of this file.
void register_l1only() {
  static const bool done = [] {
    gan::ModelEntry entry;
    entry.name = "l1only";
    entry.help = "a generator alone, L1 to B (a test's)";
    entry.learns_from_pairs = true;
    entry.content = input_score();
    entry.parameters = {{"l1only-weight", 1.0, "weight of the L1 to B"}};
    entry.dropout = false;
    entry.make = [](const gan::ModelOptions& options, const gan::ModelInputs& inputs, const torch::Device& device,
                    dist::Communicator& comm, gan::RecognitionLoss*) -> std::unique_ptr<gan::GanModel> {
      auto model = std::make_unique<L1OnlyModel>(options, inputs, device, comm);
      l1only_translator = &model->translator();
      return model;
    };
    gan::register_model(entry);
    return true;
  }();
  (void)done;
}

train::TrainOptions l1only_options(const std::string& data, const std::string& run_dir) {
  train::TrainOptions o;
  o.model = "l1only";
  o.data = data;
  o.loader.batch_size = 8;
  o.loader.seed = 5;
  o.ngf = 8;
  o.ndf = 8;
  o.dropout = false;
  o.lr.lr = 1e-3;
  o.lr.epochs = 10;
  o.max_epochs = 3;
  o.early_stopping = {1, 100, 0.0, true};
  o.run_dir = run_dir;
  o.effective_config = "data = " + o.data + "\n";
  return o;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The training options the command line makes of `words` ("--data" and the like given).
train::TrainOptions from_command_line(std::vector<std::string> words) {
  words.insert(words.begin(), {"train", "--data", "x.h5"});
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const cli::TrainCommandLine train;
  const auto vm = cli::parse_command({"train", "", ""}, train.options(), po::positional_options_description(),
                                     static_cast<int>(words.size()), argv.data(), &train.hidden());
  return train.resolve(*vm, 1);
}

std::string usage_error(const std::vector<std::string>& words) {
  try {
    from_command_line(words);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(taken)";
}

}  // namespace

TEST(ModelRegistry, TheShippedRowsAndWhatTheCommandLineMakesOfThem) {
  EXPECT_EQ(gan::default_model().name, "pix2pix");
  const std::string names = gan::model_names(" | ");
  EXPECT_EQ(names.rfind("pix2pix | cyclegan | onesided", 0), 0u) << names;
  EXPECT_EQ(gan::models_taking("pool-size"), "cyclegan and onesided");
  EXPECT_EQ(gan::models_taking("lambda-l1"), "pix2pix");
  EXPECT_TRUE(gan::model_entry("cyclegan").takes("lambda-A"));
  EXPECT_FALSE(gan::model_entry("onesided").takes("lambda-A"));
  ASSERT_TRUE(gan::model_entry("onesided").content.has_value());
  EXPECT_EQ(gan::model_entry("onesided").content->name, "deviation");
  EXPECT_FALSE(gan::model_entry("pix2pix").content.has_value()) << "it learns from pairs: nothing to score";
  EXPECT_TRUE(gan::model_entry("pix2pix").learns_from_pairs);
  const std::string net_g = gan::per_model([](const gan::ModelEntry& m) { return m.net_g; });
  EXPECT_EQ(net_g.rfind("unet for pix2pix, resnet_9blocks for cyclegan and onesided", 0), 0u) << net_g;
  try {
    gan::model_entry("cycle");
    ADD_FAILURE() << "--model cycle was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--model must be one of pix2pix, cyclegan, onesided"), std::string::npos)
        << e.what();
  }
  gan::ModelEntry twin = gan::model_entry("cyclegan");
  EXPECT_THROW(gan::register_model(twin), Error) << "a second cyclegan";
  twin.name = "no_factory";
  twin.make = nullptr;
  EXPECT_THROW(gan::register_model(twin), Error);
}

TEST(ModelRegistry, AModelAddedInATestTrainsResumesExactlyAndTranslates) {
  register_l1only();
  score_calls().clear();
  EXPECT_NE(gan::model_names(" | ").find("onesided | l1only"), std::string::npos) << "registered last";
  EXPECT_EQ(gan::models_taking("lambda-l1"), "pix2pix") << "it takes no other model's option";
  EXPECT_EQ(gan::models_taking("l1only-weight"), "l1only");
  TempDir dir;
  const std::string data = dir / "d.h5";
  fixtures::make_fashion_edges_dataset(data, 40, 32);
  dist::LocalCommunicator comm;

  // Three epochs straight, and two then one more from the checkpoint: the same weights.
  train::Trainer straight(l1only_options(data, dir / "a"), kCpu, comm);
  straight.run();
  EXPECT_EQ(first_line(dir / "a/metrics.csv").rfind("epoch,step,lr,loss_G_l1,", 0), 0u)
      << first_line(dir / "a/metrics.csv");
  auto first = l1only_options(data, dir / "b");
  first.max_epochs = 2;
  train::Trainer(first, kCpu, comm).run();
  auto second = first;
  second.max_epochs = 3;
  second.resume = "auto";
  train::Trainer resumed(second, kCpu, comm);
  resumed.run();
  const auto wa = weights(straight), wb = weights(resumed);
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(torch::equal(wa[i], wb[i])) << "parameter " << i;

  // Another model does not continue its checkpoint; inference loads its generator.
  // Its score ran at every validation, on the whole val split, and its values are the val_input_psnr column.
  const auto val = data::PairedDataset::open(data)->split(data::format::kVal).count;
  ASSERT_EQ(score_calls().size(), 3u + 2u + 1u) << "3 epochs straight, 2 and 1 more";
  for (const ScoreCall& call : score_calls()) {
    EXPECT_EQ(call.a_images, val);
    EXPECT_EQ(call.b_images, val);
    EXPECT_EQ(call.sample_count, 0) << "a paired split's samples are G(A) against B";
  }
  EXPECT_TRUE(score_calls().back().translator);
  const std::string header = first_line(dir / "a/metrics.csv");
  EXPECT_NE(header.find(",val_l1,val_input_psnr,val_input_psnr_smoothed,"), std::string::npos) << header;
  EXPECT_EQ(cli_tests::metrics_column(dir / "a/metrics.csv", "val_input_psnr"), (std::vector<double>{11, 12, 13}));

  auto other = second;
  other.model = "pix2pix";
  other.max_epochs = 4;
  EXPECT_THROW(train::Trainer(other, kCpu, comm), Error);
  auto saved = checkpoint::load_generator(dir / "a/checkpoints/best_generator.pt", kCpu);
  EXPECT_TRUE(nets::parse_model_shape(saved.model_shape).model.empty()) << "a paired model's line";
  const torch::Tensor out = saved.generator->forward(torch::zeros({1, 1, 32, 32}));
  EXPECT_EQ(out.sizes(), torch::IntArrayRef({1, 1, 32, 32}));
}

TEST(ModelRegistry, AModelsOwnOptionIsDeclaredCheckedAndRefusedFromItsRowAlone) {
  register_l1only();
  const cli::TrainCommandLine train;
  const auto* option = train.options().find_nothrow("l1only-weight", false);
  ASSERT_NE(option, nullptr) << "declared from the row";
  EXPECT_EQ(option->description(), "l1only: weight of the L1 to B");
  EXPECT_EQ(from_command_line({"--model", "l1only", "--l1only-weight", "3"}).model_parameters.at("l1only-weight"), 3);
  EXPECT_EQ(from_command_line({"--model", "l1only"}).model_parameters.at("l1only-weight"), 1) << "its default";
  EXPECT_EQ(usage_error({"--model", "l1only", "--l1only-weight", "-1"}), "--l1only-weight must be >= 0, got -1");
  EXPECT_EQ(usage_error({"--l1only-weight", "3"}),
            "--l1only-weight is an option of l1only; --model pix2pix does not take it");
  EXPECT_EQ(usage_error({"--model", "l1only", "--lambda-l1", "3"}),
            "--lambda-l1 is an option of pix2pix; --model l1only does not take it");
  EXPECT_EQ(from_command_line({"--l1only-weight", "1"}).model_parameters.count("l1only-weight"), 0u)
      << "at its default (as config.cfg lists it) it is not given";

  // Library callers: the value reaches the model (weight 0: no loss) and is checked as on the command line.
  TempDir dir;
  const std::string data = dir / "d.h5";
  fixtures::make_fashion_edges_dataset(data, 40, 32);
  dist::LocalCommunicator comm;
  auto o = l1only_options(data, dir / "zero");
  o.max_epochs = 1;
  o.model_parameters["l1only-weight"] = 0;
  train::Trainer(o, kCpu, comm).run();
  EXPECT_EQ(cli_tests::metrics_column(dir / "zero/metrics.csv", "loss_G_l1"), std::vector<double>{0});
  o.model_parameters["l1only-weight"] = -1;
  o.run_dir = dir / "negative";
  try {
    train::Trainer(o, kCpu, comm);
    ADD_FAILURE() << "a weight below the row's range was taken";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--l1only-weight must be >= 0, got -1") << "the command line's words";
  }
  o.model_parameters = {{"lambda-l1", 5}};
  try {
    train::Trainer(o, kCpu, comm);
    ADD_FAILURE() << "another model's parameter was taken";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--lambda-l1 is an option of pix2pix; --model l1only does not take it");
  }
  gan::ModelEntry clash = gan::model_entry("l1only");
  clash.name = "l1only_twin";
  clash.parameters[0].default_value = 2;
  EXPECT_THROW(gan::register_model(clash), Error) << "one option, two defaults";
}
