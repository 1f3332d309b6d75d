// Ranks that agree before work starts: every rank of a job must have been given the same options
// and the same files. See Note [ranks that agree].
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pix2pix/cli/options.hpp"
#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::cli {

// Note [ranks that agree]
// mpirun and srun start each rank with its own command line and environment, so ranks can be
// given different options (an MPMD line `-np 1 … : -np 1 …`, a wrapper script that branches on
// the rank, a config file that differs between nodes) or read different files under one path
// (node-local copies). Ranks that differ run different collectives or collectives of different
// sizes: the result was heap corruption, MPI_ERR_TRUNCATE, a wait until the collective timeout, or
// worse, a run that ends "successfully" with replicas that diverged. So before its first
// collective of work, every command that runs as a job gathers each rank's resolved options (the
// values after defaults and --config, not the spellings) and a fingerprint of each file it reads
// (size and a hash of its first and last 64 KiB: node-local copies of one file agree, different
// files do not), and every rank stops with one message naming the first field that differs, the
// rank and both values. Options that may differ per rank are declared so (rank-local,
// See Note [an option is declared once]; docs/input-checks.md lists them) and left out.

// The fields to agree on: "--name" and its resolved value for every option of `options` in `vm`
// except the rank-local ones.
using AgreedFields = std::vector<std::pair<std::string, std::string>>;
AgreedFields options_to_agree(const po::variables_map& vm, const po::options_description& options);
// Adds "<what> (contents)" with the fingerprint of the file at `path` (common/input_file.hpp).
void add_file(AgreedFields& fields, const std::string& what, const std::string& path);

// Pure: "" when every rank's fields equal rank 0's, otherwise the message naming the lowest rank
// that differs and its first differing field ("rank 1 has --batch-size 4, rank 0 has 1").
std::string first_disagreement(const std::vector<AgreedFields>& by_rank);

// A collective over MPI_COMM_WORLD: UsageError on rank 0 with first_disagreement's message when
// the ranks' fields differ (the other ranks wait for rank 0 to end the job, so the message is
// printed once). Call it on every rank before the first collective whose size depends on options.
void require_agreement(const dist::MpiSession& mpi, const AgreedFields& mine);

}  // namespace pix2pix::cli
