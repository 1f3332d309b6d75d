// The CycleGAN ResNet generator: the reference's parameter counts (and the PatchGAN's on one
// domain), the reference's state-dict names, output shapes, refused sizes, and the reference
// network rebuilt in plain PyTorch computing what ours computes on our weights.
#include "pix2pix/nets/resnet_generator.hpp"

#include <gtest/gtest.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/interop/pytorch_export.hpp"
#include "support/fixtures.hpp"
#include "support/random_weights.hpp"
#include "support/torch_files.hpp"

using namespace pix2pix;
using namespace pix2pix::nets;

TEST(ResnetGenerator, ReferenceParameterCounts) {
  // The reference's resnet_9blocks and resnet_6blocks (3 -> 3, ngf 64, instance norm: no norm
  // parameters, biases on every convolution), and its PatchGAN on one domain's 3 channels.
  EXPECT_EQ(count_parameters(*ResnetGenerator(resnet_generator_options(3, 3, 64, 9, Norm::instance, false))), 11378179);
  EXPECT_EQ(count_parameters(*ResnetGenerator(resnet_generator_options(3, 3, 64, 6, Norm::instance, false))), 7837699);
  EXPECT_EQ(count_parameters(*PatchDiscriminator(DiscriminatorOptions{3, 64, 3, Norm::instance})), 2764737);
  // Dropout adds no parameters; batch norm drops the biases and adds a scale and shift per channel.
  EXPECT_EQ(count_parameters(*ResnetGenerator(resnet_generator_options(3, 3, 64, 9, Norm::instance, true))), 11378179);
  // By hand: stem 1*8*49, downs 8*16*9 + 16*32*9, 2 blocks of 2 * 32*32*9, ups 32*16*9 + 16*8*9,
  // head 8*1*49 + 1; batch norm 2 * (8+16+32 + 2*2*32 + 16+8).
  const std::int64_t convs = 392 + 1152 + 4608 + 2 * 2 * 9216 + 4608 + 1152 + 392 + 1;
  const std::int64_t norms = 2 * (8 + 16 + 32 + 2 * 2 * 32 + 16 + 8);
  EXPECT_EQ(count_parameters(*ResnetGenerator(resnet_generator_options(1, 1, 8, 2, Norm::batch, false))),
            convs + norms);
}

TEST(ResnetGenerator, KeepsTheReferenceNames) {
  ResnetGenerator g(resnet_generator_options(3, 3, 8, 9, Norm::instance, false));
  std::vector<std::string> names;
  for (const auto& p : g->named_parameters()) names.push_back(p.key());
  ASSERT_EQ(names.size(), 2u * (3 + 2 * 9 + 2 + 1));
  EXPECT_EQ(names.front(), "model.1.weight");
  EXPECT_EQ(names[2], "model.4.weight");
  EXPECT_EQ(names[6], "model.10.conv_block.1.weight");
  EXPECT_EQ(names[8], "model.10.conv_block.5.weight");
  EXPECT_EQ(names[names.size() - 6], "model.19.weight");
  EXPECT_EQ(names.back(), "model.26.bias");
  // With dropout the second convolution of a block moves one index on, as in the reference.
  ResnetGenerator with_dropout(resnet_generator_options(3, 3, 8, 1, Norm::instance, true));
  EXPECT_EQ(with_dropout->named_parameters()[8].key(), "model.10.conv_block.6.weight");
}

TEST(ResnetGenerator, MapsEverySideItTakesToTheSameSide) {
  torch::NoGradGuard no_grad;
  for (const std::int64_t side : {8, 12, 32, 64}) {
    ResnetGenerator g(resnet_generator_options(1, 3, 8, 3, Norm::instance, false));
    EXPECT_NO_THROW(check_generator_input(g->options(), side, side, "images"));
    const auto out = g->forward(torch::rand({2, 1, side, side}) * 2 - 1);
    EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 3, side, side})) << side;
    EXPECT_LE(out.abs().max().item<double>(), 1.0);
  }
  const GeneratorOptions resnet = resnet_generator_options(1, 3, 8, 3, Norm::instance, false);
  for (const std::int64_t side : {4, 6, 30, 33})
    EXPECT_THROW(check_generator_input(resnet, side, side, "images"), Error) << side;
  EXPECT_THROW(check_generator_input(resnet, 32, 30, "images"), Error);
  EXPECT_EQ(net_g_name(resnet), "resnet_3blocks");
  // make_generator builds what the options name.
  EXPECT_EQ(count_parameters(*make_generator(resnet)), count_parameters(*ResnetGenerator(resnet)));
  EXPECT_THROW(UnetGenerator{resnet}, Error);
  EXPECT_THROW(ResnetGenerator(resnet_generator_options(3, 3, 8, -1, Norm::instance, false)), Error);
  EXPECT_THROW(ResnetGenerator(resnet_generator_options(3, 3, 0, 9, Norm::instance, false)), Error);
}

// Our weights, written as a PyTorch state dict, load with strict=True into the reference
// architecture rebuilt in PyTorch (bench/pytorch_pix2pix.py) and compute our outputs: the
// residual additions, the reflection padding and the transposed convolutions' output padding.
TEST(ResnetGenerator, TheReferenceInPyTorchComputesWhatOursComputes) {
  const std::string script = std::string(PIX2PIX_SOURCE_DIR) + "/tests/infer/reference_check.py";
  fixtures::TempDir dir;
  struct Case {
    GeneratorOptions options;
    std::int64_t side;
  };
  for (const Case& c : {Case{resnet_generator_options(3, 3, 8, 2, Norm::instance, false), 32},
                        Case{resnet_generator_options(1, 2, 4, 3, Norm::batch, true), 12}}) {
    SCOPED_TRACE(to_string(c.options.norm));
    ResnetGenerator g(c.options);
    fixtures::randomise(*g, 7);
    const std::string weights = dir / "g.pth";
    interop::write_state_dict(weights, *g);
    const torch::Tensor a = torch::rand({2, c.options.in_channels, c.side, c.side}) * 2 - 1;
    fixtures::save_tensor(dir / "a.pt", a);
    const auto r = fixtures::run_shell(
        fixtures::reference_python() + script + " --norm " + to_string(c.options.norm) + " --in-channels " +
        std::to_string(c.options.in_channels) + " --out-channels " + std::to_string(c.options.out_channels) +
        " --ngf " + std::to_string(c.options.ngf) + " --resnet-blocks " + std::to_string(c.options.n_blocks) +
        (c.options.dropout ? " --dropout" : "") + " --generator " + weights + " --input " + (dir / "a.pt") +
        " --output " + (dir / "fake.pt"));
    ASSERT_EQ(r.status, 0) << r.output;
    torch::NoGradGuard no_grad;
    const torch::Tensor ours = g->forward(a);
    EXPECT_GT(ours.std().item<double>(), 0.05);  // not a saturated or constant output
    EXPECT_LE((fixtures::load_tensor(dir / "fake.pt") - ours).abs().max().item<double>(), 1e-5);
  }
}
