// See train_command_line.hpp.
#include "pix2pix/cli/train_command_line.hpp"

#include <torch/version.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include "pix2pix/cli/loader_options.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/metrics/time_to_quality.hpp"
#include "pix2pix/nets/val_mode.hpp"
#include "pix2pix/optim/lr_schedule.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::cli {
namespace {

// `ini` ("name = value" lines) with the values of `values` in place of those it has.
std::string with_values(const std::string& ini, const std::map<std::string, std::string>& values) {
  std::istringstream in(ini);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find(" = ");
    const auto it = eq == std::string::npos ? values.end() : values.find(line.substr(0, eq));
    out += (it == values.end() ? line : it->first + " = " + it->second) + "\n";
  }
  return out;
}

std::string default_run_dir(const std::string& data) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + std::filesystem::path(data).stem().string() + "-" + stamp;
}

}  // namespace

OptionGroup TrainCommandLine::run_options() {
  train::TrainOptions& o = given_;
  OptionGroup g("Run");
  g.optional_text("data", o.data, "pix2pix-h5 dataset (pix2pix prepare)")
      .value_name("FILE")
      .input_file()
      .how_the_job_runs();  // its path: the file's contents are compared as "data-contents"
  g.optional_text("run-dir", o.run_dir, "run directory (default runs/<data name>-<time>)")
      .value_name("DIR")
      .this_invocation()
      .rank_local()
      .run_directory();
  g.text("resume", o.resume, "auto (the newest undamaged checkpoint of --run-dir, if any) or a checkpoint")
      .this_invocation()
      .run_directory();
  // A resume continues from the checkpoint, not from these.
  g.optional_text("init-generator", o.init_generator,
                  "start G from a reference PyTorch state dict (latest_net_G.pth, or export --format pytorch) "
                  "instead of random weights; names and shapes must be this run's")
      .value_name("FILE.pth")
      .input_file()
      .how_the_job_runs();
  g.optional_text("init-discriminator", o.init_discriminator, "the same for D (latest_net_D.pth)")
      .value_name("FILE.pth")
      .input_file()
      .how_the_job_runs();
  g.flag("overwrite", o.overwrite,
         "start afresh in a --run-dir that holds a run, deleting its checkpoints, metrics and samples")
      .this_invocation()
      .run_directory();
  g.flag("accept-changed-options", o.accept_changed_options,
         "--resume with options that change what is learned (--lr, --gan-mode, the data, ...), which is refused "
         "otherwise; changes are listed either way")
      .this_invocation()
      .run_directory();
  g.text("device", device_, "auto | cpu | cuda").how_the_job_runs().rank_local();
  g.count("keep-last", o.keep_last, 0, kNoLimit, "also keep the last K epoch checkpoints")
      .how_the_job_runs()
      .run_directory();
  g.count("global-batch", global_batch_, 0, kNoLimit, "global batch instead of --batch-size (divides by ranks)")
      .how_the_job_runs();
  g.count("check-replicas", o.check_replicas_every, 0, kNoLimit,
          "verify replicas are identical every K steps (0: at start)")
      .how_the_job_runs();
  g.flag("collective-log", collective_log_,
         "record every collective (begin/end) in <run-dir>/logs/rank-N.collectives.tsv")
      .how_the_job_runs()
      .rank_local();
  g.flag("tensorboard", o.tensorboard,
         "also write TensorBoard event files (each epoch's metrics, each validation's samples) to "
         "<run-dir>/tensorboard: tensorboard --logdir <run-dir>")
      .how_the_job_runs()
      .run_directory();
  g.choice("progress", o.progress, "auto", parse_progress_style,
           "auto | bar | lines | none: rank 0's progress (auto: a bar on a terminal; lines: one every 10 s, for "
           "logs)")
      .how_the_job_runs()
      .rank_local();
  return g;
}

OptionGroup TrainCommandLine::network_options() {
  train::TrainOptions& o = given_;
  // Widths beyond these would need terabytes for the networks alone; depths beyond them leave no
  // image (the data-dependent limits are checked against the file later).
  OptionGroup g("Networks");
  g.count("ngf", o.ngf, 1, 1024, "generator filters in the first layer");
  g.count("ndf", o.ndf, 1, 1024, "discriminator filters in the first layer");
  g.count("n-layers-d", o.n_layers_d, 1, 8, "PatchGAN depth (3: 70x70 receptive field)");
  g.text("model", model_.model, model_help());
  g.text("netG", model_.net_g,
         "generator: unet (depth from --num-downs) | unet_128 | unet_256 | resnet_6blocks | resnet_9blocks (the "
         "reference's names); auto: " +
             gan::per_model([](const gan::ModelEntry& m) { return m.net_g; }));
  g.count("num-downs", o.num_downs, 0, 14, "U-Net depth (0: log2 of the crop size, at most 8)");
  g.text("norm", model_.norm, "batch | instance | none; auto: " + gan::per_model([](const gan::ModelEntry& m) {
                                return nets::to_string(m.norm);
                              }));
  g.choice("sync-bn", o.sync_bn, "auto", nets::parse_sync_bn,
           "on | off | auto: batch norm over the global batch of all ranks (on) or each rank's own (off); auto: on "
           "with batch norm and more than one rank, so that N ranks x B train the model 1 process x NB would");
  g.flag("no-dropout", model_.dropout,
         "no dropout in the generator (the reference's defaults: " + gan::per_model([](const gan::ModelEntry& m) {
           return std::string(m.dropout ? "dropout" : "none");
         }) + ")",
         /*when_given=*/false);
  return g;
}

OptionGroup TrainCommandLine::optimisation_options() {
  train::TrainOptions& o = given_;
  OptionGroup g("Objective and optimisation");
  g.text("gan-mode", model_.gan_mode,
         "vanilla (BCE) | lsgan (MSE); auto: " +
             gan::per_model([](const gan::ModelEntry& m) { return gan::to_string(m.gan_mode); }));
  add_model_parameters(g, model_);
  g.optional_text("aux-classifier", o.aux_classifier,
                  "a recognition network (pix2pix train-classifier) G(A) must stay recognisable to: G also minimises "
                  "--lambda-aux x its cross-entropy on the train labels; validation reports its accuracy on G(A)")
      .value_name("FILE.pt")
      .input_file();
  g.optional_real("lambda-aux", lambda_aux_, Range::at_least(0), "weight of the --aux-classifier term (default 1)")
      .value_name("W");
  g.real("lr", o.lr.lr, Range::above(0), "Adam learning rate at --base-batch");
  g.real("beta1", o.beta1, Range::right_open(0, 1), "Adam beta1");
  g.real("beta2", o.beta2, Range::right_open(0, 1), "Adam beta2");
  g.choice("lr-policy", o.lr.policy, "linear", optim::parse_lr_policy, "constant | linear (decay after --epochs)");
  g.count("epochs", o.lr.epochs, 0, kNoLimit, "epochs at the full learning rate");
  g.count("epochs-decay", o.lr.epochs_decay, 0, kNoLimit, "linear: epochs of decay to zero");
  g.count("max-epochs", o.max_epochs, 1, kNoLimit, "hard bound on epochs").how_the_job_runs();
  g.choice("lr-scaling", o.lr.scaling, "none", optim::parse_lr_scaling,
           "none | sqrt | linear in global batch / --base-batch");
  g.count("base-batch", o.lr.base_batch, 1, kNoLimit, "the batch --lr is meant for");
  g.count("warmup-epochs", o.lr.warmup_epochs, 0, kNoLimit, "linear learning-rate warm-up");
  g.choice("precision", o.precision, "fp32", optim::parse_precision, "fp32 | bf16 | fp16 (CUDA)");
  // A layout, not a value (See Note [channels-last parameters]).
  g.on_off_auto("channels-last", o.channels_last,
                "on | off | auto: convolution weights, gradients and Adam's moments in NHWC (auto: on for GPU ranks "
                "in bf16 and fp16, whose tensor-core convolutions work in NHWC)")
      .how_the_job_runs();
  // Where a decision is taken, not what it is (See Note [updates decided on the device]).
  g.on_off_auto("device-update", o.device_update,
                "on | off | auto: decide on the device whether Adam's update is taken (non-finite gradients) and "
                "the fp16 loss scale, with ATen's fused Adam: no host read per step (auto: on for GPU ranks; "
                "LibTorch 2.4 or newer)")
      .how_the_job_runs();
  // How the step is launched, not what it computes (See Note [a step as one CUDA graph]).
  g.on_off_auto("cuda-graph", o.cuda_graph,
                "on | off | auto: capture the training step once as a CUDA graph and replay it at every later "
                "step, one launch a step (GPU ranks, a LibTorch with CUDA, --device-update on, --model pix2pix; "
                "auto: off until measured on a GPU)")
      .how_the_job_runs();
  // Which kernels compute, not what (See Note [fused bias and LeakyReLU]).
  g.on_off_auto("fused-kernels", o.fused_kernels,
                "on | off | auto: CUDA kernels of our own for the discriminators' first bias and LeakyReLU, each "
                "batch norm (a rank's or --sync-bn's over ranks) with its LeakyReLU, and the U-Net's skip "
                "concatenations with their ReLU and the batch norm before them, in place of ATen's separate "
                "passes (GPU ranks with "
                "--channels-last on, a build with nvcc; auto: off until measured on a GPU)")
      .how_the_job_runs();
  g.real("bucket-mb", bucket_mb_, Range::left_open(0, 1 << 16), "gradient all-reduce bucket size (MiB)")
      .how_the_job_runs();
  g.on_off_auto("overlap-grad-sync", o.overlap_grad_sync,
                "on | off | auto: start each bucket's all-reduce during backward (auto: on with GPUs, off on CPUs)")
      .how_the_job_runs();
  g.choice(
      "grad-dtype", o.grad_wire_dtype, "fp32",
      [](const std::string& text, const char* option) {
        return parse_choice<torch::ScalarType>(text, option, {{"fp32", torch::kFloat32}, {"bf16", torch::kBFloat16}});
      },
      "fp32 | bf16: the dtype gradients are all-reduced in (bf16 halves the bytes, rounds each sum)");
  return g;
}

OptionGroup TrainCommandLine::validation_options() {
  train::TrainOptions& o = given_;
  OptionGroup g("Validation and early stopping");
  g.count("val-every", o.val_every, 1, kNoLimit, "validate every N epochs").how_the_job_runs();
  g.count("val-batch-size", o.val_batch_size, 1, kNoLimit, "pairs per validation forward pass").how_the_job_runs();
  g.choice("val-mode", o.val_mode, "eval", nets::parse_val_mode, "eval | train (norm/dropout as in training)");
  g.choice("es-metric", o.es_metric, "psnr", train::parse_es_metric,
           "psnr | accuracy | fid | kid: what early stopping watches (accuracy: the --aux-classifier's recognition "
           "of G(A); fid, kid: of G(A) against the val B images, lower is better, with --val-features)");
  g.count("es-window", o.early_stopping.window, 1, kNoLimit, "moving-average window of the --es-metric");
  g.count("es-patience", o.early_stopping.patience, 1, kNoLimit, "evaluations without improvement before stopping");
  g.real("es-min-delta", o.early_stopping.min_delta, Range::at_least(0),
         "minimum improvement of the smoothed PSNR (dB)");
  g.choice("quality-targets", o.quality_targets, "", metrics::parse_quality_targets,
           "values of the --es-metric's smoothed value (e.g. 16,17,18 dB of PSNR): summary.json says at which "
           "epoch, after how many seconds of training and of wall time, each was first reached (time to quality)")
      .value_name("V,...")
      .how_the_job_runs()
      .run_directory();
  g.flag("no-early-stop", o.early_stopping.enabled, "train to --max-epochs (the best model is still kept)",
         /*when_given=*/false);
  g.count("sample-count", o.sample_count, 0, 1024, "val rows in each samples/epoch_NNNN.png").how_the_job_runs();
  // What validation reports besides PSNR (See Note [options a resume may change]).
  g.text("val-metrics", val_metrics_,
         "what each validation reports, a list of psnr, ssim, l1 (always reported), fid, kid (need "
         "--val-features); auto: psnr,ssim,l1, and fid,kid with --val-features")
      .how_the_job_runs();
  g.real("ema-decay", o.ema_decay, Range::right_open(0, 1),
         "keep an exponential moving average of the generator's weights with this decay after every step (e.g. "
         "0.999; 0: none); validation, best_generator.pt, translate, evaluate and export use it (--weights raw: "
         "not)")
      .value_name("D")
      .before_it_existed("0");  // no moving average
  return g;
}

TrainCommandLine::TrainCommandLine() {
  options_.add(run_options().description())
      .add(network_options().description())
      .add(optimisation_options().description())
      .add(validation_options().description())
      .add(val_features_.description())
      .add(loader_options(given_.loader, given_.h5_driver).description())
      .add(compute_options(compute_).description())
      .add(thread_options(threads_).description());
  // See Note [test fault injection]: these fill train::TestFaults, never TrainOptions.
  OptionGroup tests;
  tests.optional_count("test-rank", test_rank_, 0, kNoLimit, "tests: the rank a fault happens on");
  tests.optional_count("test-kill-at-step", faults_.kill_at_step, 0, kNoLimit,
                       "tests: that rank is SIGKILLed before this global step");
  tests.optional_count("test-kill-in-checkpoint", faults_.kill_in_checkpoint, 0, kNoLimit,
                       "tests: rank 0 is SIGKILLed half-way through the end-of-epoch last.pt of this epoch");
  tests.choice("test-signal", faults_.signal, "USR1", train::parse_test_signal, "tests: the signal of --test-signal-*");
  tests.optional_count("test-signal-at-step", faults_.signal_at_step, 0, kNoLimit,
                       "tests: that rank raises --test-signal before this global step");
  tests.flag("test-signal-in-setup", faults_.signal_in_setup,
             "tests: ... once it has read the first block of its shard");
  tests.optional_count("test-signal-in-validation", faults_.signal_in_validation, 0, kNoLimit,
                       "tests: ... as the validation of this epoch begins");
  tests.optional_count("test-signal-in-checkpoint", faults_.signal_in_checkpoint, 0, kNoLimit,
                       "tests: rank 0 raises it while writing the end-of-epoch last.pt of this epoch");
  hidden_.add(tests.description());
}

train::TestFaults TrainCommandLine::faults(int world) const {
  train::TestFaults f = faults_;
  if (test_rank_) {
    if (*test_rank_ >= world)
      throw UsageError("--test-rank must be in 0.." + std::to_string(world - 1) + ", got " +
                       std::to_string(*test_rank_));
    f.rank = static_cast<int>(*test_rank_);
  }
  return f;
}

train::TrainOptions TrainCommandLine::resolve(const po::variables_map& vm, int world) const {
  train::TrainOptions o = given_;
  if (o.data.empty()) throw UsageError("--data FILE is required");
  if (global_batch_ > 0) {
    if (global_batch_ % world != 0)
      throw UsageError("--global-batch " + std::to_string(global_batch_) + " does not divide by " +
                       std::to_string(world) + " ranks");
    o.loader.batch_size = global_batch_ / world;
  }
  if (o.num_downs != 0 && o.num_downs < 5)
    throw UsageError("--num-downs must be 0 (from the crop size) or in 5..14, got " + std::to_string(o.num_downs));
  if (o.device_update.value_or(false) && !compat::kFusedAdamWithSkip)
    throw UsageError(std::string("--device-update on needs LibTorch 2.4 or newer (ATen's fused Adam with a skip "
                                 "flag); this program's is ") +
                     TORCH_VERSION);
  const std::vector<std::string> set = options_set(vm, options_);
  const gan::ModelEntry& model = apply_model_options(model_, set, o);
  if (lambda_aux_) {
    if (o.aux_classifier.empty())
      throw UsageError("--lambda-aux weighs the --aux-classifier term; give --aux-classifier FILE too");
    o.lambda_aux = *lambda_aux_;
  }
  o.bucket_bytes = static_cast<std::int64_t>(bucket_mb_ * (1 << 20));
  if (o.es_metric == train::EsMetric::accuracy && o.aux_classifier.empty())
    throw UsageError("--es-metric accuracy stops on the recognition accuracy of the --aux-classifier; give one");
  if (const auto features = val_features_.run(vm)) {
    o.val_features = features->network;
    o.kid_subsets = features->kid_subsets;
    o.kid_subset_size = features->kid_subset_size;
  }
  if (val_metrics_ == "auto") {
    o.val_fid = o.val_kid = !o.val_features.file.empty();
  } else {
    std::stringstream names(val_metrics_);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "fid")
        o.val_fid = true;
      else if (name == "kid")
        o.val_kid = true;
      else if (name != "psnr" && name != "ssim" && name != "l1")
        throw UsageError("--val-metrics: '" + name + "' is none of psnr, ssim, l1, fid, kid, or auto alone");
    }
  }
  train::check_feature_options(o);
  if (o.accept_changed_options && o.resume.empty())
    throw UsageError("--accept-changed-options goes with --resume (a new run has nothing to change)");
  if ((!o.init_generator.empty() || !o.init_discriminator.empty()) && !o.resume.empty() && o.resume != "auto")
    throw UsageError("--init-generator/--init-discriminator start a run from given weights and --resume " + o.resume +
                     " continues one; give one of them (with --resume auto they apply when there is nothing to "
                     "continue)");
  if (o.overwrite && !o.resume.empty())
    throw UsageError("--overwrite starts a new run in --run-dir and --resume continues one; give one of them");
  if (o.resume == "auto" && o.run_dir.empty())
    throw UsageError("--resume auto continues the run in --run-dir DIR; give the same --run-dir as before");
  if (o.run_dir.empty()) o.run_dir = default_run_dir(o.data);
  // What "auto" chose, so that config.cfg says what the run trained with and a resume compares
  // values, not spellings (See Note [options a resume may change]).
  o.effective_config = with_values(effective_options(vm, options_), resolved_model_options(model_, model));
  o.option_roles = option_roles(options_);
  return o;
}

}  // namespace pix2pix::cli
