#include "pix2pix/infer/translator.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/image_ops.hpp"
#include "pix2pix/infer/sample_images.hpp"
#include "pix2pix/metrics/image_file.hpp"
#include "pix2pix/metrics/image_metrics.hpp"

namespace pix2pix::infer {
namespace {

namespace fs = std::filesystem;

// One decoded input on its way through the generator (with --tile: at its own size, whole).
struct Pending {
  const TranslationInput* input;
  FitPlan plan;
  cv::Mat at_model_size;
};

// The chunk's A images (B with `b_side`), decoded (an empty Mat for one that cannot be), in input
// order.
std::vector<cv::Mat> read_chunk(const std::vector<TranslationInput>& chunk, const data::PairedDataset* dataset,
                                const std::string& split, bool aligned, bool b_side,
                                const data::DomainSamples& samples) {
  std::vector<cv::Mat> images;
  if (dataset != nullptr) {
    std::vector<std::int64_t> indices;
    for (const auto& input : chunk) indices.push_back(input.index);
    const data::Domain domain = b_side ? data::Domain::B : data::Domain::A;
    const data::SampleType type = dataset->split(split).samples(domain).type;
    // Stored values [n, H, W, C]: uint8, int32 (uint16), float32, each image as a Mat of its depth.
    const auto stored = dataset->read_images(split, domain, indices).contiguous();
    for (std::int64_t i = 0; i < stored.size(0); ++i)
      images.push_back(values_to_mat(stored[i].permute({2, 0, 1}), type));
    return images;
  }
  for (const auto& input : chunk) {
    std::string why;
    // An 8-bit generator takes any image (deeper ones scaled to 8 bits), and .npy arrays as they are:
    // a uint8 one fits, another type is refused below by its type, not as "cannot be decoded".
    const bool npy = fs::path(input.path).extension() == ".npy";
    cv::Mat image =
        samples.is_byte_default() && !npy ? data::decode_image(input.path) : data::decode_samples(input.path, &why);
    if (image.empty() && !why.empty())
      std::fprintf(stderr, "pix2pix translate: %s: %s\n", input.label.c_str(), why.c_str());
    if (!image.empty() && aligned)
      image = image(cv::Rect(b_side ? image.cols / 2 : 0, 0, image.cols / 2, image.rows)).clone();
    images.push_back(image);
  }
  return images;
}

// G on images of one size: the output domain's values, float [n, C_out, H, W] on the CPU.
torch::Tensor generate(nets::Generator& generator, const std::vector<const Pending*>& group,
                       const TranslateOptions& options) {
  std::vector<torch::Tensor> images;
  for (const auto* p : group) images.push_back(mat_to_tensor(p->at_model_size));
  const auto a = data::to_model_input(torch::stack(images).to(options.device), options.input_samples.range);
  torch::NoGradGuard no_grad;
  torch::Tensor fake;
  {
    optim::AutocastGuard autocast(options.device, options.precision);
    fake = generator->forward(a);
  }
  return data::to_samples(fake, options.output_samples).cpu();
}

// `image`: the output at the input's own size.
void write_output(const cv::Mat& image, const Pending& p, const std::string& output_dir) {
  const fs::path path = fs::path(output_dir) / p.input->output;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw Error("cannot create " + path.parent_path().string() + ": " + ec.message());
  write_values_atomically(path.string(), image);
}

}  // namespace

void refuse_existing_outputs(const std::vector<TranslationInput>& inputs, const std::string& output_dir) {
  std::int64_t existing = 0;
  std::string first;
  std::error_code ec;
  for (const auto& input : inputs) {
    const fs::path path = fs::path(output_dir) / input.output;
    if (!fs::exists(path, ec)) continue;
    if (existing++ == 0) first = path.string();
  }
  if (existing > 0)
    throw Error(first + " exists" + (existing > 1 ? " (and " + std::to_string(existing - 1) + " more outputs)" : "") +
                "; use --overwrite to replace them");
}

TranslationCounts translate_inputs(nets::Generator& generator, const std::vector<TranslationInput>& inputs,
                                   const data::PairedDataset* dataset, const std::string& split,
                                   const TranslateOptions& options, dist::Communicator& comm) {
  if (options.batch_size < 1) throw Error("--batch-size must be at least 1");
  const std::int64_t in_channels = generator->options().in_channels;
  const std::int64_t n = static_cast<std::int64_t>(inputs.size());
  // With --tile a chunk is one image (--batch-size counts its tiles): never several large images
  // decoded at once.
  const std::int64_t chunk_size = options.tiles.tile > 0 ? 1 : options.batch_size;
  const std::int64_t chunks = (n + chunk_size - 1) / chunk_size;
  const int rank = comm.rank(), world = comm.world();
  generator->train(options.mode == nets::ValMode::train);
  std::optional<Progress> progress;
  if (rank == 0) progress.emplace("translate", n, stderr, options.progress);
  torch::Tensor counts = torch::zeros({3}, torch::kInt64);  // written, skipped, unwritten
  std::string first_write_error;
  const auto skip_input = [&](const TranslationInput& input, const std::string& why) {
    std::fprintf(stderr, "pix2pix translate: warning: skipping %s: %s\n", input.label.c_str(), why.c_str());
    counts[1] += 1;
  };
  for (std::int64_t k = rank; k < chunks; k += world) {
    throw_if_interrupted("translating");
    const std::int64_t first = k * chunk_size, count = std::min(chunk_size, n - first);
    const std::vector<TranslationInput> chunk(inputs.begin() + first, inputs.begin() + first + count);
    const std::vector<cv::Mat> images =
        read_chunk(chunk, dataset, split, options.aligned, options.b_side, options.input_samples);
    std::vector<Pending> pending;
    for (std::int64_t i = 0; i < count; ++i) {
      const TranslationInput& input = inputs[static_cast<size_t>(first + i)];
      cv::Mat image = images[static_cast<size_t>(i)];
      const auto skip = [&](const std::string& why) { skip_input(input, why); };
      if (image.empty()) {
        skip("cannot be decoded as an image (damaged, not an image, or too large for the memory left)");
        continue;
      }
      try {
        // A generator of deeper values takes images of its own type: another would be misread.
        if (const auto type = data::sample_type_of(image.depth()); type != options.input_samples.type)
          throw Error(input.label + ": " + (type ? data::to_string(*type) : std::string("another type of")) +
                      " values, but the generator was trained on " + data::to_string(options.input_samples));
        if (options.channels != 0) image = data::to_channels(image, options.channels);
        if (image.channels() != in_channels)
          throw Error(input.label + ": " + std::to_string(image.channels()) + " channel(s), the generator takes " +
                      std::to_string(in_channels) + (options.channels == 0 ? " (--channels converts)" : ""));
        if (options.tiles.tile > 0) {
          pending.push_back({&input, FitPlan{image.rows, image.cols, image.rows, image.cols, false}, image});
          continue;
        }
        const FitPlan plan = plan_fit(image.rows, image.cols, options.resize, options.geometry);
        pending.push_back({&input, plan, to_model_size(image, plan)});
      } catch (const cv::Exception& e) {
        skip("OpenCV cannot convert its " + std::to_string(image.cols) + "x" + std::to_string(image.rows) +
             " pixels for the model: " + e.err);
      } catch (const std::bad_alloc&) {
        skip("its " + std::to_string(image.cols) + "x" + std::to_string(image.rows) +
             " pixels do not fit in the memory left");
      }
    }
    // Train mode draws dropout: the same masks for chunk k on any rank and any world size.
    if (options.mode == nets::ValMode::train)
      torch::manual_seed(options.seed * 1000003 + static_cast<std::uint64_t>(k));
    const auto write = [&](const cv::Mat& image, const Pending& p) {
      try {
        write_output(image, p, options.output_dir);
        counts[0] += 1;
      } catch (const Error& e) {
        if (first_write_error.empty()) first_write_error = e.what();
        counts[2] += 1;
      }
    };
    // An image whose translation does not fit in memory is named and skipped (counted), never a
    // raw allocator trace that ends the whole run; other failures propagate.
    const auto translated = [&](const std::vector<const Pending*>& images, const auto& translate) {
      try {
        translate();
        return true;
      } catch (const c10::Error& e) {
        if (!is_allocation_failure(e)) throw;
        for (const Pending* p : images) skip_input(*p->input, "its translation does not fit in the memory left");
      } catch (const std::bad_alloc&) {
        for (const Pending* p : images) skip_input(*p->input, "its translation does not fit in the memory left");
      } catch (const cv::Exception& e) {
        for (const Pending* p : images) skip_input(*p->input, "OpenCV cannot process it: " + e.err);
      } catch (const MemoryShortage& e) {
        for (const Pending* p : images) skip_input(*p->input, e.what());
      }
      return false;
    };
    // --tile: image by image, each in batches of tiles.
    if (options.tiles.tile > 0) {
      for (const auto& p : pending) {
        cv::Mat out;
        if (translated({&p}, [&] {
              out = translate_tiled(generator, p.at_model_size, options.tiles, options.device, options.precision,
                                    options.input_samples.range, options.output_samples);
            }))
          write(out, p);
      }
      pending.clear();
    }
    // Images of one size go through together, sizes in order of first appearance.
    std::vector<std::pair<std::int64_t, std::vector<const Pending*>>> groups;
    for (const auto& p : pending) {
      const std::int64_t size_key = static_cast<std::int64_t>(p.plan.model_height) << 32 | p.plan.model_width;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == size_key; });
      if (it == groups.end()) {
        groups.emplace_back(size_key, std::vector<const Pending*>{});
        it = groups.end() - 1;
      }
      it->second.push_back(&p);
    }
    for (const auto& [size_key, group] : groups) {
      torch::Tensor values;
      if (!translated(group, [&] { values = generate(generator, group, options); })) continue;
      for (size_t i = 0; i < group.size(); ++i) {
        const cv::Mat at_model = values_to_mat(values[static_cast<std::int64_t>(i)], options.output_samples.type);
        write(to_image_size(at_model, group[i]->plan), *group[i]);
      }
    }
    if (progress) progress->advance(std::min(count * world, n - progress->done()));
  }
  if (progress) progress->finish();
  comm.allreduce_sum(counts);
  TranslationCounts result{counts[0].item<std::int64_t>(), counts[1].item<std::int64_t>(),
                           counts[2].item<std::int64_t>(), ""};
  if (result.unwritten > 0) {
    // The lowest rank that failed says its first error, so every world size reports the same.
    const int failing = world - static_cast<int>(comm.allreduce_max(first_write_error.empty() ? 0.0 : world - rank));
    result.first_write_error = comm.broadcast_string(first_write_error, failing);
  }
  return result;
}

}  // namespace pix2pix::infer
