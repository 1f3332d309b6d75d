// Built as in the reference: nested skip blocks from the innermost outwards; convolutions carry a
// bias only when the norm layer has no affine shift of its own (instance norm, or no norm).
#include "pix2pix/nets/networks.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/skip_concat.hpp"

namespace pix2pix::nets {
namespace nn = torch::nn;

namespace {
const Choices<Norm> kNormChoices = {{"batch", Norm::batch}, {"instance", Norm::instance}, {"none", Norm::none}};
}  // namespace

Norm parse_norm(const std::string& text) {
  return parse_choice(text, "--norm", kNormChoices);
}
std::string to_string(Norm value) {
  return choice_name(value, kNormChoices);
}

std::int64_t unet_depth_for(std::int64_t side) {
  std::int64_t depth = 0;
  while ((std::int64_t{1} << (depth + 1)) <= side && depth < 8) ++depth;
  if (depth < 5 || side % (std::int64_t{1} << depth) != 0)
    throw Error("image side " + std::to_string(side) +
                " does not fit the U-Net: it must be a multiple of 32 (>= 32), a power of two up to 256, or a "
                "multiple of 256; use --crop-size");
  return depth;
}

std::int64_t patch_output_side(std::int64_t side, std::int64_t n_layers) {
  std::int64_t s = side;
  for (std::int64_t i = 0; i < n_layers; ++i) s = (s + 2 - 4) / 2 + 1;  // k4 s2 p1
  s = s - 1;                                                            // k4 s1 p1, twice
  s = s - 1;
  if (n_layers < 1 || s < 1)
    throw Error("--n-layers-d " + std::to_string(n_layers) + " leaves no discriminator output for " +
                std::to_string(side) + "x" + std::to_string(side) + " images; use fewer layers");
  return s;
}

bool conv_bias(Norm norm) {
  return norm != Norm::batch;
}

// Note [activations in place]
// Every ReLU and LeakyReLU of the networks overwrites its input, as the reference's do
// (inplace=True). An activation that makes a new tensor leaves two of a layer's size alive until
// backward: its input, which it saves, and its output, which the next convolution saves; in place
// there is one, which the activation saves as its result (the gradient of ReLU and of LeakyReLU
// with a positive slope is read as well off the output as off the input). Measured on CPUs with
// both programs' memory events (bench --trace, bench/trace_summary.py; docs/performance.md): our
// step held 23 MiB more than PyTorch's at its peak at 128x128 batch 4, all of it such pairs. It is
// safe because nothing that follows the layer before an activation saves its output for backward:
// a convolution saves its input, BatchNorm2d its input, our SyncBatchNorm2d its input on a GPU and
// a normalised copy on a CPU, InstanceNorm2d works on a view of its own result, Identity (no norm)
// hands on the convolution's output, and torch::cat saves nothing. Values and gradients are those
// of the out-of-place layers bit for bit (tests/nets/networks_test.cpp); for the skip connections,
// See Note [the reference's in-place LeakyReLU]
torch::nn::ReLU relu_in_place() {
  return nn::ReLU(nn::ReLUOptions(/*inplace=*/true));
}
constexpr double kLeakySlope = 0.2;  // every LeakyReLU's, as the reference's
torch::nn::LeakyReLU leaky_relu_in_place() {
  return nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(kLeakySlope).inplace(true));
}

bool is_batch_norm(const torch::nn::Module& module) {
  return module.as<nn::BatchNorm2dImpl>() != nullptr || module.as<SyncBatchNorm2dImpl>() != nullptr;
}

nn::AnyModule norm_layer(Norm norm, std::int64_t channels, const BatchStatsSum& sum) {
  switch (norm) {
    case Norm::batch:
      if (sum) return nn::AnyModule(SyncBatchNorm2d(channels, sum));
      return nn::AnyModule(nn::BatchNorm2d(channels));
    case Norm::instance:
      return nn::AnyModule(nn::InstanceNorm2d(channels));
    case Norm::none:
      return nn::AnyModule(nn::Identity());
  }
  return nn::AnyModule(nn::Identity());
}

namespace {

nn::Conv2d down_conv(std::int64_t in, std::int64_t out, bool bias) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 4).stride(2).padding(1).bias(bias));
}

nn::ConvTranspose2d up_conv(std::int64_t in, std::int64_t out, bool bias) {
  return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(in, out, 4).stride(2).padding(1).bias(bias));
}

enum class BlockKind { outermost, middle, innermost };

// One level of the U-Net: down → submodule → up, with the input concatenated to the output
// (except at the outermost level, which returns the image).
class SkipBlockImpl : public nn::Module {
 public:
  // `o`: the norm, its sum over ranks and the stand-ins of --fused-kernels.
  SkipBlockImpl(BlockKind kind, std::int64_t outer, std::int64_t inner, std::int64_t in, nn::AnyModule sub,
                bool dropout, const GeneratorOptions& o)
      : kind_(kind) {
    const bool bias = conv_bias(o.norm);
    nn::Sequential model;
    if (kind == BlockKind::outermost) {
      model->push_back(down_conv(in, inner, bias));
      model->push_back(sub);
      model->push_back(relu_in_place());
      model->push_back(up_conv(inner * 2, outer, true));
      model->push_back(nn::Tanh());
    } else if (kind == BlockKind::innermost) {
      model->push_back(leaky_relu_in_place());
      model->push_back(down_conv(in, inner, bias));
      model->push_back(relu_in_place());
      model->push_back(up_conv(inner, outer, bias));
      model->push_back(norm_layer(o.norm, outer, o.batch_stats_sum));
    } else {
      model->push_back(leaky_relu_in_place());
      model->push_back(down_conv(in, inner, bias));
      model->push_back(norm_layer(o.norm, inner, o.batch_stats_sum));
      model->push_back(sub);
      model->push_back(relu_in_place());
      model->push_back(up_conv(inner * 2, outer, bias));
      model->push_back(norm_layer(o.norm, outer, o.batch_stats_sum));
      if (dropout) model->push_back(nn::Dropout(0.5));
    }
    model_ = register_module("model", model);
    if (kind == BlockKind::innermost) return;
    auto* inner_level = sub.ptr()->as<SkipBlockImpl>();
    // See Note [fused batch norm and LeakyReLU]: a middle level's batch norm and the LeakyReLU that
    // begins the level inside it, through the stand-in; the inner level then starts at its
    // convolution.
    if (kind == BlockKind::middle && o.norm_activation && is_batch_norm(*model_->ptr(kDownNorm))) {
      norm_activation_ = o.norm_activation;
      inner_level->input_activated_ = true;
    }
    // See Note [fused concatenation and ReLU]: the inner level's concatenation and this level's
    // opening ReLU of its up path, through the stand-in; with the inner level's last layer where
    // that is a batch norm (See Note [fused concatenation, batch norm and ReLU]).
    if (o.concat_activation) {
      inner_level->concat_activation_ = o.concat_activation;
      const nn::Sequential& inner_layers = inner_level->model_;
      inner_level->hands_up_norm_ = is_batch_norm(*inner_layers->ptr(inner_layers->size() - 1));
      up_relu_ = kind == BlockKind::outermost ? kOuterUpRelu : kMiddleUpRelu;
    }
  }

  // Note [the reference's in-place LeakyReLU]: an inner block starts with LeakyReLU(0.2) in place
  // (See Note [activations in place]), as the reference's does, so it overwrites x before torch::cat
  // reads it: the skip carries LeakyReLU(x), not x. Every concatenation goes straight into the
  // parent's ReLU, and ReLU(LeakyReLU(x)) = ReLU(x): the same function, values and gradients, as
  // with a skip of x (tests/infer/export_test.cpp runs the reference in PyTorch on our weights).
  torch::Tensor forward(const torch::Tensor& x) {
    if (!norm_activation_ && !input_activated_ && !concat_activation_ && up_relu_ == kNone) {
      if (kind_ == BlockKind::outermost) return model_->forward(x);
      return skip_concat(x, model_->forward(x));  // See Note [the skip's gradient in one piece]
    }
    // x is LeakyReLU(x) already where the outer level's stand-in applied it: as the in-place layer
    // leaves it, so the skip carries the same values. The inner level's output is ReLU'd already
    // where its concatenation went through the stand-in (and this level's last batch norm, where it
    // hands that over, is applied there).
    torch::Tensor h = x;
    const std::size_t end = model_->size() - (hands_up_norm_ ? 1 : 0);
    for (std::size_t i = input_activated_ ? 1 : 0; i < end; ++i) {
      if (i == up_relu_) continue;
      h = norm_activation_ && i == kDownNorm ? norm_activation_(*model_->ptr(i), h, kLeakySlope)
                                             : (model_->begin() + static_cast<std::ptrdiff_t>(i))->forward(h);
    }
    if (kind_ == BlockKind::outermost) return h;
    if (!concat_activation_) return skip_concat(x, h);
    return concat_activation_(x, h, hands_up_norm_ ? model_->ptr(end).get() : nullptr);
  }

 private:
  // The layers' places: a middle level's norm after its down convolution, and the ReLU that begins
  // an outer or middle level's up path.
  static constexpr std::size_t kDownNorm = 2, kOuterUpRelu = 2, kMiddleUpRelu = 4;
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  BlockKind kind_;
  nn::Sequential model_;
  BatchNormLeakyRelu norm_activation_;  // set where this level's down norm goes through it
  bool input_activated_ = false;        // the outer level's stand-in applied this level's LeakyReLU
  ConcatRelu concat_activation_;        // set where the outer level's ReLU goes with this concatenation
  bool hands_up_norm_ = false;          // the stand-in applies this level's last layer, a batch norm
  std::size_t up_relu_ = kNone;         // the ReLU the inner level's concatenation applied
};
TORCH_MODULE(SkipBlock);

}  // namespace

UnetGeneratorImpl::UnetGeneratorImpl(const GeneratorOptions& o) : GeneratorImpl(o) {
  if (o.arch != GeneratorArch::unet) throw Error("UnetGenerator: options of another architecture");
  if (o.num_downs < 5) throw Error("the U-Net needs at least 5 downsamplings, got " + std::to_string(o.num_downs));
  const std::int64_t ngf = o.ngf;
  const auto level = [&o](BlockKind kind, std::int64_t outer, std::int64_t inner, std::int64_t in, nn::AnyModule sub,
                          bool dropout) {
    return nn::AnyModule(SkipBlock(kind, outer, inner, in, std::move(sub), dropout, o));
  };
  nn::AnyModule block = level(BlockKind::innermost, ngf * 8, ngf * 8, ngf * 8, nn::AnyModule(), false);
  for (std::int64_t i = 0; i < o.num_downs - 5; ++i)
    block = level(BlockKind::middle, ngf * 8, ngf * 8, ngf * 8, block, o.dropout);
  block = level(BlockKind::middle, ngf * 4, ngf * 8, ngf * 4, block, false);
  block = level(BlockKind::middle, ngf * 2, ngf * 4, ngf * 2, block, false);
  block = level(BlockKind::middle, ngf, ngf * 2, ngf, block, false);
  block = level(BlockKind::outermost, o.out_channels, ngf, o.in_channels, block, false);
  model_ = block;
  register_module("model", block.ptr());
}

torch::Tensor UnetGeneratorImpl::forward(const torch::Tensor& a) {
  return model_.forward(a);
}

PatchDiscriminatorImpl::PatchDiscriminatorImpl(const DiscriminatorOptions& o) : options_(o) {
  if (o.n_layers < 1) throw Error("--n-layers-d must be at least 1");
  const bool bias = conv_bias(o.norm);
  nn::Sequential model;
  first_ = nn::Conv2d(nn::Conv2dOptions(o.in_channels, o.ndf, 4).stride(kFirstStride).padding(kFirstPadding));
  model->push_back(first_);
  model->push_back(leaky_relu_in_place());
  std::int64_t mult = 1;
  for (std::int64_t n = 1; n < o.n_layers; ++n) {
    const std::int64_t previous = mult;
    mult = std::min<std::int64_t>(std::int64_t{1} << n, 8);
    model->push_back(nn::Conv2d(nn::Conv2dOptions(o.ndf * previous, o.ndf * mult, 4).stride(2).padding(1).bias(bias)));
    model->push_back(norm_layer(o.norm, o.ndf * mult, o.batch_stats_sum));
    model->push_back(leaky_relu_in_place());
  }
  const std::int64_t previous = mult;
  mult = std::min<std::int64_t>(std::int64_t{1} << o.n_layers, 8);
  model->push_back(nn::Conv2d(nn::Conv2dOptions(o.ndf * previous, o.ndf * mult, 4).stride(1).padding(1).bias(bias)));
  model->push_back(norm_layer(o.norm, o.ndf * mult, o.batch_stats_sum));
  model->push_back(leaky_relu_in_place());
  model->push_back(nn::Conv2d(nn::Conv2dOptions(o.ndf * mult, 1, 4).stride(1).padding(1)));
  model_ = register_module("model", model);
}

torch::Tensor PatchDiscriminatorImpl::forward(const torch::Tensor& pair) {
  if (!options_.first_layer_activation && !options_.norm_activation) return model_->forward(pair);
  // See Note [fused bias and LeakyReLU]: layer 0's convolution without
  // its bias, then its bias and layer 1's LeakyReLU as one.
  // See Note [fused batch norm and LeakyReLU]: each batch norm and the
  // LeakyReLU after it as one. The parameters, their names and the layers' indices stay the reference's.
  torch::Tensor h = pair;
  std::size_t i = 0;
  if (options_.first_layer_activation) {
    h = options_.first_layer_activation(torch::conv2d(pair, first_->weight, {}, kFirstStride, kFirstPadding),
                                        first_->bias, kLeakySlope);
    i = 2;
  }
  for (; i < model_->size(); ++i) {
    nn::Module& layer = *model_->ptr(i);
    if (options_.norm_activation && is_batch_norm(layer) && i + 1 < model_->size() &&
        model_->ptr(i + 1)->as<nn::LeakyReLUImpl>()) {
      h = options_.norm_activation(layer, h, kLeakySlope);
      ++i;
    } else {
      h = (model_->begin() + static_cast<std::ptrdiff_t>(i))->forward(h);
    }
  }
  return h;
}

void init_weights(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& m : module.modules(/*include_self=*/true)) {
    const std::string name = m->name();
    const bool is_conv = name == "torch::nn::Conv2dImpl" || name == "torch::nn::ConvTranspose2dImpl";
    const bool is_norm = name == "torch::nn::BatchNorm2dImpl" || name == "torch::nn::InstanceNorm2dImpl" ||
                         m->as<SyncBatchNorm2d>() != nullptr;
    for (auto& p : m->named_parameters(/*recurse=*/false)) {
      if (is_conv && p.key() == "weight") p.value().normal_(0.0, 0.02);
      if (is_norm && p.key() == "weight") p.value().normal_(1.0, 0.02);
      if ((is_conv || is_norm) && p.key() == "bias") p.value().zero_();
    }
  }
}

std::int64_t count_parameters(const torch::nn::Module& module) {
  std::int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

}  // namespace pix2pix::nets
