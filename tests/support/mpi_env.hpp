// Shared state of the multi-rank test binary.
#pragma once

#include <mpi.h>

#include <string>

#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::fixtures {
extern dist::MpiSession* g_mpi;

// Rank 0's string, on every rank.
inline std::string broadcast_string(std::string value) {
  int size = static_cast<int>(value.size());
  MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
  value.resize(static_cast<size_t>(size));
  MPI_Bcast(value.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD);
  return value;
}
}  // namespace pix2pix::fixtures
