// What a model scores validation by besides the PSNR of G(A) against B: a function of its own,
// registered with the model (model_registry.hpp), that the run loop calls without knowing what it
// measures. An unpaired val split has no B to score G(A) against, so early stopping watches it
// there; on a paired one it is reported beside the PSNR (metrics.csv's val_<name>_psnr).
// See Note [the model registry].
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pix2pix/data/sample_types.hpp"
#include "pix2pix/metrics/sample_sheet.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::gan {

// What validation hands a content score: the whole val split of each domain and the generators
// as validation runs them (their mode set, without gradients).
struct ValImages {
  torch::Tensor a, b;  // stored values NHWC on `device`: A's images and B's (unpaired: in their own numbers)
  data::DomainSamples samples_a, samples_b;
  nets::Generator* generator = nullptr;  // A to B
  nets::Generator* back = nullptr;       // B to A (GanModel::reverse_translator(), or its EMA), or null
  std::int64_t batch_size = 64;          // images a forward pass
  std::int64_t sample_count = 0;         // rows the score shows (0: none; an unpaired split's sample sheet)
  torch::Device device{torch::kCPU};
  optim::Precision precision = optim::Precision::fp32;
};

struct ContentResult {
  double psnr = 0;                  // the score: a mean per-image PSNR, higher is better
  std::vector<torch::Tensor> rows;  // metrics::sample_rows of the first sample_count images
  metrics::SampleLabels labels;     // their columns' labels
};

struct ContentScore {
  std::string name;    // "cycle": metrics.csv's val_cycle_psnr, summary.json's es_metric cycle_psnr
  std::string metric;  // "cycle-reconstruction PSNR": early stopping's "validation <metric>"
  // The start-up line's "early stopping on <metric><why>" on an unpaired val split, and the
  // "<reported> PSNR is reported beside it" line on a paired one.
  std::string why_unpaired;
  std::string reported;
  // Why it cannot score data of these channel counts ("" when it can): the run loop then leaves
  // it out on a paired val split and refuses an unpaired one.
  std::function<std::string(std::int64_t channels_a, std::int64_t channels_b)> unavailable;
  std::function<ContentResult(const ValImages& images)> score;
};

}  // namespace pix2pix::gan
