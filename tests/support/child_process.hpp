// Runs a piece of test code in a forked child, so that a crash, a hang or a hard resource limit
// there is a test failure here instead of the end of the test binary.
#pragma once

#include <functional>
#include <string>

namespace pix2pix::fixtures {

struct ChildOutcome {
  bool exited = false;     // the child returned (or called _exit)
  int code = -1;           // its exit code when it exited
  int signal = 0;          // the signal that ended it otherwise
  bool timed_out = false;  // killed after `seconds`
  std::string describe() const;
};

// In a child: lets this process map at most `extra_bytes` more than it has mapped now
// (RLIMIT_AS), so that an allocation sized from hostile input fails instead of exhausting memory.
void limit_address_space(long long extra_bytes);

// Forks; the child runs `body` and _exits with its return value (an escaping exception: 99).
// The parent waits at most `seconds` (then SIGKILLs the child).
ChildOutcome run_in_child(const std::function<int()>& body, int seconds = 60);

}  // namespace pix2pix::fixtures
