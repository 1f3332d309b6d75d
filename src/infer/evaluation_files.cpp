#include "pix2pix/infer/evaluation_files.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/image_file.hpp"
#include "pix2pix/metrics/run_directory.hpp"

namespace pix2pix::infer {
namespace {

namespace fs = std::filesystem;

void write_text_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, text, /*durable=*/true);
}

std::string statistics_json(const Statistics& s) {
  using metrics::json_number;
  return "{\"mean\": " + json_number(s.mean) + ", \"std\": " + json_number(s.std) +
         ", \"median\": " + json_number(s.median) + ", \"min\": " + json_number(s.min) +
         ", \"max\": " + json_number(s.max) + "}";
}

template <size_t N>
void claim_output_dir(const std::string& option, const std::string& dir, const char* const (&names)[N], bool overwrite,
                      const InputFiles& read) {
  for (const char* name : names) read.refuse(option + " " + dir + ": the output", (fs::path(dir) / name).string());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error(option + " " + dir + ": cannot create the folder" + (ec ? ": " + ec.message() : std::string()));
  if (overwrite) return;
  for (const char* name : names) {
    const fs::path path = fs::path(dir) / name;
    if (fs::exists(path, ec))
      throw Error(option + " " + dir + ": " + path.string() + " exists; use --overwrite to replace it");
  }
}

std::string feature_json(const FeatureScores& f) {
  using metrics::json_number;
  using metrics::json_string;
  const auto& n = f.network;
  return ",\n  \"fid\": " + json_number(f.fid) + ",\n  \"kid\": {\"mean\": " + json_number(f.kid.mean) +
         ", \"std\": " + json_number(f.kid.std) + ", \"subset_size\": " + std::to_string(f.kid.subset_size) +
         ", \"subsets\": " + std::to_string(f.kid.subsets) + ", \"seed\": " + std::to_string(f.kid_seed) +
         ", \"kernel\": \"(x.y / D + 1)^3, unbiased MMD^2\"}" + ",\n  \"features\": {\"file\": " + json_string(n.file) +
         ", \"sha256\": " + json_string(n.sha256) + ", \"kind\": " + json_string(n.kind) +
         ", \"input\": " + json_string(metrics::to_string(n.input)) + ", \"channels\": " + std::to_string(n.channels) +
         ", \"size\": " + std::to_string(n.size) + ", \"return_features\": " + (n.return_features ? "true" : "false") +
         ", \"dimensions\": " + std::to_string(f.dimensions) + "}";
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void claim_evaluation_dir(const std::string& dir, bool overwrite, const InputFiles& read) {
  claim_output_dir("--out", dir, kEvaluationFiles, overwrite, read);
}

void claim_feature_dump_dir(const std::string& dir, bool overwrite, const InputFiles& read) {
  claim_output_dir("--dump-features", dir, kFeatureDumpFiles, overwrite, read);
}

void write_evaluation_files(const std::string& dir, const Evaluation& evaluation, const std::vector<std::string>& names,
                            const EvaluationFacts& facts) {
  using metrics::json_number;
  using metrics::json_string;
  const auto scores = evaluation.scores.contiguous();
  const std::int64_t n = scores.size(0);
  if (static_cast<std::int64_t>(names.size()) != n) throw Error("evaluation: names and scores differ in count");
  const double* row = scores.data_ptr<double>();

  const bool recognition = !facts.classifier.empty();
  std::ostringstream csv;
  csv << "index,name,psnr,ssim,l1" << (recognition ? ",recognised,real_recognised" : "") << "\n";
  for (std::int64_t i = 0; i < n; ++i, row += kScoreColumns) {
    csv << i << "," << csv_field(names[static_cast<size_t>(i)]) << "," << json_number(row[kPsnr]) << ","
        << json_number(row[kSsim]) << "," << json_number(row[kL1]);
    if (recognition) csv << "," << row[kRecognised] << "," << row[kRealRecognised];
    csv << "\n";
  }
  write_text_atomically((fs::path(dir) / "evaluation.csv").string(), csv.str());

  std::ostringstream json;
  json << "{\n  \"checkpoint\": " << json_string(facts.checkpoint) << ",\n  \"checkpoint_epoch\": " << facts.epoch
       << ",\n  \"weights\": " << json_string(facts.weights)
       << ",\n  \"model_shape\": " << json_string(facts.model_shape)
       << ",\n  \"direction\": " << json_string(facts.direction) << ",\n  \"dataset\": " << json_string(facts.dataset)
       << ",\n  \"split\": " << json_string(evaluation.split) << ",\n  \"images\": " << n
       << ",\n  \"mode\": " << json_string(facts.mode) << ",\n  \"precision\": " << json_string(facts.precision)
       << ",\n  \"batch_size\": " << facts.batch_size
       << ",\n  \"psnr\": " << statistics_json(summarise(scores.select(1, kPsnr)))
       << ",\n  \"ssim\": " << statistics_json(summarise(scores.select(1, kSsim)))
       << ",\n  \"l1\": " << statistics_json(summarise(scores.select(1, kL1)))
       << ",\n  \"baseline_psnr_mean_image\": " << json_number(scores.select(1, kBaselinePsnr).mean().item<double>());
  if (recognition)
    json << ",\n  \"recognition\": {\"classifier\": " << json_string(facts.classifier)
         << ", \"accuracy\": " << json_number(scores.select(1, kRecognised).mean().item<double>())
         << ", \"real_accuracy\": " << json_number(scores.select(1, kRealRecognised).mean().item<double>()) << "}";
  if (facts.features) json << feature_json(*facts.features);
  json << "\n}\n";
  write_text_atomically((fs::path(dir) / "evaluation.json").string(), json.str());

  const fs::path samples = fs::path(dir) / "samples.png";
  if (evaluation.sample_grid.defined()) {
    metrics::write_image_atomically(samples.string(), evaluation.sample_grid);
  } else {
    std::error_code ec;
    fs::remove(samples, ec);  // --samples 0 with --overwrite: no grid of another evaluation left behind
  }
}

}  // namespace pix2pix::infer
