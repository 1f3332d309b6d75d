#include "pix2pix/train/model_factory.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/train/cyclegan_model.hpp"
#include "pix2pix/train/onesided_model.hpp"
#include "pix2pix/train/pix2pix_model.hpp"

namespace pix2pix::train {
namespace {
const Choices<ModelKind> kModelChoices = {
    {"pix2pix", ModelKind::pix2pix}, {"cyclegan", ModelKind::cyclegan}, {"onesided", ModelKind::onesided}};
}  // namespace

ModelKind parse_model_kind(const std::string& text) {
  return parse_choice(text, "--model", kModelChoices);
}
std::string to_string(ModelKind kind) {
  return choice_name(kind, kModelChoices);
}

bool learns_from_pairs(ModelKind kind) {
  return kind == ModelKind::pix2pix;
}

ContentScore content_score(ModelKind kind) {
  switch (kind) {
    case ModelKind::cyclegan:
      return ContentScore::cycle;
    case ModelKind::onesided:
      return ContentScore::deviation;
    default:
      return ContentScore::none;
  }
}

std::string to_string(ContentScore score) {
  switch (score) {
    case ContentScore::cycle:
      return "cycle";
    case ContentScore::deviation:
      return "deviation";
    default:
      return "";
  }
}

std::unique_ptr<GanModel> make_gan_model(const TrainOptions& options, const ModelInputs& inputs,
                                         const torch::Device& device, dist::Communicator& comm,
                                         RecognitionLoss* recognition) {
  if (options.model != ModelKind::pix2pix) {
    // The command line refuses these; library callers get the same answer.
    if (recognition) throw UsageError("--aux-classifier is Pix2Pix's (--model pix2pix)");
    if (!options.init_generator.empty() || !options.init_discriminator.empty())
      throw UsageError("--init-generator and --init-discriminator are Pix2Pix's (--model pix2pix)");
    if (options.model == ModelKind::onesided) return std::make_unique<OneSidedModel>(options, inputs, device, comm);
    return std::make_unique<CycleGanModel>(options, inputs, device, comm);
  }
  return std::make_unique<Pix2PixModel>(options, inputs, device, comm, recognition);
}

}  // namespace pix2pix::train
