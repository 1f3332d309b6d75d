#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/choices.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include "pix2pix/cli/compute_options.hpp"
#include "pix2pix/cli/feature_options.hpp"
#include "pix2pix/cli/loader_options.hpp"
#include "pix2pix/cli/model_options.hpp"
#include "pix2pix/cli/rank_agreement.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/dist/cuda_device.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/dist/recording_communicator.hpp"
#include "pix2pix/metrics/run_claim.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/metrics/time_to_quality.hpp"
#include "pix2pix/train/trainer.hpp"

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

// "rank 0  host node1  local rank 0  device cpu  threads 1" for every rank, and for a GPU rank the GPU it
// holds as that rank's CUDA runtime names it ("device cuda:0 NVIDIA H100 80GB HBM3 (79.1 GiB,
// sm_90)"). A collective: every rank calls it. Local ranks follow the host order of
// MPI_Comm_split_type (keyed by world rank), so they can be derived from the host list.
std::vector<std::string> rank_table(const dist::MpiSession& mpi, const torch::Device& device, int threads) {
  const std::string mine =
      (device.is_cuda() ? device.str() + " " + dist::cuda_device_description(device.index()) : device.str()) +
      "  threads " + std::to_string(threads);
  const std::vector<std::string> devices = mpi.allgather(mine);
  std::vector<std::string> lines;
  std::map<std::string, int> seen;
  for (int r = 0; r < mpi.world(); ++r) {
    const std::string& host = mpi.hosts()[static_cast<size_t>(r)];
    const int local = seen[host]++;
    lines.push_back("rank " + std::to_string(r) + "  host " + host + "  local rank " + std::to_string(local) +
                    "  device " + devices[static_cast<size_t>(r)]);
  }
  return lines;
}

// Rank 0 locks --run-dir for the job (See Note [one job per run directory]) before anything is
// written there; a new run (no --resume) then takes it only when it is empty or --overwrite says
// so. The folder is shared: rank 0 looks, every rank learns its verdict.
void take_run_directory(const po::variables_map& vm, TrainJob& job, int rank) {
  std::string verdict;  // "": fine; else '1' or '2' (the exit status it asks for) and the message
  if (rank == 0) {
    // What the run reads; --resume's checkpoint is not among them: a run continues there.
    std::vector<std::string> inputs{job.options.data};
    for (const char* option : {"config", "aux-classifier", "init-generator", "init-discriminator", "val-features"})
      if (vm.count(option)) inputs.push_back(vm[option].as<std::string>());
    try {
      job.run_lock = std::make_unique<metrics::RunLock>(job.options.run_dir);
      if (!job.options.resume.empty()) metrics::refuse_inputs_in_run_dir(job.options.run_dir, inputs);
      if (!job.options.resume.empty()) metrics::refuse_linked_folders(job.options.run_dir);
      const auto claim = job.options.resume.empty()
                             ? metrics::claim_for_new_run(job.options.run_dir, job.options.overwrite, inputs)
                             : metrics::RunDirectoryClaim{};
      if (!claim.removed.empty()) {
        std::string removed;
        for (const auto& entry : claim.removed) removed += " " + entry;
        std::printf("--overwrite: deleted the previous run in %s:%s\n", job.options.run_dir.c_str(), removed.c_str());
      }
    } catch (const UsageError& e) {
      verdict = std::string("2") + e.what();
    } catch (const Error& e) {
      verdict = std::string("1") + e.what();
    }
  }
  verdict = job.comm->broadcast_string(verdict, 0);
  if (verdict.empty()) return;
  if (verdict[0] == '2') throw UsageError(verdict.substr(1));
  throw Error(verdict.substr(1));
}

}  // namespace

po::options_description train_option_descriptions() {
  po::options_description run("Run");
  run.add_options()("data", po::value<std::string>()->value_name("FILE"), "pix2pix-h5 dataset (pix2pix prepare)")(
      "run-dir", po::value<std::string>()->value_name("DIR"), "run directory (default runs/<data name>-<time>)")(
      "resume", po::value<std::string>()->default_value(""),
      "auto (the newest undamaged checkpoint of --run-dir, if any) or a checkpoint")(
      "init-generator", po::value<std::string>()->value_name("FILE.pth"),
      "start G from a reference PyTorch state dict (latest_net_G.pth, or export --format pytorch) instead of "
      "random weights; names and shapes must be this run's")(
      "init-discriminator", po::value<std::string>()->value_name("FILE.pth"), "the same for D (latest_net_D.pth)")(
      "overwrite", po::bool_switch(),
      "start afresh in a --run-dir that holds a run, deleting its checkpoints, metrics and samples")(
      "accept-changed-options", po::bool_switch(),
      "--resume with options that change what is learned (--lr, --gan-mode, the data, ...), which is refused "
      "otherwise; changes are listed either way")("device", po::value<std::string>()->default_value("auto"),
                                                  "auto | cpu | cuda")("keep-last", po::value<long>()->default_value(0),
                                                                       "also keep the last K epoch checkpoints")(
      "global-batch", po::value<long>()->default_value(0), "global batch instead of --batch-size (divides by ranks)")(
      "check-replicas", po::value<long>()->default_value(0),
      "verify replicas are identical every K steps (0: at start)")(
      "collective-log", po::bool_switch(),
      "record every collective (begin/end) in <run-dir>/logs/rank-N.collectives.tsv")(
      "tensorboard", po::bool_switch(),
      "also write TensorBoard event files (each epoch's metrics, each validation's samples) to "
      "<run-dir>/tensorboard: tensorboard --logdir <run-dir>")(
      "progress", po::value<std::string>()->default_value("auto"),
      "auto | bar | lines | none: rank 0's progress (auto: a bar on a terminal; lines: one every 10 s, for logs)");
  po::options_description net("Networks");
  net.add_options()("ngf", po::value<long>()->default_value(64), "generator filters in the first layer")(
      "ndf", po::value<long>()->default_value(64), "discriminator filters in the first layer")(
      "n-layers-d", po::value<long>()->default_value(3), "PatchGAN depth (3: 70x70 receptive field)")(
      "model", po::value<std::string>()->default_value(gan::default_model().name), model_help().c_str())(
      "netG", po::value<std::string>()->default_value("auto"),
      ("generator: unet (depth from --num-downs) | unet_128 | unet_256 | resnet_6blocks | resnet_9blocks (the "
       "reference's names); auto: " +
       gan::per_model([](const gan::ModelEntry& m) {
         return m.net_g;
       })).c_str())("num-downs", po::value<long>()->default_value(0),
                    "U-Net depth (0: log2 of the crop size, at most 8)")(
      "norm", po::value<std::string>()->default_value("auto"),
      ("batch | instance | none; auto: " + gan::per_model([](const gan::ModelEntry& m) {
         return nets::to_string(m.norm);
       })).c_str())(
      "sync-bn", po::value<std::string>()->default_value("auto"),
      "on | off | auto: batch norm over the global batch of all ranks (on) or each rank's own (off); auto: on "
      "with batch norm and more than one rank, so that N ranks x B train the model 1 process x NB would")(
      "no-dropout", po::bool_switch(),
      ("no dropout in the generator (the reference's defaults: " +
       gan::per_model([](const gan::ModelEntry& m) { return std::string(m.dropout ? "dropout" : "none"); }) + ")")
          .c_str());
  po::options_description optim("Objective and optimisation");
  optim.add_options()("gan-mode", po::value<std::string>()->default_value("auto"),
                      ("vanilla (BCE) | lsgan (MSE); auto: " + gan::per_model([](const gan::ModelEntry& m) {
                         return gan::to_string(m.gan_mode);
                       })).c_str());
  add_model_parameters(optim);
  optim.add_options()(
      "aux-classifier", po::value<std::string>()->value_name("FILE.pt"),
      "a recognition network (pix2pix train-classifier) G(A) must stay recognisable to: G also minimises "
      "--lambda-aux x its cross-entropy on the train labels; validation reports its accuracy on G(A)")(
      "lambda-aux", po::value<double>()->value_name("W"), "weight of the --aux-classifier term (default 1)")(
      "lr", po::value<double>()->default_value(2e-4), "Adam learning rate at --base-batch")(
      "beta1", po::value<double>()->default_value(0.5), "Adam beta1")(
      "beta2", po::value<double>()->default_value(0.999), "Adam beta2")(
      "lr-policy", po::value<std::string>()->default_value("linear"), "constant | linear (decay after --epochs)")(
      "epochs", po::value<long>()->default_value(100), "epochs at the full learning rate")(
      "epochs-decay", po::value<long>()->default_value(100), "linear: epochs of decay to zero")(
      "max-epochs", po::value<long>()->default_value(200), "hard bound on epochs")(
      "lr-scaling", po::value<std::string>()->default_value("none"),
      "none | sqrt | linear in global batch / --base-batch")("base-batch", po::value<long>()->default_value(1),
                                                             "the batch --lr is meant for")(
      "warmup-epochs", po::value<long>()->default_value(0), "linear learning-rate warm-up")(
      "precision", po::value<std::string>()->default_value("fp32"), "fp32 | bf16 | fp16 (CUDA)")(
      "channels-last", po::value<std::string>()->default_value("auto"),
      "on | off | auto: convolution weights, gradients and Adam's moments in NHWC (auto: on for GPU ranks in bf16 "
      "and fp16, whose tensor-core convolutions work in NHWC)")("bucket-mb", po::value<double>()->default_value(25.0),
                                                                "gradient all-reduce bucket size (MiB)")(
      "overlap-grad-sync", po::value<std::string>()->default_value("auto"),
      "on | off | auto: start each bucket's all-reduce during backward (auto: on with GPUs, off on CPUs)")(
      "grad-dtype", po::value<std::string>()->default_value("fp32"),
      "fp32 | bf16: the dtype gradients are all-reduced in (bf16 halves the bytes, rounds each sum)");
  po::options_description val("Validation and early stopping");
  val.add_options()("val-every", po::value<long>()->default_value(1), "validate every N epochs")(
      "val-batch-size", po::value<long>()->default_value(64), "pairs per validation forward pass")(
      "val-mode", po::value<std::string>()->default_value("eval"), "eval | train (norm/dropout as in training)")(
      "es-metric", po::value<std::string>()->default_value("psnr"),
      "psnr | accuracy | fid | kid: what early stopping watches (accuracy: the --aux-classifier's recognition of "
      "G(A); fid, kid: of G(A) against the val B images, lower is better, with --val-features)")(
      "es-window", po::value<long>()->default_value(50), "moving-average window of the --es-metric")(
      "es-patience", po::value<long>()->default_value(50), "evaluations without improvement before stopping")(
      "es-min-delta", po::value<double>()->default_value(0.0), "minimum improvement of the smoothed PSNR (dB)")(
      "quality-targets", po::value<std::string>()->default_value("")->value_name("V,..."),
      "values of the --es-metric's smoothed value (e.g. 16,17,18 dB of PSNR): summary.json says at which epoch, "
      "after how many seconds of training and of wall time, each was first reached (time to quality)")(
      "no-early-stop", po::bool_switch(), "train to --max-epochs (the best model is still kept)")(
      "sample-count", po::value<long>()->default_value(8), "val rows in each samples/epoch_NNNN.png")(
      "val-metrics", po::value<std::string>()->default_value("auto"),
      "what each validation reports, a list of psnr, ssim, l1 (always reported), fid, kid (need --val-features); "
      "auto: psnr,ssim,l1, and fid,kid with --val-features")(
      "ema-decay", po::value<double>()->default_value(0.0)->value_name("D"),
      "keep an exponential moving average of the generator's weights with this decay after every step (e.g. "
      "0.999; 0: none); validation, best_generator.pt, translate, evaluate and export use it (--weights raw: not)");
  po::options_description all;
  all.add(run)
      .add(net)
      .add(optim)
      .add(val)
      .add(feature_option_description("val-"))
      .add(loader_option_descriptions())
      .add(compute_option_description())
      .add(thread_option_description());
  return all;
}

po::options_description train_hidden_options() {
  // See Note [test fault injection]: these fill train::TestFaults, never TrainOptions.
  po::options_description hidden;
  hidden.add_options()("test-rank", po::value<int>()->default_value(1), "tests: the rank a fault happens on")(
      "test-kill-at-step", po::value<long>(), "tests: that rank is SIGKILLed before this global step")(
      "test-kill-in-checkpoint", po::value<long>(),
      "tests: rank 0 is SIGKILLed half-way through the end-of-epoch last.pt of this epoch")(
      "test-signal", po::value<std::string>()->default_value("USR1"), "tests: the signal of --test-signal-*")(
      "test-signal-at-step", po::value<long>(), "tests: that rank raises --test-signal before this global step")(
      "test-signal-in-setup", po::bool_switch(), "tests: ... once it has read the first block of its shard")(
      "test-signal-in-validation", po::value<long>(), "tests: ... as the validation of this epoch begins")(
      "test-signal-in-checkpoint", po::value<long>(),
      "tests: rank 0 raises it while writing the end-of-epoch last.pt of this epoch");
  return hidden;
}

train::TestFaults test_faults_from(const po::variables_map& vm, int world) {
  train::TestFaults f;
  f.rank = vm["test-rank"].defaulted() ? 1 : static_cast<int>(integer_option(vm, "test-rank", 0, world - 1));
  const auto epoch_or_step = [&](const char* option) -> std::optional<std::int64_t> {
    if (!vm.count(option)) return std::nullopt;
    return integer_option(vm, option, 0);
  };
  f.kill_at_step = epoch_or_step("test-kill-at-step");
  f.kill_in_checkpoint = epoch_or_step("test-kill-in-checkpoint");
  f.signal = train::parse_test_signal(vm["test-signal"].as<std::string>());
  f.signal_at_step = epoch_or_step("test-signal-at-step");
  f.signal_in_setup = vm["test-signal-in-setup"].as<bool>();
  f.signal_in_validation = epoch_or_step("test-signal-in-validation");
  f.signal_in_checkpoint = epoch_or_step("test-signal-in-checkpoint");
  return f;
}

train::TrainOptions train_options_from(const po::variables_map& vm, int world) {
  train::TrainOptions o;
  if (!vm.count("data")) throw UsageError("--data FILE is required");
  o.data = vm["data"].as<std::string>();
  o.h5_driver = h5_driver_from(vm);
  o.loader = loader_options_from(vm);
  const long global = integer_option(vm, "global-batch", 0);
  if (global > 0) {
    if (global % world != 0)
      throw UsageError("--global-batch " + std::to_string(global) + " does not divide by " + std::to_string(world) +
                       " ranks");
    o.loader.batch_size = global / world;
  }
  // Widths beyond these would need terabytes for the networks alone; depths beyond them leave no
  // image (the data-dependent limits are checked against the file later).
  o.ngf = integer_option(vm, "ngf", 1, 1024);
  o.ndf = integer_option(vm, "ndf", 1, 1024);
  o.n_layers_d = integer_option(vm, "n-layers-d", 1, 8);
  o.num_downs = integer_option(vm, "num-downs", 0, 14);
  if (o.num_downs != 0 && o.num_downs < 5)
    throw UsageError("--num-downs must be 0 (from the crop size) or in 5..14, got " + std::to_string(o.num_downs));
  const gan::ModelEntry& model = apply_model_options(vm, o);
  o.sync_bn = train::parse_sync_bn(vm["sync-bn"].as<std::string>());
  o.beta1 = real_option(vm, "beta1", Range::right_open(0, 1));
  o.beta2 = real_option(vm, "beta2", Range::right_open(0, 1));
  o.lr.lr = real_option(vm, "lr", Range::above(0));
  o.lr.policy = optim::parse_lr_policy(vm["lr-policy"].as<std::string>());
  o.lr.epochs = integer_option(vm, "epochs", 0);
  o.lr.epochs_decay = integer_option(vm, "epochs-decay", 0);
  o.lr.scaling = optim::parse_lr_scaling(vm["lr-scaling"].as<std::string>());
  o.lr.base_batch = integer_option(vm, "base-batch", 1);
  o.lr.warmup_epochs = integer_option(vm, "warmup-epochs", 0);
  o.max_epochs = integer_option(vm, "max-epochs", 1);
  o.precision = optim::parse_precision(vm["precision"].as<std::string>());
  o.channels_last = parse_on_off_auto(vm["channels-last"].as<std::string>(), "--channels-last");
  o.bucket_bytes = static_cast<std::int64_t>(real_option(vm, "bucket-mb", Range::left_open(0, 1 << 16)) * (1 << 20));
  o.overlap_grad_sync = parse_on_off_auto(vm["overlap-grad-sync"].as<std::string>(), "--overlap-grad-sync");
  o.grad_wire_dtype = parse_choice<torch::ScalarType>(vm["grad-dtype"].as<std::string>(), "--grad-dtype",
                                                      {{"fp32", torch::kFloat32}, {"bf16", torch::kBFloat16}});
  o.val_every = integer_option(vm, "val-every", 1);
  o.val_batch_size = integer_option(vm, "val-batch-size", 1);
  o.val_mode = nets::parse_val_mode(vm["val-mode"].as<std::string>());
  o.early_stopping.window = integer_option(vm, "es-window", 1);
  o.early_stopping.patience = integer_option(vm, "es-patience", 1);
  o.early_stopping.min_delta = real_option(vm, "es-min-delta", Range::at_least(0));
  o.early_stopping.enabled = !vm["no-early-stop"].as<bool>();
  o.es_metric = train::parse_es_metric(vm["es-metric"].as<std::string>());
  if (o.es_metric == train::EsMetric::accuracy && o.aux_classifier.empty())
    throw UsageError("--es-metric accuracy stops on the recognition accuracy of the --aux-classifier; give one");
  o.quality_targets = metrics::parse_quality_targets(vm["quality-targets"].as<std::string>());
  o.sample_count = integer_option(vm, "sample-count", 0, 1024);
  o.ema_decay = real_option(vm, "ema-decay", Range::right_open(0, 1));
  if (const auto features = feature_run_from(vm, "val-")) {
    o.val_features = features->network;
    o.kid_subsets = features->kid_subsets;
    o.kid_subset_size = features->kid_subset_size;
  }
  const std::string val_metrics = vm["val-metrics"].as<std::string>();
  if (val_metrics == "auto") {
    o.val_fid = o.val_kid = !o.val_features.file.empty();
  } else {
    std::stringstream names(val_metrics);
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
  o.keep_last = integer_option(vm, "keep-last", 0);
  o.tensorboard = vm["tensorboard"].as<bool>();
  o.resume = vm["resume"].as<std::string>();
  o.overwrite = vm["overwrite"].as<bool>();
  o.accept_changed_options = vm["accept-changed-options"].as<bool>();
  if (o.accept_changed_options && o.resume.empty())
    throw UsageError("--accept-changed-options goes with --resume (a new run has nothing to change)");
  if (vm.count("init-generator")) o.init_generator = vm["init-generator"].as<std::string>();
  if (vm.count("init-discriminator")) o.init_discriminator = vm["init-discriminator"].as<std::string>();
  if ((!o.init_generator.empty() || !o.init_discriminator.empty()) && !o.resume.empty() && o.resume != "auto")
    throw UsageError("--init-generator/--init-discriminator start a run from given weights and --resume " + o.resume +
                     " continues one; give one of them (with --resume auto they apply when there is nothing to "
                     "continue)");
  if (o.overwrite && !o.resume.empty())
    throw UsageError("--overwrite starts a new run in --run-dir and --resume continues one; give one of them");
  o.run_dir = vm.count("run-dir") ? vm["run-dir"].as<std::string>() : default_run_dir(o.data);
  if (o.resume == "auto" && !vm.count("run-dir"))
    throw UsageError("--resume auto continues the run in --run-dir DIR; give the same --run-dir as before");
  o.check_replicas_every = integer_option(vm, "check-replicas", 0);
  o.progress = parse_progress_style(vm["progress"].as<std::string>());
  real_option(vm, "collective-timeout", Range::above(0));  // checked here, used by make_train_job
  convolution_settings_from(vm);                           // the same
  // What "auto" chose, so that config.cfg says what the run trained with and a resume compares
  // values, not spellings (See Note [options a resume may change]).
  o.effective_config =
      with_values(effective_options(vm, train_option_descriptions()), resolved_model_options(vm, model));
  return o;
}

void end_job_on_error(const char* command, const std::exception& error) {
  const bool usage = dynamic_cast<const UsageError*>(&error) != nullptr;
  dist::MpiSession::abort_job(
      "pix2pix " + std::string(command) + ": " + (usage ? "" : "error: ") + rank_prefix() + error_message(error),
      usage ? 2 : 1);
}

int run_training_job(const char* command, const dist::MpiSession& mpi, const std::string& after_interrupt,
                     const std::function<int()>& job) {
  try {
    return job();
  } catch (const Interrupted& e) {
    const std::string message = "pix2pix " + std::string(command) + ": " + rank_prefix() + e.what() + after_interrupt;
    if (mpi.world() > 1) dist::MpiSession::abort_job(message, train::kExitInterrupted);
    std::fprintf(stderr, "%s\n", message.c_str());
    return train::kExitInterrupted;
  } catch (const std::exception& e) {
    // An error that only some ranks see must not leave the others waiting in a collective.
    if (mpi.world() > 1) end_job_on_error(command, e);
    throw;
  }
}

TrainJob make_train_job(const po::variables_map& vm, const dist::MpiSession& mpi, const std::string& run_dir) {
  TrainJob job;
  job.options = train_options_from(vm, mpi.world());
  if (const train::TestFaults faults = test_faults_from(vm, mpi.world()); faults.any())
    job.faults = std::make_shared<train::TestFaults>(faults);
  // Before the first collective: See Note [ranks that agree]. The run directory is rank 0's anyway
  // (its default name holds rank 0's clock); progress is drawn by rank 0 alone.
  AgreedFields agreed =
      options_to_agree(vm, train_option_descriptions(),
                       {"run-dir", "config", "device", "progress", "collective-timeout", "collective-log", "threads"});
  add_file(agreed, "--data", job.options.data);
  for (const char* option : {"aux-classifier", "init-generator", "init-discriminator", "val-features"})
    if (vm.count(option)) add_file(agreed, std::string("--") + option, vm[option].as<std::string>());
  if (!job.options.resume.empty() && job.options.resume != "auto") add_file(agreed, "--resume", job.options.resume);
  require_agreement(mpi, agreed);
  const ThreadBudget threads = settle_threads(vm, &mpi);
  job.options.threads = threads.describe();
  if (!run_dir.empty()) job.options.run_dir = run_dir;
  job.device = dist::choose_device(vm["device"].as<std::string>(), mpi.local_rank(), mpi.local_size());
  job.kernels = dist::apply_convolution_settings(convolution_settings_from(vm), job.device);
  job.comm = communicator_from(vm, job.device, mpi);
  job.options.ranks_per_node = mpi.local_size();
  // One run directory for the job: rank 0's (its default name holds rank 0's clock).
  job.options.run_dir = job.comm->broadcast_string(job.options.run_dir, 0);
  take_run_directory(vm, job, mpi.rank());
  if (vm["collective-log"].as<bool>()) {
    const auto log = std::filesystem::path(job.options.run_dir) / "logs" /
                     ("rank-" + std::to_string(mpi.rank()) + ".collectives.tsv");
    job.comm = std::make_unique<dist::RecordingCommunicator>(std::move(job.comm), log.string());
  }
  job.options.rank_table = rank_table(mpi, job.device, threads.intra_op);
  // The start-up table says when ranks share GPUs (prepare_shared_gpus is idempotent).
  if (job.device.is_cuda())
    if (const std::string sharing = dist::prepare_shared_gpus(mpi.rank(), mpi.local_size()); !sharing.empty())
      job.options.rank_table.push_back(sharing);
  if (!job.kernels.empty()) job.options.rank_table.push_back(job.kernels);
  return job;
}

}  // namespace pix2pix::cli
