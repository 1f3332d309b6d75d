// See Note [an option is declared once] (option_group.hpp).
#include "pix2pix/cli/option_group.hpp"

#include <limits>

#include "pix2pix/common/choices.hpp"

namespace pix2pix::cli {

void OptionGroup::check_count(const std::string& name, long long value, long long low, long long high) {
  if (value >= low && value <= high) return;
  const double top = high == kNoLimit ? std::numeric_limits<double>::infinity() : double(high);
  throw UsageError("--" + name + " must be " + Range::counts(double(low), top).describe() + ", got " +
                   std::to_string(value));
}

Declared<long> OptionGroup::optional_count(const std::string& name, std::optional<std::int64_t>& field, long long low,
                                           long long high, const std::string& help) {
  auto* value = new TaggedValue<long>();
  value->notifier([&field, name, low, high](long v) {
    check_count(name, v, low, high);
    field = v;
  });
  return add(name, value, help);
}

Declared<double> OptionGroup::real(const std::string& name, double& field, Range range, const std::string& help) {
  auto* value = new TaggedValue<double>();
  value->default_value(field)->notifier([&field, name, range](double v) {
    check_option_value(name, v, range);
    field = v;
  });
  return add(name, value, help);
}

Declared<double> OptionGroup::optional_real(const std::string& name, std::optional<double>& field, Range range,
                                            const std::string& help) {
  auto* value = new TaggedValue<double>();
  value->notifier([&field, name, range](double v) {
    check_option_value(name, v, range);
    field = v;
  });
  return add(name, value, help);
}

Declared<std::string> OptionGroup::text(const std::string& name, std::string& field, const std::string& help) {
  auto* value = new TaggedValue<std::string>();
  value->default_value(field)->notifier([&field](const std::string& v) { field = v; });
  return add(name, value, help);
}

Declared<std::string> OptionGroup::optional_text(const std::string& name, std::string& field, const std::string& help) {
  auto* value = new TaggedValue<std::string>();
  value->notifier([&field](const std::string& v) { field = v; });
  return add(name, value, help);
}

Declared<std::string> OptionGroup::on_off_auto(const std::string& name, std::optional<bool>& field,
                                               const std::string& help) {
  return choice(name, field, "auto", parse_on_off_auto, help);
}

Declared<bool> OptionGroup::flag(const std::string& name, bool& field, const std::string& help, bool when_given) {
  auto* value = new TaggedValue<bool>();
  value->default_value(false)->zero_tokens()->notifier([&field, when_given](bool given) {
    if (given) field = when_given;
  });
  return add(name, value, help);
}

const OptionTags* option_tags(const po::options_description& options, const std::string& name) {
  const po::option_description* option = options.find_nothrow(name, /*approx=*/false);
  return option == nullptr ? nullptr : dynamic_cast<const OptionTags*>(option->semantic().get());
}

train::OptionRoles option_roles(const po::options_description& options) {
  train::OptionRoles roles;
  for (const auto& option : options.options())
    if (const auto* tags = dynamic_cast<const OptionTags*>(option->semantic().get()))
      roles[option->long_name()] = tags->role;
  return roles;
}

std::vector<std::pair<std::string, std::string>> input_files(const po::variables_map& vm,
                                                             const po::options_description& options) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& option : options.options()) {
    const auto* tags = dynamic_cast<const OptionTags*>(option->semantic().get());
    const std::string& name = option->long_name();
    if (tags != nullptr && tags->input_file && vm.count(name) && !vm[name].defaulted())
      files.emplace_back("--" + name, vm[name].as<std::string>());
  }
  return files;
}

}  // namespace pix2pix::cli
