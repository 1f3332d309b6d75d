// MPI_CHECK: every MPI return code goes through here; a failure throws pix2pix::Error naming the
// call, file, line, rank and MPI's own error string. Raw MPI lives only in dist/.
#pragma once

#include <mpi.h>

#include <string>

#include "pix2pix/common/error.hpp"

namespace pix2pix::dist {
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
}

#define MPI_CHECK(call)                                                                                               \
  do {                                                                                                                \
    const int mpi_check_code_ = (call);                                                                               \
    if (mpi_check_code_ != MPI_SUCCESS) ::pix2pix::dist::throw_mpi_error(mpi_check_code_, #call, __FILE__, __LINE__); \
  } while (0)
