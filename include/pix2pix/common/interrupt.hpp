// SIGINT/SIGTERM turn into a flag that long loops poll, so they can stop at a safe point and
// clean up (remove temporary files, write a checkpoint) instead of dying mid-write.
#pragma once

namespace pix2pix {

// Installs the handlers once. A second signal of the same kind exits at once with 128+signo.
void install_interrupt_handlers();
bool interrupt_requested();
int interrupt_signal();  // the signal received, 0 when none
void clear_interrupt();  // for tests

}  // namespace pix2pix
