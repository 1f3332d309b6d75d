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

// Bytes of address space this process has mapped now (VmSize).
long long mapped_bytes();

// In a child: lets this process map at most `extra_bytes` more than it has mapped now
// (RLIMIT_AS), so that an allocation sized from hostile input fails instead of exhausting memory.
void limit_address_space(long long extra_bytes);

// Forks; the child runs `body` and _exits with its return value (an escaping exception: 99).
// The parent waits at most `seconds` (then SIGKILLs the child).
ChildOutcome run_in_child(const std::function<int()>& body, int seconds = 60);

// For a test whose child must start from a fresh address space (a fork inherits the test
// process's free heap, which can serve an allocation that an address-space limit should stop):
// runs this test binary again with only `test` ("Suite.Name") selected and PIX2PIX_FRESH_PROCESS
// set to `argument`; the test, seeing fresh_process_argument(), does the child's part and ends
// with std::_Exit(code).
ChildOutcome run_test_in_fresh_process(const std::string& test, const std::string& argument, int seconds = 60);
const char* fresh_process_argument();  // nullptr outside such a child

}  // namespace pix2pix::fixtures
