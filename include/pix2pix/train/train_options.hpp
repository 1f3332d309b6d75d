// Everything `pix2pix train` can be told, with the reference Pix2Pix defaults.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/common/progress.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/gan/losses.hpp"
#include "pix2pix/gan/model_options.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/metrics/feature_network.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/sync_batch_norm.hpp"
#include "pix2pix/nets/val_mode.hpp"
#include "pix2pix/optim/lr_schedule.hpp"
#include "pix2pix/optim/precision.hpp"
#include "pix2pix/optim/update_group.hpp"
#include "pix2pix/train/early_stopping.hpp"
#include "pix2pix/train/option_changes.hpp"

namespace pix2pix::train {

// What early stopping watches: validation PSNR, the --aux-classifier's recognition accuracy of
// G(A) (`--es-metric accuracy`), or the FID or KID of G(A) against the val B images (to minimise).
enum class EsMetric { psnr, accuracy, fid, kid };
EsMetric parse_es_metric(const std::string& text);
std::string to_string(EsMetric metric);

struct LoopOptions;
// UsageError when --val-metrics fid/kid, --val-features and --es-metric do not go together.
void check_feature_options(const LoopOptions& options);

// The data a run trains on: the file, how it is opened, and what the loader is told.
struct DataOptions {
  std::string data;  // the pix2pix-h5 file
  data::H5Driver h5_driver = data::H5Driver::serial;
  data::LoaderOptions loader;  // batch size per rank, cache, augmentation, seed, shuffle
};

// What the run loop reads: how long it runs and at what learning rate, how often it validates and
// checks the replicas, what early stopping watches, batch norm across ranks, the recognition
// network it builds for the model (--aux-classifier), and how it reports progress.
struct LoopOptions {
  std::int64_t max_epochs = 200;                   // bounds everything
  optim::LrSchedule lr;                            // lr, policy, epochs, epochs_decay, scaling, base_batch, warmup
  nets::SyncBn sync_bn = nets::SyncBn::automatic;  // See Note [synchronised batch norm]
  std::int64_t check_replicas_every = 0;           // steps between replica checksums (0: only at start)
  std::optional<ProgressStyle> progress;           // --progress (unset: auto)
  std::int64_t val_every = 1;
  std::int64_t val_batch_size = 64;
  nets::ValMode val_mode = nets::ValMode::eval;
  EarlyStoppingOptions early_stopping;
  EsMetric es_metric = EsMetric::psnr;
  std::int64_t sample_count = 8;  // val rows in samples/epoch_NNNN.png
  std::string aux_classifier;     // a `train-classifier` file: G also minimises lambda_aux · CE (recognition_loss.hpp)
  double lambda_aux = 1.0;
  // --val-features and --val-metrics fid,kid: the FID and KID of G(A) against the val split's B
  // images at each validation (val_fid, val_kid in metrics.csv), measured with this network.
  metrics::FeatureOptions val_features;  // file "": none
  bool val_fid = false, val_kid = false;
  std::int64_t kid_subsets = 100, kid_subset_size = 1000;
  // --ema-decay: a moving average of the generators' weights with this decay (0: none), which
  // validation and best_generator.pt use (generator_ema.hpp).
  double ema_decay = 0;
  // --quality-targets: values of the --es-metric's smoothed value whose first epoch and time
  // summary.json gives (See Note [time to quality]).
  std::vector<double> quality_targets;
  std::optional<bool> cuda_graph;  // --cuda-graph (See Note [a step as one CUDA graph])
  // --fused-kernels (See Note [fused bias and LeakyReLU])
  std::optional<bool> fused_kernels;
};

// Where a run lives and how it starts: its directory and checkpoints, resume, and what its start-up
// says about the job.
struct RunOptions {
  std::string run_dir;
  std::string resume;                   // "", "auto" or a checkpoint path
  bool overwrite = false;               // a run already in run_dir may be replaced (cli checks it)
  bool accept_changed_options = false;  // a resume may change options that change what is learned
  int ranks_per_node = 1;               // ranks sharing this node's memory (the cache budget's divisor)
  std::int64_t keep_last = 0;           // rotated epoch checkpoints kept (0: none)
  std::string effective_config;         // the resolved options as INI text (written as config.cfg)
  OptionRoles option_roles;             // what a resume may change of it (See Note [options a resume may change])
  std::vector<std::string> rank_table;  // one line per rank (host, local rank, device, threads) for start-up
  std::string threads;                  // rank 0's thread budget, described (cli::settle_threads)
  bool tensorboard = false;             // also TensorBoard event files in run_dir/tensorboard
};

// Everything `pix2pix train` can be told, as the command line fills it: the groups above, which
// the Trainer keeps apart (each part of the loop reads its own), and the model's options, which it
// hands to the model as gan::ModelOptions. Fault injection is not here (test_faults.hpp).
struct TrainOptions : DataOptions, LoopOptions, RunOptions {
  std::string model = gan::default_model().name;  // --model: a name of gan/model_registry.hpp

  // Networks
  std::int64_t ngf = 64, ndf = 64, n_layers_d = 3, num_downs = 0;  // num_downs 0: from the crop size
  nets::GeneratorArch net_g = nets::GeneratorArch::unet;           // --netG: U-Net or ResNet generator
  std::int64_t n_blocks = 9;                                       // --netG resnet_Nblocks
  nets::Norm norm = nets::Norm::batch;
  bool dropout = true;
  std::string init_generator;      // a reference state dict (.pth) G starts from ("": initialised)
  std::string init_discriminator;  // the same for D

  // Objective and optimisation
  gan::GanMode gan_mode = gan::GanMode::vanilla;
  // The model's own numbers by option name (its registry entry's parameters, without "--"): those
  // not here take the entry's defaults when the model is built.
  std::map<std::string, double> model_parameters;
  double beta1 = 0.5, beta2 = 0.999;
  optim::Precision precision = optim::Precision::fp32;
  bool force_loss_scaling = false;  // tests: run the fp16 loss-scaler path in fp32
  std::int64_t bucket_bytes = 25 << 20;
  std::optional<bool> overlap_grad_sync;                // unset (auto): on with GPUs, off on CPUs (docs/distributed.md)
  torch::ScalarType grad_wire_dtype = torch::kFloat32;  // --grad-dtype (See Note [bf16 gradients on the wire])
  std::optional<bool> channels_last;                    // --channels-last (See Note [channels-last parameters])
  std::optional<bool> device_update;                    // --device-update (See Note [updates decided on the device])

  // What each of a model's update groups is told. Its learning rate depends on the global batch,
  // which the Trainer knows once the loader is made: it sets it there (NaN until then).
  optim::UpdateOptions update_options() const {
    return {std::numeric_limits<double>::quiet_NaN(),
            beta1,
            beta2,
            precision,
            force_loss_scaling,
            bucket_bytes,
            overlap_grad_sync,
            grad_wire_dtype,
            channels_last,
            device_update};
  }
  // What the model is built from.
  gan::ModelOptions model_options() const {
    gan::ModelOptions m;
    m.model = model;
    m.data = data;
    m.ngf = ngf, m.ndf = ndf, m.n_layers_d = n_layers_d, m.num_downs = num_downs;
    m.net_g = net_g, m.n_blocks = n_blocks, m.norm = norm, m.dropout = dropout;
    m.init_generator = init_generator, m.init_discriminator = init_discriminator;
    m.gan_mode = gan_mode, m.parameters = model_parameters;
    m.update = update_options();
    return m;
  }
};

}  // namespace pix2pix::train
