// SIGINT/SIGTERM/SIGUSR1 turn into a flag that long loops poll, so they can stop at a safe point and
// clean up (remove temporary files, write a checkpoint) instead of dying mid-write.
#pragma once

#include <string>

#include "pix2pix/common/error.hpp"

namespace pix2pix {

// Installs the handlers once. After the first signal, a SIGINT or SIGTERM exits at once with
// 128+signo; a repeated SIGUSR1 is the same request again and is ignored.
void install_interrupt_handlers();
bool interrupt_requested();
int interrupt_signal();  // the signal received, 0 when none
// The stop the signal asked for is complete on every rank (its checkpoint written): from now on a
// further SIGINT/SIGTERM exits at once with `exit_status`, not 128+signo, for nothing is lost by it.
// See Note [a graceful stop ends together].
void settle_interrupt(int exit_status);
void clear_interrupt();  // for tests

// A stop asked for by a signal, noticed outside the training steps (set-up, prepare, inspect):
// nothing was written that a later run could mistake for finished work.
class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& during);
  int signal() const { return signal_; }

 private:
  int signal_;
};

// Polled by long loops that are not training steps: throws Interrupted("<during>") once a signal
// has arrived.
void throw_if_interrupted(const std::string& during);

}  // namespace pix2pix
