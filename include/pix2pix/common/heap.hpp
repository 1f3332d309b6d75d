// Note [freed memory stays in the heap]: a training step allocates and frees the same large
// activation, gradient and buffer tensors every step. glibc serves blocks above its mmap threshold
// (128 KiB, adapting up to 32 MiB) with mmap and gives them back with munmap on free, and trims the
// heap's free top, so every step faults the same memory in again, page by page, zero-filled by the
// kernel. On CI-2c that was 20-40 % of a step (docs/performance.md, "Page faults"). Turning both
// off keeps freed memory in the heap for the next step; the process's resident size stays at its
// peak, which a trainer reaches in its first steps anyway. Only training processes (`train`,
// `bench --what train`) do it: `prepare` and `inspect` allocate blocks of changing sizes, and with
// nothing handed back their address space outgrew a `ulimit -v` that glibc's default stays inside
// (HostileInput.InspectReadsLargeImagesInBoundedBlocks).
#pragma once

namespace pix2pix {

// Disables mmap for large blocks and heap trimming (mallopt), unless the environment already
// tunes glibc's allocator (any MALLOC_* variable, or glibc.malloc.* in GLIBC_TUNABLES): then the
// user's choice stands. `environment` is a null-terminated array as `environ`; the training
// commands pass `environ` before MPI and LibTorch allocate. Returns whether it changed anything.
bool retain_freed_memory(const char* const* environment);

}  // namespace pix2pix
