// SIGINT/SIGTERM/SIGUSR1 turn into a flag that long loops poll, so they can stop at a safe point and
// clean up (remove temporary files, write a checkpoint) instead of dying mid-write.
#pragma once

namespace pix2pix {

// Installs the handlers once. After the first signal, a SIGINT or SIGTERM exits at once with
// 128+signo; a repeated SIGUSR1 is the same request again and is ignored.
void install_interrupt_handlers();
bool interrupt_requested();
int interrupt_signal();  // the signal received, 0 when none
void clear_interrupt();  // for tests

}  // namespace pix2pix
