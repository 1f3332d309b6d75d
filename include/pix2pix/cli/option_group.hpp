// Options declared once: each option's name, default, range and help in one statement that binds
// it to the field its value goes to, and what the rest of the program must know of it as tags.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pix2pix/cli/options.hpp"
#include "pix2pix/train/option_changes.hpp"

namespace pix2pix::cli {

// The top of a count's range when it has none.
inline constexpr long long kNoLimit = std::numeric_limits<long long>::max();

// Note [an option is declared once]
// An option's name is written once, where it is declared, with its default (the value its field
// already holds), its range and its help: Boost.Program_options parses it, and at po::notify
// (parse_command) a notifier checks the value against the range (a UsageError naming the option)
// and stores it in the field it is bound to. Nothing reads an option back by its name. What other
// parts of the program must know of an option travels with its declaration as tags, found again
// by option_tags(): whether a resume may change it (train::OptionRole,
// See Note [options a resume may change]), whether ranks may give it different values
// (See Note [ranks that agree]), whether it names a file the job reads (fingerprinted across
// ranks, and never inside the run directory it writes), and whether it belongs to that run
// directory (bench, which writes none, refuses it). Options that decide together (--netG and
// --num-downs, --global-batch and the world size) are bound to raw fields and decided after
// parsing, in one place (TrainCommandLine::resolve).
struct OptionTags {
  train::OptionRole role;      // learned unless said
  bool rank_local = false;     // ranks may give different values (--device, --threads, --run-dir)
  bool input_file = false;     // names a file the job reads
  bool run_directory = false;  // about the run directory train writes (bench, which writes none, refuses it)
  virtual ~OptionTags() = default;
};

// A Boost value semantic that carries tags.
template <class T>
class TaggedValue final : public po::typed_value<T>, public OptionTags {
 public:
  TaggedValue() : po::typed_value<T>(nullptr) {}
};

// A declared option, to say more of it: group.text(...).how_the_job_runs().rank_local().
template <class T>
class Declared {
 public:
  explicit Declared(TaggedValue<T>* value) : value_(value) {}
  Declared& value_name(const char* name) {
    value_->value_name(name);
    return *this;
  }
  Declared& how_the_job_runs() {
    value_->role.kind = train::OptionRole::how_the_job_runs;
    return *this;
  }
  Declared& this_invocation() {
    value_->role.kind = train::OptionRole::this_invocation;
    return *this;
  }
  // The value in effect for runs from before the option existed (their checkpoints lack it).
  Declared& before_it_existed(const std::string& value) {
    value_->role.before_it_existed = value;
    return *this;
  }
  Declared& rank_local() {
    value_->rank_local = true;
    return *this;
  }
  Declared& input_file() {
    value_->input_file = true;
    return *this;
  }
  Declared& run_directory() {
    value_->run_directory = true;
    return *this;
  }

 private:
  TaggedValue<T>* value_;
};

// A captioned group of options for --help, each bound to a field that must outlive the parse.
// See Note [an option is declared once].
class OptionGroup {
 public:
  explicit OptionGroup(const std::string& caption = "") : options_(caption) {}

  // A whole number in low..high (`field` an integer type); the field's value is the default.
  template <class T>
  Declared<T> count(const std::string& name, T& field, long long low, long long high, const std::string& help) {
    auto* value = new TaggedValue<T>();
    value->default_value(field)->notifier([&field, name, low, high](const T& v) {
      check_count(name, static_cast<long long>(v), low, high);
      field = v;
    });
    return add(name, value, help);
  }
  // Any value of the field's type (a seed); the field's value is the default.
  template <class T>
  Declared<T> value(const std::string& name, T& field, const std::string& help) {
    auto* value = new TaggedValue<T>();
    value->default_value(field)->notifier([&field](const T& v) { field = v; });
    return add(name, value, help);
  }
  // Several values after the option (--worlds 1 2 4); `default_text` shows the field's value ("":
  // no default, the field is left as it is unless the option is given).
  template <class T>
  Declared<std::vector<T>> list(const std::string& name, std::vector<T>& field, const std::string& default_text,
                                const std::string& help) {
    auto* value = new TaggedValue<std::vector<T>>();
    value->multitoken()->notifier([&field](const std::vector<T>& v) { field = v; });
    if (!default_text.empty()) value->default_value(field, default_text);
    return add(name, value, help);
  }
  // A whole number without a default: `field` holds a value only when one is given.
  Declared<long> optional_count(const std::string& name, std::optional<std::int64_t>& field, long long low,
                                long long high, const std::string& help);
  // A finite number in `range`; the field's value is the default.
  Declared<double> real(const std::string& name, double& field, Range range, const std::string& help);
  Declared<double> optional_real(const std::string& name, std::optional<double>& field, Range range,
                                 const std::string& help);
  // A text whose default is the field's value.
  Declared<std::string> text(const std::string& name, std::string& field, const std::string& help);
  // A text without a default (a path): `field` is left as it is unless one is given.
  Declared<std::string> optional_text(const std::string& name, std::string& field, const std::string& help);
  // One of named values: `parse` maps the text to the field's type, given the option ("--name")
  // when it takes a second argument, and its error names the option; `default_text` is what
  // --help shows and config.cfg records when it is not given.
  template <class T, class Parse>
  Declared<std::string> choice(const std::string& name, T& field, const std::string& default_text, Parse parse,
                               const std::string& help) {
    auto* value = new TaggedValue<std::string>();
    value->default_value(default_text)->notifier(parsing_into(name, field, parse));
    return add(name, value, help);
  }
  // The same without a default: `field` is left as it is unless the option is given.
  template <class T, class Parse>
  Declared<std::string> parsed(const std::string& name, T& field, Parse parse, const std::string& help) {
    auto* value = new TaggedValue<std::string>();
    value->notifier(parsing_into(name, field, parse));
    return add(name, value, help);
  }
  // on | off | auto (default): true, false or nullopt for "the program decides".
  Declared<std::string> on_off_auto(const std::string& name, std::optional<bool>& field, const std::string& help);
  // A switch: `field` becomes `when_given` when it is given, and keeps its value otherwise.
  Declared<bool> flag(const std::string& name, bool& field, const std::string& help, bool when_given = true);

  // Another group's options under this one's caption, as Boost nests them.
  OptionGroup& add(const OptionGroup& group) {
    options_.add(group.description());
    return *this;
  }
  const po::options_description& description() const { return options_; }

 private:
  static void check_count(const std::string& name, long long value, long long low, long long high);
  // A notifier that parses an option's text into `field`; a value the option does not take is a
  // usage error.
  template <class T, class Parse>
  static auto parsing_into(const std::string& name, T& field, Parse parse) {
    return [&field, parse, option = "--" + name](const std::string& text) {
      try {
        if constexpr (std::is_invocable_v<Parse, const std::string&, const char*>)
          field = parse(text, option.c_str());
        else
          field = parse(text);
      } catch (const UsageError&) {
        throw;
      } catch (const Error& e) {
        throw UsageError(e.what());
      }
    };
  }
  template <class T>
  Declared<T> add(const std::string& name, TaggedValue<T>* value, const std::string& help) {
    options_.add_options()(name.c_str(), value, help.c_str());
    return Declared<T>(value);
  }

  po::options_description options_;
};

// The tags of option `name` as declared in `options` (nullptr: not declared through OptionGroup).
const OptionTags* option_tags(const po::options_description& options, const std::string& name);
// Every declared option's role by name, for what a resume may change.
train::OptionRoles option_roles(const po::options_description& options);
// The files the job reads, as ("--aux-classifier", path), of the input-file options that were given.
std::vector<std::pair<std::string, std::string>> input_files(const po::variables_map& vm,
                                                             const po::options_description& options);

}  // namespace pix2pix::cli
