// Note [the generator's moving average]: GAN generators oscillate from step to step, and an
// exponential moving average of their weights is a better model than the last step's (Yazıcı et
// al. 2019; StyleGAN and its successors keep one). Every rank keeps the same average without
// communication: the replicas' parameters are identical after each step, so the averages are too
// (verify_replicas checks them with the networks). Only parameters are averaged; buffers (batch
// norm's running statistics) are copied from the model after every step, as StyleGAN2-ADA does,
// and at each epoch end rank 0's go to every rank with the model's (Trainer::all_networks), so
// what rank 0 validates and saves matches its model. The average is in every checkpoint (exact
// resume) under the network's key + "_ema"; validation, best_generator.pt (marked weights =
// "ema") and inference (--weights auto|ema|raw) use it, and the start-up table, evaluation.json
// and export metadata say so. It starts as a copy of the initial weights; with decay d its memory
// is about 1/(1-d) steps, so d = 0.999 needs runs of several thousand steps before it forgets the
// initialisation.
#include "pix2pix/train/generator_ema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::train {

GeneratorEma::GeneratorEma(gan::GanModel& model, double decay) : decay_(decay) {
  if (!(decay > 0 && decay < 1))
    throw UsageError("--ema-decay of an average must be above 0 and below 1; got " + std::to_string(decay));
  std::vector<nets::Generator*> generators = {&model.translator()};
  if (nets::Generator* back = model.reverse_translator()) generators.push_back(back);
  const std::vector<gan::NamedNetwork> networks = model.networks();
  for (nets::Generator* generator : generators) {
    const auto named = std::find_if(networks.begin(), networks.end(),
                                    [&](const gan::NamedNetwork& n) { return n.module == generator->get(); });
    if (named == networks.end()) throw Error("--ema-decay: the model's generator is not among its networks");
    sources_.push_back(*named);
    // The same architecture, alone: validation runs it on rank 0 only, so no batch-norm sums over ranks.
    nets::GeneratorOptions options = (*generator)->options();
    options.batch_stats_sum = {};
    nets::Generator copy = nets::make_generator(options);
    const torch::Tensor first = (*generator)->parameters().front();
    copy->to(first.device());
    copies_.push_back(copy);
  }
  restart();
}

// Listed afresh at each use, never kept: loading a checkpoint replaces a module's tensors, and a
// kept list would go on updating the replaced ones.
GeneratorEma::Tensors GeneratorEma::tensors(bool buffers) const {
  Tensors t;
  for (std::size_t i = 0; i < copies_.size(); ++i) {
    for (const torch::Tensor& p : buffers ? copies_[i]->buffers() : copies_[i]->parameters())
      t.averaged.push_back(buffers ? p : p.detach());
    for (const torch::Tensor& p : buffers ? sources_[i].module->buffers() : sources_[i].module->parameters())
      t.model.push_back(buffers ? p : p.detach());
  }
  if (t.averaged.size() != t.model.size()) throw Error("--ema-decay: a generator's average lacks its tensors");
  return t;
}

void GeneratorEma::update() {
  torch::NoGradGuard no_grad;
  const Tensors parameters = tensors(/*buffers=*/false);
  // Two fused loops over all tensors (one kernel launch each on GPUs, per tensor group).
  torch::_foreach_mul_(parameters.averaged, decay_);
  torch::_foreach_add_(parameters.averaged, parameters.model, 1.0 - decay_);
  copy(tensors(/*buffers=*/true));
}

void GeneratorEma::copy(const Tensors& tensors) {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < tensors.averaged.size(); ++i) tensors.averaged[i].copy_(tensors.model[i]);
}

void GeneratorEma::restart() {
  copy(tensors(/*buffers=*/false));
  copy(tensors(/*buffers=*/true));
}

std::vector<gan::NamedNetwork> GeneratorEma::networks() {
  std::vector<gan::NamedNetwork> named;
  for (std::size_t i = 0; i < copies_.size(); ++i)
    named.push_back({sources_[i].label + " (EMA)", checkpoint::ema_key(sources_[i].key), copies_[i].get()});
  return named;
}

std::string GeneratorEma::describe() const {
  char text[160];
  std::snprintf(text, sizeof(text), "of %s, decay %g (half-life %.0f steps); validation and best_generator.pt use it",
                sources_.size() > 1 ? "both generators" : "the generator", decay_, std::log(0.5) / std::log(decay_));
  return text;
}

}  // namespace pix2pix::train
