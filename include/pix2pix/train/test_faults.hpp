// Test fault injection: a rank that dies, or a stop signal that arrives, at a chosen moment of a
// training run, for the tests that prove a run survives it. See Note [test fault injection].
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace pix2pix::train {

// Note [test fault injection]
// Tests need deaths and signals at exact moments (a step, the cache fill, validation, a
// checkpoint write); a timer outside the process would make them flaky. They are not options of a
// run: they live in this struct, apart from TrainOptions, the hidden `--test-*` options that fill
// it are named as tests' (and written to no config.cfg), and every moment is an optional: "never"
// is the absence of a value, not a sentinel that a real state could take. (The sentinel -1 for
// "never" once equalled the epoch number of a stop in the first epoch: every stop there killed
// the run instead of checkpointing it.) The run loop knows none of them: it calls one hook at
// each moment a fault may happen (FaultHook::at), and a production run has no hook at all.

// The moments of a run a test may interrupt.
enum class RunMoment {
  cache_block,  // set-up: a block of this rank's shard has been cached
  before_step,  // `when`: the global step about to run
  validation,   // `when`: the epoch whose validation begins
  checkpoint,   // rank 0, `when`: the epoch whose end-of-epoch last.pt is about to be written
};

class FaultHook {
 public:
  virtual ~FaultHook() = default;
  // Called on every rank at each moment. At checkpoint, `write_half_and_die(what)` writes half
  // of the checkpoint, as a node failure would leave it, and SIGKILLs the process saying `what`.
  virtual void at(RunMoment moment, std::int64_t when, int rank,
                  const std::function<void(const std::string& what)>& write_half_and_die) const = 0;
};

struct TestFaults : FaultHook {
  int rank = 1;  // the rank the fault happens on
  // SIGKILL before this global step (a node that dies).
  std::optional<std::int64_t> kill_at_step;
  // Rank 0 is SIGKILLed with half of the end-of-epoch last.pt of this epoch written.
  std::optional<std::int64_t> kill_in_checkpoint;
  int signal = 10;  // SIGUSR1: what the moments below send (raised, so the real handler runs)
  std::optional<std::int64_t> signal_at_step;        // before this global step
  bool signal_in_setup = false;                      // once the first cache block is read
  std::optional<std::int64_t> signal_in_validation;  // as validation of this epoch begins
  std::optional<std::int64_t> signal_in_checkpoint;  // rank 0, while the end-of-epoch last.pt of this epoch is written

  bool here(int my_rank) const { return my_rank == rank; }
  bool any() const;  // some fault is asked for
  void at(RunMoment moment, std::int64_t when, int rank,
          const std::function<void(const std::string& what)>& write_half_and_die) const override;
};

// "TERM", "SIGTERM", "15", ... → the signal number, for --test-signal (INT, TERM, USR1, USR2,
// HUP, KILL); UsageError naming the option otherwise.
int parse_test_signal(const std::string& text);

// Raises `signal` in this process (the installed handler runs, as for a signal from outside).
void raise_test_signal(int signal);

// SIGKILLs this process after printing "rank R: <what> (test fault injection) at unix time T"
// to stderr (tests measure how fast the job ends from T).
[[noreturn]] void die_for_test(int rank, const std::string& what);

}  // namespace pix2pix::train
