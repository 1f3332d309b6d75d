// --ema-decay: an exponential moving average of each generator's weights, kept beside the model
// on every rank. Validation, best_generator.pt and inference use it.
// See Note [the generator's moving average] (generator_ema.cpp).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/gan/named_network.hpp"
#include "pix2pix/nets/networks.hpp"

namespace pix2pix::train {

class GeneratorEma {
 public:
  // Copies of `model`'s translator() and reverse_translator() (when it has one), starting equal
  // to them. UsageError naming --ema-decay unless 0 < decay < 1.
  GeneratorEma(gan::GanModel& model, double decay);

  // After each optimisation step: every parameter p_avg <- decay * p_avg + (1 - decay) * p, and
  // every buffer (batch norm's running statistics) a copy of the model's.
  void update();
  // The average restarts from the model's weights: a resume from a checkpoint that holds none.
  void restart();

  nets::Generator& translator() { return copies_.front(); }
  nets::Generator* reverse_translator() { return copies_.size() > 1 ? &copies_[1] : nullptr; }
  // The averages as checkpoints name them: "generator_ema" ("G (EMA)"), "generator_ba_ema".
  std::vector<gan::NamedNetwork> networks();
  double decay() const { return decay_; }
  // A line for the start-up table: the decay and its half-life in steps.
  std::string describe() const;

 private:
  // The parameters (or buffers) of the averages and, in the same order, of the model's generators.
  struct Tensors {
    std::vector<torch::Tensor> averaged, model;
  };
  Tensors tensors(bool buffers) const;
  static void copy(const Tensors& tensors);  // averaged <- model

  double decay_;
  std::vector<gan::NamedNetwork> sources_;  // the model's generators, as networks() names them
  std::vector<nets::Generator> copies_;
};

}  // namespace pix2pix::train
