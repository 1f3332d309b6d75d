// What every generator shares: the architecture by --netG name, the image sides it takes, the
// factory, and the mode it runs in when used (val_mode.hpp).
#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/resnet_generator.hpp"
#include "pix2pix/nets/val_mode.hpp"

namespace pix2pix::nets {
namespace {
const Choices<ValMode> kValModeChoices = {{"eval", ValMode::eval}, {"train", ValMode::train}};
}  // namespace

ValMode parse_val_mode(const std::string& text) {
  return parse_choice(text, "--val-mode", kValModeChoices);
}
std::string to_string(ValMode mode) {
  return choice_name(mode, kValModeChoices);
}

std::int64_t side_multiple(const GeneratorOptions& g) {
  return g.arch == GeneratorArch::resnet ? 4 : std::int64_t{1} << g.num_downs;
}

void check_generator_input(const GeneratorOptions& g, std::int64_t height, std::int64_t width,
                           const std::string& what) {
  const std::int64_t multiple = side_multiple(g);
  const std::string size = std::to_string(height) + "x" + std::to_string(width);
  if (height % multiple != 0 || width % multiple != 0)
    throw Error(what + " are " + size + ", not a multiple of " + std::to_string(multiple) + " that the " +
                net_g_name(g) + " generator needs");
  if (g.arch == GeneratorArch::resnet && std::min(height, width) < 8)
    throw Error(what + " are " + size + "; the " + net_g_name(g) + " generator needs sides of at least 8");
}

std::string net_g_name(const GeneratorOptions& g) {
  if (g.arch == GeneratorArch::resnet) return "resnet_" + std::to_string(g.n_blocks) + "blocks";
  return "unet_" + std::to_string(std::int64_t{1} << g.num_downs);
}

Generator make_generator(const GeneratorOptions& options) {
  // A shared_ptr of the base class exactly: ModuleHolder's forwarding constructor takes any other.
  if (options.arch == GeneratorArch::resnet)
    return Generator(std::shared_ptr<GeneratorImpl>(std::make_shared<ResnetGeneratorImpl>(options)));
  return Generator(std::shared_ptr<GeneratorImpl>(std::make_shared<UnetGeneratorImpl>(options)));
}

}  // namespace pix2pix::nets
