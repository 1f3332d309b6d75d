// `pix2pix train-classifier` end to end: a run writes the classifier file and its metrics and
// says where; bad requests fail with their status and a message naming the option or file, and
// write nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/fixtures.hpp"

using pix2pix::fixtures::contains;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

TEST(TrainClassifierCli, TrainsWritesTheFileAndRefusesBadRequests) {
  TempDir dir;
  const std::string labelled = dir / "l.h5", unlabelled = dir / "u.h5", out = dir / "c.pt";
  pix2pix::fixtures::make_fashion_edges_dataset(labelled, 400, 32, /*labels=*/true);
  pix2pix::fixtures::make_fashion_edges_dataset(unlabelled, 40, 32, /*labels=*/false);
  const std::string common = " --filters 8 --batch-size 32 --max-epochs 2 --progress none";

  auto r = run_cli("train-classifier --data " + labelled + " --out " + out + common);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "network          channels=1 size=32x32 classes=10 filters=8 blocks=3 norm=batch"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "stopped: reached --max-epochs 2")) << r.output;
  EXPECT_TRUE(contains(r.output, "classifier in " + out + ", metrics in " + (dir / "c.csv"))) << r.output;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_TRUE(fs::exists(dir / "c.csv"));
  const auto written = fs::last_write_time(out);

  struct Bad {
    std::string args;
    int status;
    std::string message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"--data " + labelled + common, 2, "missing --out"},
           {"--out " + (dir / "x.pt") + common, 2, "missing --data"},
           {"--data " + labelled + " --out " + out + common, 1, "--out " + out + " exists; pass --overwrite"},
           {"--data " + labelled + " --out " + (dir / "x.pt") + " --metrics " + (dir / "c.csv") + common, 1,
            "--metrics " + (dir / "c.csv") + " exists"},
           {"--data " + labelled + " --out " + labelled + " --overwrite" + common, 2, "is the input"},
           {"--data " + labelled + " --out " + (dir / "no/x.pt") + common, 1, "does not exist"},
           {"--data " + unlabelled + " --out " + (dir / "x.pt") + common, 1, "no labels"},
           {"--data " + (dir / "none.h5") + " --out " + (dir / "x.pt") + common, 1, "none.h5"},
           {"--data " + labelled + " --out " + (dir / "x.pt") + " --classes 1" + common, 2, "--classes"},
           {"--data " + labelled + " --out " + (dir / "x.pt") + " --classes 4" + common, 2, "label 9"},
           {"--data " + labelled + " --out " + (dir / "x.pt") + " --norm group" + common, 2, "--norm"},
           {"--data " + labelled + " --out " + (dir / "x.pt") + " --lr 0" + common, 2, "--lr"},
       }) {
    r = run_cli("train-classifier " + bad.args);
    EXPECT_EQ(r.status, bad.status) << bad.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, bad.message)) << bad.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "x.pt"));
  EXPECT_EQ(fs::last_write_time(out), written);  // the refused requests left the file alone

  r = run_cli("train-classifier --data " + labelled + " --out " + out + " --overwrite --max-epochs 1" +
              " --filters 8 --batch-size 32 --progress none");
  EXPECT_EQ(r.status, 0) << r.output;
}
