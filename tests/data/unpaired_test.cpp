// Unpaired files (format version 3): what the writer stores and the reader accepts or refuses,
// the loader's per-domain shards, and `prepare --unpaired / --cyclegan-layout / --paired-val`.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <numeric>
#include <set>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/dataset_check.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "pix2pix/data/prepare.hpp"
#include "pix2pix/infer/evaluation.hpp"
#include "pix2pix/infer/translation_inputs.hpp"
#include "support/cpu_device.hpp"
#include "support/epoch_batches.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using data::Domain;
using fixtures::contains;
using fixtures::TempDir;

namespace {

using pix2pix::fixtures::kCpu;

// The id pattern_image encoded in a stored uint8 image [H, W, C] (its first pixel).
torch::Tensor stored(const std::string& path, const std::string& split, Domain domain, std::int64_t index) {
  return data::PairedDataset::open(path)->read_images(split, domain, {index})[0];
}

torch::Tensor pattern(int size, int channels, int id) {
  const cv::Mat m = fixtures::pattern_image(size, size, channels, id);
  return torch::from_blob(m.data, {size, size, channels}, torch::kUInt8).clone();
}

// Opens `path` read-write for a change the library would never make.
struct EditedFile {
  explicit EditedFile(const std::string& path) : file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) {}
  ~EditedFile() { H5Fclose(file); }
  hid_t file;
};

std::string open_error(const std::string& path) {
  return fixtures::error_of([&] { data::PairedDataset::open(path); });
}

data::LoaderOptions unshuffled(std::int64_t batch, int world, int rank) {
  data::LoaderOptions o;
  o.batch_size = batch;
  o.shuffle = false;
  o.augment.preprocess = data::Preprocess::none;
  o.world = world;
  o.rank = rank;
  return o;
}

using pix2pix::fixtures::epoch_batches;

}  // namespace

TEST(UnpairedFormat, DomainsOfDifferentSizesAreStoredAndReadApart) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 5, 3, 2, 4, 8, 1, 3);
  const auto ds = data::PairedDataset::open(dir / "u.h5");
  EXPECT_EQ(ds->attributes().version, 3);
  EXPECT_TRUE(ds->attributes().unpaired);
  const auto& train = ds->split("train");
  EXPECT_FALSE(train.paired);
  EXPECT_EQ(train.count, 5);
  EXPECT_EQ(train.count_b, 3);
  EXPECT_TRUE(train.has_names && train.has_names_b);
  EXPECT_EQ(ds->split("val").count_b, 4);
  const auto b = ds->read_images("train", Domain::B, {2, 0});
  EXPECT_EQ(b.sizes(), (std::vector<std::int64_t>{2, 8, 8, 3}));
  EXPECT_TRUE(torch::equal(b[0], pattern(8, 3, 1002)));
  EXPECT_TRUE(torch::equal(b[1], pattern(8, 3, 1000)));
  EXPECT_TRUE(torch::equal(ds->read_images("train", Domain::A, {4})[0], pattern(8, 1, 4)));
  EXPECT_EQ(ds->read_names("train", {1}, Domain::B), std::vector<std::string>{"b1"});
  EXPECT_EQ(ds->read_names("train", {1}), std::vector<std::string>{"a1"});
  EXPECT_TRUE(contains(fixtures::error_of([&] { ds->read("train", {0}); }), "is unpaired"))
      << "pairs of an unpaired split";
  EXPECT_TRUE(contains(fixtures::error_of([&] { ds->read_images("train", Domain::B, {3}); }), "out of range [0, 3)"));
  EXPECT_TRUE(data::check_dataset(*ds).empty());
}

// translate takes an unpaired split's images of either domain under their names; evaluate, which
// scores G(A) against each A's B, names the split it cannot score.
TEST(UnpairedFormat, TranslateListsEitherDomainAndEvaluateRefusesTheSplit) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 5, 3, 2, 4, 8, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "u.h5");
  const auto b = infer::list_dataset_inputs(*ds, "train", ".png", Domain::B);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2].output, "b2.png");
  EXPECT_EQ(infer::list_dataset_inputs(*ds, "train", ".png").size(), 5u);
  const std::string error = fixtures::error_of([&] {
    infer::check_generator_fits(nets::GeneratorOptions{1, 1, 5, 8, nets::Norm::batch, false}, *ds, "val");
  });
  EXPECT_TRUE(contains(error, "/val is unpaired")) << error;
}

TEST(UnpairedFormat, AValSplitMayBePairedAndPairedFilesStayVersionTwo) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 6, 4, 3, 0, 8, 1, 1, /*paired_val=*/true);
  const auto ds = data::PairedDataset::open(dir / "u.h5");
  EXPECT_FALSE(ds->split("train").paired);
  EXPECT_TRUE(ds->split("val").paired);
  EXPECT_EQ(ds->split("val").count_b, 3);
  const auto pairs = ds->read("val", {1});
  EXPECT_TRUE(torch::equal(pairs.b[0], pattern(8, 1, 1501)));
  fixtures::make_pattern_dataset(dir / "p.h5", 4, 2, 8, 1, 1);
  const auto paired = data::PairedDataset::open(dir / "p.h5");
  EXPECT_EQ(paired->attributes().version, 2) << "a paired file must stay readable by builds that read version 2";
  EXPECT_FALSE(paired->attributes().unpaired);
  EXPECT_TRUE(paired->split("train").paired);
  EXPECT_EQ(paired->split("train").count_b, 4);
}

TEST(UnpairedFormat, TheReaderRefusesWhatTheFormatForbids) {
  TempDir dir;
  // A split group of an unpaired file that does not say whether it is paired.
  fixtures::make_unpaired_pattern_dataset(dir / "no_attr.h5", 4, 3, 2, 2, 8, 1, 1);
  {
    EditedFile f(dir / "no_attr.h5");
    const hid_t group = H5Gopen2(f.file, "val", H5P_DEFAULT);
    ASSERT_GE(H5Adelete(group, "pairing"), 0);
    H5Gclose(group);
  }
  EXPECT_TRUE(contains(open_error(dir / "no_attr.h5"), "/val: has no string attribute 'pairing'"))
      << open_error(dir / "no_attr.h5");
  // Labels in an unpaired split: they would pair images that are not pairs.
  fixtures::make_unpaired_pattern_dataset(dir / "labels.h5", 4, 3, 2, 2, 8, 1, 1);
  {
    EditedFile f(dir / "labels.h5");
    const hsize_t n = 4;
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t d = H5Dcreate2(f.file, "/train/labels", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const std::int32_t zeros[4] = {0, 0, 0, 0};
    H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros);
    H5Dclose(d);
    H5Sclose(space);
  }
  EXPECT_TRUE(contains(open_error(dir / "labels.h5"), "/train/labels: an unpaired split has no labels"))
      << open_error(dir / "labels.h5");
  // The same bytes marked version 2: a reader of version 2 sees pairs, and A and B disagree.
  fixtures::make_unpaired_pattern_dataset(dir / "v2.h5", 4, 3, 2, 2, 8, 1, 1);
  {
    EditedFile f(dir / "v2.h5");
    const hid_t attr = H5Aopen(f.file, "version", H5P_DEFAULT);
    const std::int32_t two = 2;
    H5Awrite(attr, H5T_NATIVE_INT32, &two);
    H5Aclose(attr);
  }
  EXPECT_TRUE(contains(open_error(dir / "v2.h5"), "/train/B: has 3 pairs but A has 4")) << open_error(dir / "v2.h5");
  // A writer never makes an unpaired split in a file that does not say so, nor one with labels.
  data::PairedFileWriter writer(dir / "w.h5", 0);
  writer.write_root_attributes("tests", "derived", "tests");
  data::SplitLayout layout{8, 8, 1, 1, false, true, 4};
  layout.paired = false;
  EXPECT_THROW(writer.begin_split("train", layout), Error);
}

TEST(UnpairedLoader, EachDomainIsShardedOnItsOwnAndEveryRankTakesTheSameSteps) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 20, 6, 2, 2, 8, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "u.h5");
  std::set<std::int64_t> seen_a, seen_b;
  for (int rank = 0; rank < 2; ++rank) {
    auto o = unshuffled(2, 2, rank);
    o.shuffle = true;
    o.seed = 7;
    data::BatchLoader loader(ds, o, kCpu);
    EXPECT_EQ(loader.shard().per_rank, 10);
    EXPECT_EQ(loader.shard_b().per_rank, 3);
    EXPECT_EQ(loader.steps_per_epoch(), 5) << "the larger domain sets the epoch";
    std::multiset<std::int64_t> visited_b;
    for (const auto& batch : epoch_batches(loader, 0)) {
      ASSERT_EQ(batch.indices_b.size(), 2u);
      for (size_t i = 0; i < 2; ++i) {
        // Each image is the stored one of its domain (no augmentation here: preprocess none).
        const auto b =
            ((batch.b[static_cast<std::int64_t>(i)] + 1) * 127.5).round().to(torch::kUInt8).permute({1, 2, 0});
        EXPECT_TRUE(torch::equal(b, stored(dir / "u.h5", "train", Domain::B, batch.indices_b[i])));
        seen_a.insert(batch.indices[i]);
        visited_b.insert(batch.indices_b[i]);
        seen_b.insert(batch.indices_b[i]);
      }
    }
    // 10 B draws from a shard of 3: each at least 3 times (the shard wraps around).
    for (std::int64_t index : loader.shard_b().indices) EXPECT_GE(visited_b.count(index), 3u);
  }
  EXPECT_EQ(seen_a.size(), 20u);
  EXPECT_EQ(seen_b.size(), 6u);
}

TEST(UnpairedLoader, TwoRanksOfBatchBGiveTheGlobalBatchesOfOneProcessOf2B) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 16, 12, 2, 2, 8, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "u.h5");
  data::BatchLoader single(ds, unshuffled(8, 1, 0), kCpu);
  data::BatchLoader rank0(ds, unshuffled(4, 2, 0), kCpu), rank1(ds, unshuffled(4, 2, 1), kCpu);
  const auto one = epoch_batches(single, 0), r0 = epoch_batches(rank0, 0), r1 = epoch_batches(rank1, 0);
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(r0.size(), 2u);
  for (size_t s = 0; s < one.size(); ++s) {
    for (const auto member : {&data::Batch::indices, &data::Batch::indices_b}) {
      std::multiset<std::int64_t> global((r0[s].*member).begin(), (r0[s].*member).end());
      global.insert((r1[s].*member).begin(), (r1[s].*member).end());
      EXPECT_EQ(global, std::multiset<std::int64_t>((one[s].*member).begin(), (one[s].*member).end())) << "step " << s;
    }
  }
}

TEST(UnpairedLoader, CachedAndStreamedBatchesAreTheSame) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 12, 5, 2, 2, 8, 3, 1);
  const auto ds = data::PairedDataset::open(dir / "u.h5");
  auto o = unshuffled(3, 1, 0);
  o.shuffle = true;
  o.augment.preprocess = data::Preprocess::resize_and_crop;
  o.cache = data::CacheMode::device;
  data::BatchLoader cached(ds, o, kCpu);
  o.cache = data::CacheMode::none;
  data::BatchLoader streamed(ds, o, kCpu);
  EXPECT_EQ(cached.cache_bytes(), 12 * 8 * 8 * 3 + 5 * 8 * 8 * 1);
  const auto a = epoch_batches(cached, 1), b = epoch_batches(streamed, 1);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].a, b[i].a));
    EXPECT_TRUE(torch::equal(a[i].b, b[i].b));
    EXPECT_EQ(a[i].indices_b, b[i].indices_b);
  }
}

TEST(UnpairedLoader, ADomainTooSmallForTheRanksIsNamed) {
  TempDir dir;
  fixtures::make_unpaired_pattern_dataset(dir / "u.h5", 8, 1, 2, 2, 8, 1, 1);
  const std::string error = fixtures::error_of(
      [&] { data::BatchLoader(data::PairedDataset::open(dir / "u.h5"), unshuffled(1, 2, 0), kCpu); });
  EXPECT_TRUE(contains(error, "gives each of 2 ranks 0 B images")) << error;
}

TEST(PrepareUnpaired, TwoFoldersOfDifferentSizesBecomeAnUnpairedFile) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "a", 7, 12, 12, 3);
  fixtures::write_pattern_folder(dir / "b", 4, 12, 12, 3, false, 100);
  data::PrepareOptions o;
  o.source.kind = data::SourceKind::unpaired;
  o.source.dir = dir / "a";
  o.source.dir_b = dir / "b";
  o.out = dir / "u.h5";
  const auto summary = data::run_prepare(o);
  EXPECT_TRUE(contains(data::format_summary(summary, o.out), "train: 6 A and 3 B images (unpaired)"))
      << data::format_summary(summary, o.out);
  const auto ds = data::PairedDataset::open(o.out);
  EXPECT_EQ(ds->attributes().pairing, "unpaired");
  EXPECT_EQ(ds->split("train").count, 6);
  EXPECT_EQ(ds->split("train").count_b, 3);
  EXPECT_FALSE(ds->split("val").paired) << "val carved from each domain apart";
  EXPECT_EQ(ds->split("val").count, 1);
  EXPECT_EQ(ds->split("val").count_b, 1);
  EXPECT_EQ(ds->split("train").channels_a, 3);
  // Every source image is in the file once, under its name.
  std::set<std::string> names;
  for (const auto& split : {"train", "val"})
    for (const Domain domain : {Domain::A, Domain::B}) {
      std::vector<std::int64_t> all(static_cast<size_t>(ds->split(split).images(domain)));
      std::iota(all.begin(), all.end(), 0);
      for (const auto& name : ds->read_names(split, all, domain))
        names.insert(std::string(domain == Domain::A ? "a/" : "b/") + name);
    }
  EXPECT_EQ(names.size(), 11u);
  EXPECT_TRUE(names.count("b/img103.png"));
  EXPECT_TRUE(data::check_dataset(*ds).empty());
}

TEST(PrepareUnpaired, TheReferenceLayoutAndAPairedValSplit) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "c/trainA", 6, 8, 8, 1);
  fixtures::write_pattern_folder(dir / "c/trainB", 9, 8, 8, 1, false, 50);
  fixtures::write_pattern_folder(dir / "c/testA", 2, 8, 8, 1, false, 20);
  fixtures::write_pattern_folder(dir / "c/testB", 3, 8, 8, 1, false, 70);
  fixtures::write_pattern_folder(dir / "c/valA", 3, 8, 8, 1, false, 30);
  for (int i = 0; i < 3; ++i)  // the names of valA, other images
    fixtures::write_png(dir / ("c/valB/img03" + std::to_string(i) + ".png"), fixtures::pattern_image(8, 8, 1, 80 + i));
  data::PrepareOptions o;
  o.source.kind = data::SourceKind::unpaired;
  o.source.cyclegan_layout = true;
  o.source.dir = dir / "c";
  o.source.paired_val = true;
  o.channels_a = o.channels_b = 1;
  o.out = dir / "c.h5";
  data::run_prepare(o);
  const auto ds = data::PairedDataset::open(o.out);
  EXPECT_EQ(ds->split("train").count_b, 9);
  EXPECT_TRUE(ds->split("val").paired);
  EXPECT_EQ(ds->split("val").count, 3);
  EXPECT_TRUE(torch::equal(ds->read("val", {2}).b[0], pattern(8, 1, 82))) << "valB's img032 pairs with valA's";
  EXPECT_FALSE(ds->split("test").paired);
  EXPECT_EQ(ds->split("test").count_b, 3);
  // Without --paired-val the val folders are two sets like the rest.
  o.source.paired_val = false;
  o.out = dir / "c2.h5";
  data::run_prepare(o);
  EXPECT_FALSE(data::PairedDataset::open(o.out)->split("val").paired);
}

TEST(PrepareUnpaired, EmptyOrMissingDomainsAndLabelsAreRefusedByName) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "c/trainA", 4, 8, 8, 1);
  std::filesystem::create_directories(dir / "c/trainB");
  data::PrepareOptions o;
  o.source.kind = data::SourceKind::unpaired;
  o.source.cyclegan_layout = true;
  o.source.dir = dir / "c";
  o.out = dir / "c.h5";
  std::string error = fixtures::error_of([&] { data::run_prepare(o); });
  EXPECT_TRUE(contains(error, "trainB: no images: domain B of split 'train' is empty")) << error;
  std::filesystem::remove_all(dir / "c/trainB");
  error = fixtures::error_of([&] { data::run_prepare(o); });
  EXPECT_TRUE(contains(error, "needs the folders trainA and trainB")) << error;
  fixtures::write_pattern_folder(dir / "c/trainB", 4, 8, 8, 1);
  fixtures::write_pattern_folder(dir / "c/testA", 2, 8, 8, 1);
  error = fixtures::error_of([&] { data::run_prepare(o); });
  EXPECT_TRUE(contains(error, "testA but no B folder of split 'test'")) << error;
  std::filesystem::remove_all(dir / "c/testA");
  o.source.labels = true;
  error = fixtures::error_of([&] { data::run_prepare(o); });
  EXPECT_TRUE(contains(error, "labels go with pairs")) << error;
  o.source.labels = false;
  o.source.paired_val = true;
  error = fixtures::error_of([&] { data::run_prepare(o); });
  EXPECT_TRUE(contains(error, "--paired-val")) << error;
  EXPECT_FALSE(std::filesystem::exists(dir / "c.h5"));
}

TEST(PrepareUnpaired, TheCommandLineWritesAndInspectChecksIt) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "a/train", 5, 8, 8, 3);
  fixtures::write_pattern_folder(dir / "a/val", 2, 8, 8, 3, false, 10);
  fixtures::write_pattern_folder(dir / "b/train", 3, 8, 8, 3, false, 20);
  fixtures::write_pattern_folder(dir / "b/val", 4, 8, 8, 3, false, 30);
  auto r = fixtures::run_cli("prepare --unpaired " + dir / "a" + " " + dir / "b" + " --out " + dir / "u.h5");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "val: 2 A and 4 B images (unpaired)")) << r.output;
  r = fixtures::run_cli("inspect " + dir / "u.h5" + " --check");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "5 A + 3 B images (unpaired)")) << r.output;
  EXPECT_TRUE(contains(r.output, "pixels over 5 A and 3 B images")) << r.output;
  EXPECT_TRUE(contains(r.output, "check: OK")) << r.output;
  r = fixtures::run_cli("prepare --unpaired " + dir / "a" + " --out " + dir / "x.h5");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--unpaired takes two folders")) << r.output;
  r = fixtures::run_cli("prepare --aligned " + dir / "a" + " --paired-val --out " + dir / "x.h5");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--paired-val goes with --unpaired")) << r.output;
}
