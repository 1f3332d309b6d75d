// Under mpirun -np 2: a graceful stop ends together. See Note [a graceful stop ends together]: no
// rank returns (and exits 75) before rank 0's checkpoint is written, and when rank 0 cannot
// write it every rank fails instead.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/dist/mpi_communicator.hpp"
#include "pix2pix/train/stop_protocol.hpp"
#include "support/mpi_env.hpp"

using namespace pix2pix;

TEST(StopProtocol, EveryRankReturnsOnlyOnceRankZerosCheckpointIsWritten) {
  ASSERT_GE(fixtures::g_mpi->world(), 2) << "run under mpirun -np 2";
  dist::MpiCommunicator comm(60.0);
  train::StopProtocol stop(comm, train::EarlyStoppingOptions{});
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path file = std::filesystem::path(tmp != nullptr ? tmp : "/tmp") / "stop-protocol-last.pt";
  if (comm.rank() == 0) std::filesystem::remove(file);
  comm.barrier();
  stop.end_gracefully([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a slow file system
    std::ofstream(file) << "checkpoint";
  });
  EXPECT_TRUE(std::filesystem::exists(file)) << "rank " << comm.rank() << " returned before rank 0 wrote";
  comm.barrier();
  if (comm.rank() == 0) std::filesystem::remove(file);
  clear_interrupt();
}

TEST(StopProtocol, RankZerosFailedCheckpointFailsEveryRank) {
  ASSERT_GE(fixtures::g_mpi->world(), 2) << "run under mpirun -np 2";
  dist::MpiCommunicator comm(60.0);
  train::StopProtocol stop(comm, train::EarlyStoppingOptions{});
  try {
    stop.end_gracefully([] { throw Error("checkpoints/last.pt: No space left on device"); });
    ADD_FAILURE() << "rank " << comm.rank() << " stopped as if the checkpoint were written";
  } catch (const Error& e) {
    const std::string expected = comm.rank() == 0 ? "No space left on device" : "rank 0 could not write the checkpoint";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  clear_interrupt();
}
