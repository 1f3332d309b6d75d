// What `evaluate` leaves in its --out folder: evaluation.csv (a row per image), evaluation.json
// (statistics per metric, the mean-image baseline, and what was evaluated) and samples.png. Each
// is written whole (temporary name, renamed), and only rank 0 writes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pix2pix/common/input_file.hpp"
#include "pix2pix/infer/evaluation.hpp"
#include "pix2pix/metrics/feature_distance.hpp"
#include "pix2pix/metrics/feature_network.hpp"

namespace pix2pix::infer {

inline constexpr const char* kEvaluationFiles[] = {"evaluation.csv", "evaluation.json", "samples.png"};
// What --dump-features DIR holds: N x D float32 arrays, row i of image i.
inline constexpr const char* kFeatureDumpFiles[] = {"real.npy", "generated.npy"};

// FID and KID of one evaluation, and the network and feeding they were measured with.
struct FeatureScores {
  metrics::FeatureFacts network;
  std::int64_t dimensions = 0;
  double fid = 0;
  metrics::KernelDistance kid;
  std::uint64_t kid_seed = 0;
};

// What was evaluated, for evaluation.json. Nothing here may depend on the number of ranks: the
// files of N ranks are byte-identical to one process's.
struct EvaluationFacts {
  std::string checkpoint;   // the file read
  std::int64_t epoch = -1;  // of its weights (-1: not recorded)
  std::string model_shape;
  std::string dataset;
  std::string mode;       // eval | train
  std::string precision;  // fp32 | bf16 | fp16
  std::int64_t batch_size = 0;
  std::string classifier;                   // --aux-classifier ("": none; the recognition columns are left out)
  std::string direction = "AtoB";           // BtoA: G_B scored on B against A
  std::optional<FeatureScores> features{};  // --features ("fid", "kid" and "features" in the JSON)
  std::string weights = "raw";              // "ema": the run's moving average (--ema-decay)
};

// Creates `dir` when missing; refuses (UsageError naming both) when one of kEvaluationFiles
// there is a file the command reads (`read`), --overwrite or not, and (Error naming the first
// file) when one exists and `overwrite` is false. Call before evaluating.
void claim_evaluation_dir(const std::string& dir, bool overwrite, const InputFiles& read);
// The same for --dump-features DIR and kFeatureDumpFiles.
void claim_feature_dump_dir(const std::string& dir, bool overwrite, const InputFiles& read);

// `names`: one per image ("" where the dataset has none).
void write_evaluation_files(const std::string& dir, const Evaluation& evaluation, const std::vector<std::string>& names,
                            const EvaluationFacts& facts);

// The CSV field for `text`: quoted (quotes doubled) when it holds a comma, quote or line break.
std::string csv_field(const std::string& text);

}  // namespace pix2pix::infer
