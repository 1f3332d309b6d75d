// The networks: output shapes at every supported size, the reference parameter counts, the
// weight initialisation, clear errors for sizes the architecture cannot take, and activations in
// place that compute what out-of-place ones do, and the skip concatenation's gradients.
#include <gtest/gtest.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/classifier.hpp"
#include "pix2pix/nets/model_shape.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/resnet_generator.hpp"
#include "pix2pix/nets/skip_concat.hpp"

#include <functional>
#include <vector>

using namespace pix2pix::nets;

TEST(Networks, ReferenceParameterCounts) {
  struct Case {
    Norm norm;
    std::int64_t downs, g, d;
  };
  // Counts of the reference PyTorch implementation (3 -> 3 channels, ngf = ndf = 64, 3 D layers).
  for (const Case& c : {Case{Norm::batch, 8, 54413955, 2768705}, Case{Norm::batch, 7, 41828995, 2768705},
                        Case{Norm::instance, 8, 54409603, 2767809}, Case{Norm::instance, 7, 41825667, 2767809}}) {
    UnetGenerator g(GeneratorOptions{3, 3, c.downs, 64, c.norm, true});
    PatchDiscriminator d(DiscriminatorOptions{6, 64, 3, c.norm});
    EXPECT_EQ(count_parameters(*g), c.g) << to_string(c.norm) << " " << c.downs;
    EXPECT_EQ(count_parameters(*d), c.d) << to_string(c.norm);
  }
}

TEST(Networks, SmallConfigurationCounts) {
  // 1 -> 1 channel Fashion-MNIST at 32x32 (5 downs) and the CPU-sized widths of the configs.
  // The first two are worked out by hand layer by layer (docs/architecture.md has the sums), the
  // others pinned from this implementation of the same rule.
  EXPECT_EQ(count_parameters(*UnetGenerator(GeneratorOptions{1, 1, 5, 64, Norm::batch, true})), 16652929);
  EXPECT_EQ(count_parameters(*PatchDiscriminator(DiscriminatorOptions{2, 16, 3, Norm::instance})), 174833);
  EXPECT_EQ(count_parameters(*UnetGenerator(GeneratorOptions{1, 1, 5, 16, Norm::instance, true})), 1041761);
  EXPECT_EQ(count_parameters(*PatchDiscriminator(DiscriminatorOptions{2, 64, 2, Norm::none})), 661953);
}

TEST(Networks, ShapesAtEverySupportedSize) {
  for (std::int64_t side : {32, 64, 128, 256}) {
    const std::int64_t downs = unet_depth_for(side);
    EXPECT_EQ(std::int64_t{1} << downs, side);
    UnetGenerator g(GeneratorOptions{1, 3, downs, 4, Norm::batch, true});
    PatchDiscriminator d(DiscriminatorOptions{4, 4, 3, Norm::batch});
    const auto a = torch::randn({2, 1, side, side});
    const auto fake = g->forward(a);
    EXPECT_EQ(fake.sizes(), (std::vector<std::int64_t>{2, 3, side, side}));
    EXPECT_LE(fake.abs().max().item<float>(), 1.0f);  // tanh
    const auto logits = d->forward(torch::cat({a, fake}, 1));
    const std::int64_t p = patch_output_side(side, 3);
    EXPECT_EQ(logits.sizes(), (std::vector<std::int64_t>{2, 1, p, p}));
  }
  EXPECT_EQ(patch_output_side(256, 3), 30);  // the 70x70 PatchGAN's 30x30 map
  EXPECT_EQ(unet_depth_for(512), 8);
}

TEST(Networks, RejectsSizesTheArchitectureCannotTake) {
  EXPECT_THROW(unet_depth_for(16), pix2pix::Error);
  EXPECT_THROW(unet_depth_for(48), pix2pix::Error);
  EXPECT_THROW(patch_output_side(32, 5), pix2pix::Error);
  EXPECT_NO_THROW(patch_output_side(32, 3));
  EXPECT_THROW(UnetGenerator(GeneratorOptions{3, 3, 4, 8, Norm::batch, true}), pix2pix::Error);
  EXPECT_THROW(parse_norm("group"), pix2pix::Error);
}

TEST(Networks, InitialisationFollowsTheReference) {
  torch::manual_seed(0);
  UnetGenerator g(GeneratorOptions{3, 3, 6, 32, Norm::batch, true});
  init_weights(*g);
  std::vector<torch::Tensor> conv_weights, norm_weights, biases;
  for (const auto& p : g->named_parameters()) {
    const bool is_bias = p.key().size() >= 4 && p.key().compare(p.key().size() - 4, 4, "bias") == 0;
    if (is_bias)
      biases.push_back(p.value().flatten());
    else if (p.value().dim() == 4)
      conv_weights.push_back(p.value().flatten());
    else
      norm_weights.push_back(p.value().flatten());
  }
  const auto conv = torch::cat(conv_weights), norm = torch::cat(norm_weights), bias = torch::cat(biases);
  EXPECT_NEAR(conv.mean().item<double>(), 0.0, 1e-3);
  EXPECT_NEAR(conv.std().item<double>(), 0.02, 1e-3);
  EXPECT_NEAR(norm.mean().item<double>(), 1.0, 5e-3);
  EXPECT_NEAR(norm.std().item<double>(), 0.02, 5e-3);
  EXPECT_EQ(bias.abs().max().item<double>(), 0.0);
  // The same seed gives the same network: what lets every rank start identical.
  torch::manual_seed(0);
  UnetGenerator again(GeneratorOptions{3, 3, 6, 32, Norm::batch, true});
  init_weights(*again);
  EXPECT_TRUE(torch::equal(g->parameters()[0], again->parameters()[0]));
}

TEST(ModelShape, RoundTripsEveryFieldAndRefusesDamage) {
  const GeneratorOptions g{1, 3, 6, 16, Norm::instance, false};
  const DiscriminatorOptions d{4, 32, 2, Norm::instance};
  const std::string text = describe_model_shape(g, d);
  EXPECT_EQ(text, "in=1 out=3 num_downs=6 ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=instance");
  const ModelShape shape = parse_model_shape(text);
  EXPECT_EQ(shape.generator.in_channels, 1);
  EXPECT_EQ(shape.generator.out_channels, 3);
  EXPECT_EQ(shape.generator.num_downs, 6);
  EXPECT_EQ(shape.generator.ngf, 16);
  EXPECT_FALSE(shape.generator.dropout);
  EXPECT_EQ(shape.generator.norm, Norm::instance);
  EXPECT_EQ(shape.discriminator.in_channels, 4);
  EXPECT_EQ(shape.discriminator.ndf, 32);
  EXPECT_EQ(shape.discriminator.n_layers, 2);
  EXPECT_EQ(describe_model_shape(shape.generator, shape.discriminator), text);

  const auto message = [](const std::string& bad) {
    try {
      parse_model_shape(bad);
    } catch (const pix2pix::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("in=1 out=3 ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=instance").find("'num_downs'"),
            std::string::npos);
  EXPECT_NE(message(text + " extra=1").find("unknown field 'extra'"), std::string::npos);
  EXPECT_NE(message(text + " ngf=8").find("'ngf' given twice"), std::string::npos);
  EXPECT_NE(message("in=1 out=3 num_downs=6x ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=instance").find("num_downs=6x"),
            std::string::npos);
  EXPECT_NE(message("in=1 out=3 num_downs=4 ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=instance").find("num_downs=4"),
            std::string::npos);
  EXPECT_NE(message("in=1 out=3 num_downs=6 ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=group").find("norm=group"),
            std::string::npos);
  EXPECT_NE(message("garbage").find("not key=value"), std::string::npos);

  // A ResNet generator's line names it and its blocks instead of a depth.
  GeneratorOptions resnet = g;
  resnet.arch = GeneratorArch::resnet;
  resnet.n_blocks = 6;
  resnet.num_downs = 0;
  const std::string resnet_text = describe_model_shape(resnet, d);
  EXPECT_EQ(resnet_text, "in=1 out=3 net_g=resnet n_blocks=6 ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=instance");
  const ModelShape resnet_shape = parse_model_shape(resnet_text);
  EXPECT_EQ(resnet_shape.generator.arch, GeneratorArch::resnet);
  EXPECT_EQ(resnet_shape.generator.n_blocks, 6);
  EXPECT_EQ(describe_model_shape(resnet_shape.generator, resnet_shape.discriminator), resnet_text);
  EXPECT_NE(message(resnet_text + " num_downs=6").find("num_downs is not"), std::string::npos);
  EXPECT_NE(message(text + " n_blocks=6").find("n_blocks is not"), std::string::npos);
  EXPECT_NE(message("in=1 out=3 net_g=resnet ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=instance").find("'n_blocks'"),
            std::string::npos);
  EXPECT_NE(
      message("in=1 out=3 net_g=vit n_blocks=6 ngf=16 dropout=0 ndf=32 n_layers_d=2 norm=instance").find("net_g=vit"),
      std::string::npos);
}

namespace {

// The in-place setting of every ReLU and LeakyReLU of `net`, to read or to change.
std::vector<bool*> activations_in_place(torch::nn::Module& net) {
  std::vector<bool*> settings;
  for (const auto& m : net.modules()) {
    if (auto* relu = m->as<torch::nn::ReLUImpl>()) settings.push_back(&relu->options.inplace());
    if (auto* leaky = m->as<torch::nn::LeakyReLUImpl>()) settings.push_back(&leaky->options.inplace());
  }
  return settings;
}

// The output and every parameter's gradient of one forward and backward of `net` on `input`,
// with the random state (dropout) reset first.
std::vector<torch::Tensor> output_and_gradients(torch::nn::Module& net,
                                                const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                                                const torch::Tensor& input) {
  torch::manual_seed(7);
  net.zero_grad();
  const torch::Tensor out = forward(input);
  (out * out).sum().backward();
  std::vector<torch::Tensor> result{out.detach().clone()};
  for (const auto& p : net.parameters()) result.push_back(p.grad().clone());
  return result;
}

}  // namespace

// See Note [activations in place]: every activation of the four networks is built in place and
// works so with every norm (batch norm over ranks too), and the networks compute what the same
// networks with out-of-place activations compute, output and gradients bit for bit (an activation
// whose input a later operation had saved would make backward fail, or differ).
TEST(Networks, ActivationsInPlaceComputeWhatOutOfPlaceOnesDo) {
  torch::manual_seed(3);
  const BatchStatsSum over_ranks = [](torch::Tensor&) {};  // one rank's sums: SyncBatchNorm2d's path
  for (const bool sync : {false, true}) {
    for (const Norm norm : {Norm::batch, Norm::instance, Norm::none}) {
      if (sync && norm != Norm::batch) continue;
      const BatchStatsSum sum = sync ? over_ranks : BatchStatsSum{};
      const std::string name = to_string(norm) + (sync ? " over ranks" : "");
      GeneratorOptions unet_options{2, 2, 5, 4, norm, true};
      unet_options.batch_stats_sum = sum;
      UnetGenerator unet(unet_options);
      GeneratorOptions resnet_options = resnet_generator_options(2, 2, 4, 2, norm, true);
      resnet_options.batch_stats_sum = sum;
      ResnetGenerator resnet(resnet_options);
      PatchDiscriminator patch(DiscriminatorOptions{4, 4, 3, norm, sum});
      Classifier classifier(ClassifierOptions{2, 32, 32, 5, 8, 0, norm});
      const torch::Tensor image = torch::randn({2, 2, 32, 32});
      const torch::Tensor pair = torch::randn({2, 4, 32, 32});
      struct Net {
        const char* what;
        torch::nn::Module& module;
        std::function<torch::Tensor(const torch::Tensor&)> forward;
        torch::Tensor input;
      };
      std::vector<Net> nets{Net{"U-Net", *unet, [&](const torch::Tensor& x) { return unet->forward(x); }, image},
                            Net{"ResNet", *resnet, [&](const torch::Tensor& x) { return resnet->forward(x); }, image},
                            Net{"PatchGAN", *patch, [&](const torch::Tensor& x) { return patch->forward(x); }, pair}};
      // Its batch norm is never over ranks: the pass with batch norm covers it.
      if (!sync)
        nets.push_back(Net{"recognition network", *classifier,
                           [&](const torch::Tensor& x) { return classifier->forward(x); }, image});
      for (const Net& net : nets) {
        SCOPED_TRACE(std::string(net.what) + ", " + name);
        const torch::Tensor input_before = net.input.clone();
        // As built: every activation in place.
        const std::vector<bool*> settings = activations_in_place(net.module);
        EXPECT_FALSE(settings.empty());
        for (const bool* in_place : settings) EXPECT_TRUE(*in_place);
        // The running statistics as before the first pass: SyncBatchNorm2d centres by them.
        std::vector<torch::Tensor> buffers;
        for (const auto& b : net.module.buffers()) buffers.push_back(b.clone());
        const std::vector<torch::Tensor> in_place = output_and_gradients(net.module, net.forward, net.input);
        {
          torch::NoGradGuard no_grad;
          std::size_t k = 0;
          for (auto& b : net.module.buffers()) b.copy_(buffers[k++]);
        }
        for (bool* in_place : settings) *in_place = false;
        const std::vector<torch::Tensor> out_of_place = output_and_gradients(net.module, net.forward, net.input);
        ASSERT_EQ(in_place.size(), out_of_place.size());
        for (std::size_t i = 0; i < in_place.size(); ++i) EXPECT_TRUE(torch::equal(in_place[i], out_of_place[i])) << i;
        EXPECT_TRUE(torch::equal(net.input, input_before)) << "an activation overwrote the network's input";
      }
    }
  }
}

// See Note [the skip's gradient in one piece]: torch::cat's values and gradients bit for bit, with
// the inner part's gradient contiguous in the layout of the output's gradient, and the skip's a view.
TEST(Networks, SkipConcatHandsTheInnerGradientInOnePiece) {
  torch::manual_seed(5);
  for (const auto format : {torch::MemoryFormat::Contiguous, torch::MemoryFormat::ChannelsLast}) {
    SCOPED_TRACE(format == torch::MemoryFormat::ChannelsLast ? "NHWC" : "NCHW");
    const torch::Tensor skip_value = torch::randn({2, 3, 4, 5}).contiguous(format);
    const torch::Tensor inner_value = torch::randn({2, 6, 4, 5}).contiguous(format);
    const torch::Tensor upstream = torch::randn({2, 9, 4, 5}).contiguous(format);
    std::vector<torch::Tensor> grads[2];
    torch::Tensor outputs[2];
    for (const int ours : {0, 1}) {
      const torch::Tensor skip = skip_value.clone().requires_grad_();
      const torch::Tensor inner = inner_value.clone().requires_grad_();
      outputs[ours] = ours ? skip_concat(skip, inner) : torch::cat({skip, inner}, 1);
      grads[ours] = torch::autograd::grad({outputs[ours]}, {skip, inner}, {upstream});
    }
    EXPECT_TRUE(torch::equal(outputs[1], outputs[0]));
    EXPECT_TRUE(outputs[1].is_contiguous(format));
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(torch::equal(grads[1][i], grads[0][i])) << i;
    EXPECT_FALSE(grads[0][1].is_contiguous(format)) << "torch::cat's slice was contiguous: the test shows nothing";
    EXPECT_TRUE(grads[1][1].is_contiguous(format)) << "the inner part's gradient is a slice";
    EXPECT_EQ(grads[1][0].data_ptr(), upstream.data_ptr()) << "the skip's part was copied";
  }
}
