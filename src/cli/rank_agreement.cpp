// See Note [ranks that agree] (rank_agreement.hpp).
#include "pix2pix/cli/rank_agreement.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"

namespace pix2pix::cli {
namespace {

// One field a line, name and value separated by a unit separator; newlines cannot occur in
// either (option values are single lines, fingerprints are ours).
std::string encode(const AgreedFields& fields) {
  std::string text;
  for (const auto& [name, value] : fields) text += name + '\x1f' + value + '\n';
  return text;
}

AgreedFields decode(const std::string& text) {
  AgreedFields fields;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto separator = line.find('\x1f');
    fields.emplace_back(line.substr(0, separator), separator == std::string::npos ? "" : line.substr(separator + 1));
  }
  return fields;
}

std::string shown(const std::string& value) {
  return value.empty() ? "(empty)" : value;
}

}  // namespace

AgreedFields options_to_agree(const po::variables_map& vm, const po::options_description& options) {
  AgreedFields fields;
  std::istringstream lines(effective_options(vm, options));
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    const std::string name = line.substr(0, eq);
    if (const OptionTags* tags = option_tags(options, name); tags != nullptr && tags->rank_local) continue;
    fields.emplace_back("--" + name, line.substr(eq + 3));
  }
  return fields;
}

void add_file(AgreedFields& fields, const std::string& what, const std::string& path) {
  fields.emplace_back(what + " (contents)", file_fingerprint(path));
}

std::string first_disagreement(const std::vector<AgreedFields>& by_rank) {
  if (by_rank.empty()) return "";
  const AgreedFields& root = by_rank[0];
  std::map<std::string, std::string> root_values(root.begin(), root.end());
  for (std::size_t r = 1; r < by_rank.size(); ++r) {
    const std::string rank = "rank " + std::to_string(r);
    std::map<std::string, std::string> values(by_rank[r].begin(), by_rank[r].end());
    for (const auto& [name, value] : by_rank[r]) {
      const auto at_root = root_values.find(name);
      if (at_root == root_values.end()) return rank + " has " + name + " " + shown(value) + ", rank 0 has no " + name;
      if (at_root->second != value)
        return rank + " has " + name + " " + shown(value) + ", rank 0 has " + shown(at_root->second);
    }
    for (const auto& [name, value] : root)
      if (!values.count(name)) return "rank 0 has " + name + " " + shown(value) + ", " + rank + " has no " + name;
  }
  return "";
}

void require_agreement(const dist::MpiSession& mpi, const AgreedFields& mine) {
  if (mpi.world() == 1) return;
  std::vector<AgreedFields> by_rank;
  for (const std::string& text : mpi.allgather(encode(mine))) by_rank.push_back(decode(text));
  const std::string difference = first_disagreement(by_rank);
  if (difference.empty()) return;
  const std::string message = "the ranks of this job were given different options or files: " + difference +
                              "; every rank must be started with the same options and see the same files "
                              "(docs/input-checks.md lists the few that may differ)";
  // Rank 0 reports it and ends the job; the others wait for that, so it is said once.
  if (mpi.rank() != 0) mpi.barrier();
  throw UsageError(message);
}

}  // namespace pix2pix::cli
