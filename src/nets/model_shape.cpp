#include "pix2pix/nets/model_shape.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "pix2pix/common/error.hpp"

namespace pix2pix::nets {
namespace {

// Generous bounds: they only keep a damaged field from building an absurd network.
std::int64_t field(const std::map<std::string, std::string>& fields, const std::string& key, std::int64_t low,
                   std::int64_t high) {
  const auto it = fields.find(key);
  if (it == fields.end()) throw Error("model shape has no '" + key + "'");
  std::size_t used = 0;
  std::int64_t value = 0;
  try {
    value = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || used == 0 || value < low || value > high)
    throw Error("model shape: " + key + "=" + it->second + " is not an integer in [" + std::to_string(low) + ", " +
                std::to_string(high) + "]");
  return value;
}

}  // namespace

std::string describe_model_shape(const GeneratorOptions& g, const DiscriminatorOptions& d) {
  std::ostringstream s;
  // A U-Net's line is what it was before ResNet generators (checkpoints compare it on resume).
  s << "in=" << g.in_channels << " out=" << g.out_channels;
  if (g.arch == GeneratorArch::resnet)
    s << " net_g=resnet n_blocks=" << g.n_blocks;
  else
    s << " num_downs=" << g.num_downs;
  s << " ngf=" << g.ngf << " dropout=" << g.dropout << " ndf=" << d.ndf << " n_layers_d=" << d.n_layers
    << " norm=" << to_string(g.norm);
  return s.str();
}

std::string describe_unpaired_shape(const std::string& model, const GeneratorOptions& g_a,
                                    const DiscriminatorOptions& d_a) {
  return "model=" + model + " " + describe_model_shape(g_a, d_a);
}

ModelShape parse_model_shape(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("model shape: '" + word + "' is not key=value");
    if (!fields.emplace(word.substr(0, eq), word.substr(eq + 1)).second)
      throw Error("model shape: '" + word.substr(0, eq) + "' given twice");
  }
  static const char* const kKeys[] = {"model", "in",      "out", "net_g",      "num_downs", "n_blocks",
                                      "ngf",   "dropout", "ndf", "n_layers_d", "norm"};
  for (const auto& [key, value] : fields) {
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) throw Error("model shape: unknown field '" + key + "'");
  }
  ModelShape shape;
  const auto model = fields.find("model");
  if (model != fields.end()) {
    // A name as the registry's are: lower-case letters, digits and '_'. Which names exist is the
    // registry's (gan/), which this folder does not know; a resume compares the whole line.
    const bool name_like =
        !model->second.empty() && std::all_of(model->second.begin(), model->second.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        });
    if (!name_like) throw Error("model shape: model=" + model->second + " is not a model's name");
    shape.model = model->second;
  }
  auto& g = shape.generator;
  g.in_channels = field(fields, "in", 1, 64);
  g.out_channels = field(fields, "out", 1, 64);
  const auto net_g = fields.find("net_g");
  if (net_g == fields.end() || net_g->second == "unet") {
    if (fields.count("n_blocks")) throw Error("model shape: n_blocks is not a U-Net's");
    g.num_downs = field(fields, "num_downs", 5, 16);
  } else if (net_g->second == "resnet") {
    if (fields.count("num_downs")) throw Error("model shape: num_downs is not a ResNet generator's");
    g.arch = GeneratorArch::resnet;
    g.num_downs = 0;
    g.n_blocks = field(fields, "n_blocks", 0, 64);
  } else {
    throw Error("model shape: net_g=" + net_g->second + " is not unet or resnet");
  }
  g.ngf = field(fields, "ngf", 1, 4096);
  g.dropout = field(fields, "dropout", 0, 1) == 1;
  if (fields.count("norm") == 0) throw Error("model shape has no 'norm'");
  try {
    g.norm = parse_norm(fields.at("norm"));
  } catch (const std::exception&) {
    throw Error("model shape: norm=" + fields.at("norm") + " is not batch, instance or none");
  }
  auto& d = shape.discriminator;
  d.in_channels = shape.model.empty() ? g.in_channels + g.out_channels : g.out_channels;
  d.ndf = field(fields, "ndf", 1, 4096);
  d.n_layers = field(fields, "n_layers_d", 0, 16);
  d.norm = g.norm;
  return shape;
}

}  // namespace pix2pix::nets
