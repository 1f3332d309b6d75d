// A job in which rank 1 never joins a collective: rank 0 must end the whole job after the
// collective timeout, naming the collective, instead of hanging. Run by collective_timeout_test.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "pix2pix/dist/mpi_communicator.hpp"
#include "pix2pix/dist/mpi_session.hpp"

int main(int argc, char** argv) {
  pix2pix::dist::MpiSession mpi(&argc, &argv);
  const double timeout = argc > 1 ? std::atof(argv[1]) : 2.0;
  pix2pix::dist::MpiCommunicator comm(timeout);
  auto t = torch::ones({1000});
  comm.allreduce_sum(t);  // both ranks: completes
  if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(120));  // stuck rank
  comm.allreduce_sum(t);  // rank 0 waits here, then aborts the job
  std::printf("rank %d: unreachable\n", comm.rank());
  return 0;
}
