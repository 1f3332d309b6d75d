// --threads, and the thread budget every computing command settles once MPI has started
// (See Note [one thread budget per rank]).
#pragma once

#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/common/threads.hpp"

namespace pix2pix::dist {
class MpiSession;
}

namespace pix2pix::cli {

// --threads, bound to `threads` (0: auto).
OptionGroup thread_options(long& threads);

// Decides and applies this rank's budget from --threads, the environment and the cores it
// shares with the other ranks of its node (`mpi` null: a process alone). A collective when `mpi`
// is given. Warnings go to stderr from each node's first rank: what was not taken as given, and
// ranks x threads beyond the node's cores.
ThreadBudget settle_threads(long threads, const dist::MpiSession* mpi);

// The commands that call settle_threads; main() prints the warnings of the process-wide
// default for the others.
bool settles_threads(const std::string& command);

}  // namespace pix2pix::cli
