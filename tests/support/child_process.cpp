#include "support/child_process.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace pix2pix::fixtures {

long long mapped_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) * 1024;
  return 0;
}

void limit_address_space(long long extra_bytes) {
  struct rlimit limit {};
  limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(mapped_bytes() + extra_bytes);
  setrlimit(RLIMIT_AS, &limit);
}

std::string ChildOutcome::describe() const {
  if (timed_out) return "timed out (hang)";
  if (exited) return "exit " + std::to_string(code);
  return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

ChildOutcome run_in_child(const std::function<int()>& body, int seconds) {
  const pid_t child = fork();
  if (child == 0) {
    int code = 99;
    try {
      code = body();
    } catch (...) {
    }
    _exit(code);
  }
  ChildOutcome outcome;
  if (child < 0) return outcome;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) return outcome;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      outcome.timed_out = true;
      return outcome;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  outcome.exited = WIFEXITED(status);
  outcome.code = outcome.exited ? WEXITSTATUS(status) : -1;
  outcome.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return outcome;
}

ChildOutcome run_test_in_fresh_process(const std::string& test, const std::string& argument, int seconds) {
  return run_in_child(
      [&] {
        const std::string filter = "--gtest_filter=" + test;
        setenv("PIX2PIX_FRESH_PROCESS", argument.c_str(), 1);
        execl("/proc/self/exe", "pix2pix_tests", filter.c_str(), static_cast<char*>(nullptr));
        return 127;
      },
      seconds);
}

const char* fresh_process_argument() {
  return std::getenv("PIX2PIX_FRESH_PROCESS");
}

}  // namespace pix2pix::fixtures
