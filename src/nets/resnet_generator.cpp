// Layer for layer the reference's ResnetGenerator and ResnetBlock, in the same Sequential order,
// so that every parameter sits at the reference's index (docs/architecture.md, "Networks").
#include "pix2pix/nets/resnet_generator.hpp"

#include "pix2pix/common/error.hpp"

namespace pix2pix::nets {
namespace nn = torch::nn;

namespace {

// x + conv_block(x), conv_block = pad, conv3x3, norm, ReLU, [dropout], pad, conv3x3, norm.
class ResnetBlockImpl : public nn::Module {
 public:
  ResnetBlockImpl(std::int64_t dim, Norm norm, bool dropout, const BatchStatsSum& sum) {
    const bool bias = conv_bias(norm);
    nn::Sequential block;
    block->push_back(nn::ReflectionPad2d(1));
    block->push_back(nn::Conv2d(nn::Conv2dOptions(dim, dim, 3).bias(bias)));
    block->push_back(norm_layer(norm, dim, sum));
    block->push_back(relu_in_place());
    if (dropout) block->push_back(nn::Dropout(0.5));
    block->push_back(nn::ReflectionPad2d(1));
    block->push_back(nn::Conv2d(nn::Conv2dOptions(dim, dim, 3).bias(bias)));
    block->push_back(norm_layer(norm, dim, sum));
    conv_block_ = register_module("conv_block", block);
  }
  torch::Tensor forward(const torch::Tensor& x) { return x + conv_block_->forward(x); }

 private:
  nn::Sequential conv_block_;
};
TORCH_MODULE(ResnetBlock);

}  // namespace

GeneratorOptions resnet_generator_options(std::int64_t in_channels, std::int64_t out_channels, std::int64_t ngf,
                                          std::int64_t n_blocks, Norm norm, bool dropout) {
  GeneratorOptions o;
  o.arch = GeneratorArch::resnet;
  o.in_channels = in_channels;
  o.out_channels = out_channels;
  o.ngf = ngf;
  o.n_blocks = n_blocks;
  o.norm = norm;
  o.dropout = dropout;
  o.num_downs = 0;
  return o;
}

ResnetGeneratorImpl::ResnetGeneratorImpl(const GeneratorOptions& o) : GeneratorImpl(o) {
  if (o.arch != GeneratorArch::resnet) throw Error("ResnetGenerator: options of another architecture");
  if (o.n_blocks < 0) throw Error("the ResNet generator needs 0 or more blocks, got " + std::to_string(o.n_blocks));
  if (o.ngf < 1) throw Error("--ngf must be at least 1, got " + std::to_string(o.ngf));
  const bool bias = conv_bias(o.norm);
  nn::Sequential model;
  model->push_back(nn::ReflectionPad2d(3));
  model->push_back(nn::Conv2d(nn::Conv2dOptions(o.in_channels, o.ngf, 7).bias(bias)));
  model->push_back(norm_layer(o.norm, o.ngf, o.batch_stats_sum));
  model->push_back(relu_in_place());
  for (std::int64_t mult : {1, 2}) {
    model->push_back(nn::Conv2d(nn::Conv2dOptions(o.ngf * mult, o.ngf * mult * 2, 3).stride(2).padding(1).bias(bias)));
    model->push_back(norm_layer(o.norm, o.ngf * mult * 2, o.batch_stats_sum));
    model->push_back(relu_in_place());
  }
  for (std::int64_t i = 0; i < o.n_blocks; ++i)
    model->push_back(ResnetBlock(o.ngf * 4, o.norm, o.dropout, o.batch_stats_sum));
  for (std::int64_t mult : {4, 2}) {
    model->push_back(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(o.ngf * mult, o.ngf * mult / 2, 3)
                                             .stride(2)
                                             .padding(1)
                                             .output_padding(1)
                                             .bias(bias)));
    model->push_back(norm_layer(o.norm, o.ngf * mult / 2, o.batch_stats_sum));
    model->push_back(relu_in_place());
  }
  model->push_back(nn::ReflectionPad2d(3));
  model->push_back(nn::Conv2d(nn::Conv2dOptions(o.ngf, o.out_channels, 7)));
  model->push_back(nn::Tanh());
  model_ = register_module("model", model);
}

torch::Tensor ResnetGeneratorImpl::forward(const torch::Tensor& a) {
  return model_->forward(a);
}

}  // namespace pix2pix::nets
