// The signal handlers: what a second SIGTERM does before and after a graceful stop has settled.
// See Note [a graceful stop ends together] (src/train/stop_protocol.cpp).
#include "pix2pix/common/interrupt.hpp"

#include <gtest/gtest.h>
#include <signal.h>

namespace pix2pix {
namespace {

// Each case runs in a forked child (a death test), so the handlers and their state are its own.
TEST(Interrupt, ASecondTerminateSignalInsistsUntilTheStopHasSettled) {
  EXPECT_EXIT(
      {
        install_interrupt_handlers();
        raise(SIGUSR1);
        raise(SIGUSR1);  // the same request again: ignored
        if (interrupt_signal() != SIGUSR1) _exit(1);
        raise(SIGTERM);  // the user insists: at once, 128+15
        _exit(2);
      },
      ::testing::ExitedWithCode(128 + SIGTERM), "");
  EXPECT_EXIT(
      {
        install_interrupt_handlers();
        raise(SIGUSR1);
        settle_interrupt(75);
        raise(SIGTERM);  // a launcher ending the ranks after the checkpoint: the graceful status
        _exit(2);
      },
      ::testing::ExitedWithCode(75), "");
}

}  // namespace
}  // namespace pix2pix
