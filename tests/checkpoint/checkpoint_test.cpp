// Checkpoint files on their own: the seal catches truncation, extension and flipped bytes; a
// failed write leaves the previous file; last.pt keeps its predecessor; resume candidates come
// newest first.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/checkpoint/checkpoint_archive.hpp"
#include "pix2pix/checkpoint/checkpoint_seal.hpp"
#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/model_shape.hpp"
#include "support/fixtures.hpp"
#include "support/torch_files.hpp"

using namespace pix2pix;
using pix2pix::fixtures::load_generator_error;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

void write_bytes(const std::string& path, size_t n, char seed) {
  std::ofstream out(path, std::ios::binary);
  for (size_t i = 0; i < n; ++i) out.put(static_cast<char>(seed + static_cast<char>(i * 7)));
}

// The same bytes as write_bytes, through the checkpoint writer (payload + seal).
void write_sealed(const std::string& path, size_t n, char seed) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(seed + static_cast<char>(i * 7));
  checkpoint::SealedFileWriter file(path);
  for (size_t at = 0; at < n; at += 4099) file.write(bytes.data() + at, std::min<size_t>(4099, n - at));
  file.finish();
}

// A tiny Pix2Pix's networks and optimisers, as a checkpoint names them (and `pools` keys).
struct TinyModel {
  nets::UnetGenerator g{nets::GeneratorOptions{1, 1, 5, 2, nets::Norm::batch, true}};
  nets::PatchDiscriminator d{nets::DiscriminatorOptions{2, 2, 1, nets::Norm::batch}};
  torch::optim::Adam opt_g{g->parameters()}, opt_d{d->parameters()};
  checkpoint::CheckpointParts parts(std::vector<std::string> pools = {}) {
    return {{{"generator", g.get()}, {"discriminator", d.get()}}, {{"g", &opt_g}, {"d", &opt_d}}, std::move(pools)};
  }
};

}  // namespace

TEST(CheckpointSeal, AcceptsWhatItSealedAndRejectsEveryKindOfDamage) {
  TempDir dir;
  const std::string path = dir / "c.pt";
  for (size_t n : {size_t{0}, size_t{5}, size_t{8}, size_t{1000003}}) {
    write_bytes(path, n, 3);
    EXPECT_TRUE(checkpoint::check_seal(path).has_value()) << "an unsealed file of " << n << " bytes passed";
    write_sealed(path, n, 3);
    EXPECT_EQ(checkpoint::check_seal(path), std::nullopt) << n << " bytes";
    EXPECT_EQ(static_cast<std::int64_t>(fs::file_size(path)), static_cast<std::int64_t>(n) + checkpoint::kSealBytes);
  }
  const std::string good = fixtures::read_file(path);
  {  // one flipped bit in the middle of the payload
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(500001);
    f.put(static_cast<char>(good[500001] ^ 0x10));
  }
  const auto flipped = checkpoint::check_seal(path);
  ASSERT_TRUE(flipped.has_value());
  EXPECT_NE(flipped->find("checksum mismatch"), std::string::npos) << *flipped;

  std::ofstream(path, std::ios::binary) << good.substr(0, good.size() / 2);  // truncated
  ASSERT_TRUE(checkpoint::check_seal(path).has_value());
  EXPECT_NE(checkpoint::check_seal(path)->find("no seal"), std::string::npos);

  std::ofstream(path, std::ios::binary) << "xx" << good;  // shifted by two bytes
  ASSERT_TRUE(checkpoint::check_seal(path).has_value());
  EXPECT_NE(checkpoint::check_seal(path)->find("bytes of payload"), std::string::npos) << *checkpoint::check_seal(path);
}

TEST(CheckpointFiles, AFailedWriteLeavesThePreviousFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir / "last.pt";
  std::ofstream(path) << "previous";
  try {
    checkpoint::write_atomically(path, [](const std::string& tmp) {
      std::ofstream(tmp) << "half of a new checkpoint";
      throw std::runtime_error("No space left on device");
    });
    ADD_FAILURE() << "the failure was swallowed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write " + path + ": No space left on device"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fixtures::read_file(path), "previous");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  // A folder that cannot be written (here: it does not exist) is the same clear error.
  EXPECT_THROW(checkpoint::write_atomically(dir / "absent/last.pt",
                                            [](const std::string& tmp) {
                                              std::ofstream out(tmp);
                                              if (!out) throw std::runtime_error("cannot create " + tmp);
                                            }),
               Error);
}

TEST(CheckpointFiles, LastKeepsItsPredecessorAndCandidatesComeNewestFirst) {
  TempDir dir;
  const std::string last = dir / "last.pt";
  EXPECT_EQ(checkpoint::previous_checkpoint_path(last), dir / "last.prev.pt");
  checkpoint::keep_previous_checkpoint(last);  // nothing to keep yet
  EXPECT_FALSE(fs::exists(dir / "last.prev.pt"));
  std::ofstream(last) << "one";
  checkpoint::keep_previous_checkpoint(last);
  checkpoint::write_atomically(last, [](const std::string& tmp) { std::ofstream(tmp) << "two"; });
  EXPECT_EQ(fixtures::read_file(last), "two");
  EXPECT_EQ(fixtures::read_file(dir / "last.prev.pt"), "one");
  for (const char* name : {"epoch_0002.pt", "epoch_0010.pt", "best.pt", "epoch_0009.pt.tmp"})
    std::ofstream(dir / name) << "x";
  const auto candidates = checkpoint::resume_candidates(dir.path());
  const std::vector<std::string> expected = {dir / "last.pt", dir / "last.prev.pt", dir / "epoch_0010.pt",
                                             dir / "epoch_0002.pt"};
  EXPECT_EQ(candidates, expected);
  EXPECT_TRUE(checkpoint::resume_candidates(dir / "absent").empty());
}

// A full disk (/dev/full answers every write with ENOSPC) is an Error naming the file and the
// cause, raised after LibTorch's archive writer finished; never a terminate from its destructor.
TEST(CheckpointFiles, AFullDiskIsAnErrorNotACrash) {
  torch::serialize::OutputArchive archive;
  archive.write("weights", torch::ones({300000}));
  checkpoint::SealedFileWriter file("/dev/full");
  archive.save_to([&file](const void* data, size_t n) { return file.write(data, n); });
  try {
    file.finish();
    ADD_FAILURE() << "a write to /dev/full succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("writing /dev/full failed: No space left on device"), std::string::npos)
        << e.what();
  }
}

// The checksum does not depend on how the archive writer splits its writes.
TEST(CheckpointFiles, TheSealDoesNotDependOnHowWritesAreSplit) {
  TempDir dir;
  const std::string a = dir / "a", b = dir / "b";
  const std::string payload(100003, 'q');
  {
    checkpoint::SealedFileWriter file(a);
    file.write(payload.data(), 7);
    file.write(payload.data() + 7, payload.size() - 7);
    file.finish();
  }
  {
    checkpoint::SealedFileWriter file(b);
    file.write(payload.data(), payload.size());
    file.finish();
  }
  EXPECT_EQ(fixtures::read_file(a), fixtures::read_file(b));
  EXPECT_EQ(checkpoint::check_seal(a), std::nullopt);
}

TEST(SavedGenerator, LoadsFromEveryFormItIsNamedBy) {
  TempDir dir;
  torch::manual_seed(3);
  const nets::GeneratorOptions g_options{1, 3, 6, 8, nets::Norm::batch, true};
  const nets::DiscriminatorOptions d_options{4, 8, 2, nets::Norm::batch};
  nets::UnetGenerator g(g_options);
  nets::PatchDiscriminator d(d_options);
  nets::init_weights(*g);
  nets::init_weights(*d);
  // Running statistics that are not the initial ones, so that buffers are checked too.
  g->train();
  g->forward(torch::rand({2, 1, 64, 64}) * 2 - 1);
  const std::string shape = nets::describe_model_shape(g_options, d_options);
  checkpoint::TrainedOn trained_on;
  trained_on.height = 64;
  trained_on.width = 128;
  trained_on.val_mode = nets::ValMode::train;
  fs::create_directories(dir.path() / "run/checkpoints");
  checkpoint::save_generator(dir / "run/checkpoints/best_generator.pt", *g, shape, trained_on, 7);
  torch::optim::Adam opt_g(g->parameters()), opt_d(d->parameters());
  checkpoint::TrainingState state;
  state.epoch = 9;
  state.model_shape = shape;
  state.trained_on = trained_on;
  const checkpoint::CheckpointParts parts{
      {{"generator", g.get()}, {"discriminator", d.get()}}, {{"g", &opt_g}, {"d", &opt_d}}, {}};
  checkpoint::save_checkpoint(dir / "run/checkpoints/last.pt", parts, state);

  const auto input = torch::rand({2, 1, 64, 64}) * 2 - 1;
  g->eval();
  const auto expected = g->forward(input);
  struct Case {
    std::string checkpoint, file;
    std::int64_t epoch;
  };
  for (const Case& c : {Case{dir / "run", dir / "run/checkpoints/best_generator.pt", 7},
                        Case{dir / "run/checkpoints", dir / "run/checkpoints/best_generator.pt", 7},
                        Case{dir / "run/checkpoints/last.pt", dir / "run/checkpoints/last.pt", 9}}) {
    checkpoint::SavedGenerator saved = checkpoint::load_generator(c.checkpoint, torch::kCPU);
    EXPECT_EQ(saved.path, c.file);
    EXPECT_EQ(saved.model_shape, shape);
    EXPECT_EQ(saved.epoch, c.epoch) << c.checkpoint;
    EXPECT_EQ(saved.trained_on.height, 64);
    EXPECT_EQ(saved.trained_on.width, 128);
    EXPECT_EQ(saved.trained_on.val_mode, nets::ValMode::train);
    EXPECT_FALSE(saved.generator->is_training());
    EXPECT_EQ(saved.generator->options().out_channels, 3);
    EXPECT_TRUE(torch::equal(saved.generator->forward(input), expected)) << c.checkpoint;
  }
  // The discriminator of a full checkpoint, for export; a generator file has none.
  d->eval();
  const auto pair = torch::rand({2, 4, 64, 64}) * 2 - 1;
  auto loaded_d = checkpoint::load_discriminator(dir / "run/checkpoints/last.pt", torch::kCPU);
  EXPECT_FALSE(loaded_d->is_training());
  EXPECT_TRUE(torch::equal(loaded_d->forward(pair), d->forward(pair)));
  try {
    checkpoint::load_discriminator(dir / "run/checkpoints/best_generator.pt", torch::kCPU);
    ADD_FAILURE() << "a generator file gave a discriminator";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no discriminator"), std::string::npos) << e.what();
  }
}

TEST(SavedGenerator, RefusesWhatIsNotAGeneratorWithItsName) {
  TempDir dir;
  fs::create_directories(dir.path() / "empty");
  EXPECT_NE(load_generator_error(dir / "empty").find("without checkpoints/best_generator.pt"), std::string::npos);
  EXPECT_NE(load_generator_error(dir / "missing.pt").find(dir / "missing.pt"), std::string::npos);

  nets::UnetGenerator g(nets::GeneratorOptions{1, 1, 5, 4, nets::Norm::instance, false});
  const std::string shape = nets::describe_model_shape(g->options(), nets::DiscriminatorOptions{2, 4, 2});
  const std::string path = dir / "g.pt";
  checkpoint::save_generator(path, *g, shape, checkpoint::TrainedOn{}, 0);
  EXPECT_EQ(load_generator_error(path), "loaded");
  const std::string good = fixtures::read_file(path);
  std::ofstream(path, std::ios::binary) << good.substr(0, good.size() - 100);  // truncated
  EXPECT_NE(load_generator_error(path).find("checkpoint " + path + " is damaged"), std::string::npos)
      << load_generator_error(path);
  write_sealed(path, 4096, 1);  // sealed, but not a torch archive
  EXPECT_NE(load_generator_error(path).find("cannot be opened as a torch archive"), std::string::npos)
      << load_generator_error(path);

  // Weights that do not fit the shape the file claims (written by hand, as a foreign tool might).
  checkpoint::save_generator(path, *g, nets::describe_model_shape({1, 1, 5, 8, nets::Norm::instance, false}, {}),
                             checkpoint::TrainedOn{}, 0);
  EXPECT_NE(load_generator_error(path).find("the model shape needs"), std::string::npos) << load_generator_error(path);
  checkpoint::save_generator(path, *g, "in=1 out=1", checkpoint::TrainedOn{}, 0);
  EXPECT_NE(load_generator_error(path).find("model shape has no 'num_downs'"), std::string::npos)
      << load_generator_error(path);
}

// See Note [epoch sums of older checkpoints]: a mid-epoch checkpoint written before models had named
// losses (one epoch_sums tensor, [loss_D, loss_G_gan, loss_G_l1, skipped] or with loss_G_aux
// fifth) still resumes, its sums read as the Pix2Pix model's losses of today.
TEST(CheckpointFiles, OlderEpochSumsReadAsTheModelsLosses) {
  TempDir dir;
  TinyModel tiny;
  auto& [g, d, opt_g, opt_d] = tiny;
  const checkpoint::CheckpointParts parts = tiny.parts();
  // What the writer of before the split wrote, key for key.
  const auto write_old = [&](const std::string& path, const std::vector<double>& sums, const std::string& recognition) {
    checkpoint::write_atomically(path, [&](const std::string& tmp) {
      torch::serialize::OutputArchive out, ga, da, oga, oda;
      out.write("magic", c10::IValue(std::string(checkpoint::kCheckpointMagic)));
      out.write("version", c10::IValue(checkpoint::kCheckpointVersion));
      out.write("model_shape", c10::IValue(std::string("tiny")));
      out.write("epoch", c10::IValue(std::int64_t{2}));
      out.write("global_step", c10::IValue(std::int64_t{30}));
      out.write("step_in_epoch", c10::IValue(std::int64_t{4}));
      out.write("epoch_sums", torch::tensor(sums, torch::kFloat64));
      out.write("world", c10::IValue(std::int64_t{2}));
      out.write("global_batch", c10::IValue(std::int64_t{8}));
      out.write("early_stopping", c10::IValue(std::string("1 100 0 ")));
      out.write("scaler_g", torch::tensor({65536.0, 3.0, 1.0}, torch::kFloat64));
      out.write("scaler_d", torch::tensor({1.0, 0.0, 0.0}, torch::kFloat64));
      out.write("recognition", c10::IValue(recognition));
      g->save(ga);
      d->save(da);
      opt_g.save(oga);
      opt_d.save(oda);
      out.write("generator", ga);
      out.write("discriminator", da);
      out.write("optimizer_g", oga);
      out.write("optimizer_d", oda);
      checkpoint::save_sealed(out, tmp);
    });
  };
  struct Case {
    std::vector<double> sums;
    std::string recognition;
    std::vector<double> losses;
  };
  for (const Case& c : {Case{{1, 2, 3, 4}, "", {1, 2, 3}}, Case{{1, 2, 3, 4, 0}, "", {1, 2, 3}},
                        Case{{1, 2, 3, 4, 5}, "classifier 7", {1, 2, 3, 5}}}) {
    const std::string path = dir / "old.pt";
    write_old(path, c.sums, c.recognition);
    const checkpoint::TrainingState s = checkpoint::load_checkpoint(path, parts, "tiny");
    EXPECT_EQ(s.epoch_losses, c.losses) << c.sums.size() << " values, recognition '" << c.recognition << "'";
    EXPECT_EQ(s.epoch_skipped, 4);
    EXPECT_EQ(s.step_in_epoch, 4);
    ASSERT_EQ(s.scalers.size(), 2u);
    EXPECT_EQ(s.scalers[0].first, "g");
    EXPECT_EQ(s.scalers[0].second, (std::vector<double>{65536.0, 3.0, 1.0}));
  }
  write_old(dir / "odd.pt", {1, 2, 3}, "");
  EXPECT_THROW(checkpoint::load_checkpoint(dir / "odd.pt", parts, "tiny"), Error);

  // And today's keys round-trip.
  checkpoint::TrainingState now;
  now.model_shape = "tiny";
  now.step_in_epoch = 5;
  now.epoch_losses = {0.5, 0.25, 7.0};
  now.epoch_skipped = 1;
  now.scalers = {{"g", {2.0, 0.0, 0.0}}, {"d", {4.0, 1.0, 1.0}}};
  checkpoint::save_checkpoint(dir / "now.pt", parts, now);
  const checkpoint::TrainingState read = checkpoint::load_checkpoint(dir / "now.pt", parts, "tiny");
  EXPECT_EQ(read.epoch_losses, now.epoch_losses);
  EXPECT_EQ(read.epoch_skipped, 1);
  EXPECT_EQ(read.scalers, now.scalers);
  // A model with another update group finds no scaler of that name.
  torch::optim::Adam opt_x(g->parameters());
  const checkpoint::CheckpointParts other{parts.networks, {{"g", &opt_g}, {"x", &opt_x}}, {}};
  EXPECT_THROW(checkpoint::load_checkpoint(dir / "now.pt", other, "tiny"), Error);
}

// See Note [checkpointed image pools]: every rank's pool images come back as written, bit for bit and
// in order (an empty pool as one); a model with no pool of that key, or a file written before
// pools were kept, reads none; a count of ranks other than the checkpoint's world is refused.
TEST(CheckpointFiles, ImagePoolsOfEveryRankRoundTrip) {
  TempDir dir;
  TinyModel tiny;
  const checkpoint::CheckpointParts parts = tiny.parts({"fake_A", "fake_B"});
  checkpoint::TrainingState state;
  state.model_shape = "tiny";
  state.scalers = {{"g", {1.0, 0.0, 0.0}}, {"d", {1.0, 0.0, 0.0}}};
  state.world = 3;
  const auto rank0 = torch::rand({4, 1, 8, 8}), rank2 = torch::rand({2, 1, 8, 8}).to(torch::kBFloat16);
  state.pools = {{"fake_A", {rank0, torch::Tensor(), rank2}}, {"fake_B", {rank2, rank0, rank0}}};
  checkpoint::save_checkpoint(dir / "pools.pt", parts, state);
  const checkpoint::TrainingState read = checkpoint::load_checkpoint(dir / "pools.pt", parts, "tiny");
  ASSERT_EQ(read.pools.size(), 2u);
  EXPECT_EQ(read.pools[0].first, "fake_A");
  ASSERT_EQ(read.pools[0].second.size(), 3u);
  EXPECT_TRUE(torch::equal(read.pools[0].second[0], rank0));
  EXPECT_FALSE(read.pools[0].second[1].defined()) << "an empty pool reads as empty";
  EXPECT_EQ(read.pools[0].second[2].scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(read.pools[0].second[2], rank2));
  EXPECT_TRUE(torch::equal(read.pools[1].second[0], rank2));

  const checkpoint::CheckpointParts without{parts.networks, parts.optimizers, {"fake"}};
  EXPECT_TRUE(checkpoint::load_checkpoint(dir / "pools.pt", without, "tiny").pools.empty());
  state.pools = {};
  checkpoint::save_checkpoint(dir / "none.pt", parts, state);
  EXPECT_TRUE(checkpoint::load_checkpoint(dir / "none.pt", parts, "tiny").pools.empty());

  state.pools = {{"fake_A", {rank0, rank0}}};  // two ranks' pools in a checkpoint of world 3
  checkpoint::save_checkpoint(dir / "odd.pt", parts, state);
  try {
    checkpoint::load_checkpoint(dir / "odd.pt", parts, "tiny");
    ADD_FAILURE() << "a pool of 2 ranks in a world of 3 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pool_fake_A holds 2 ranks' images, the checkpoint's world is 3"),
              std::string::npos)
        << e.what();
  }
}
