// Growing back through the C++ API (tests/scripts/grow_test.sh, under tessera-run --on-failure continue
// --restarts 1): PE 1 dies after the first allreduce; the survivors catch tessera::PeerFailure, shrink and
// grow (Comm::grow); the replacement joins (Comm::join); all four then check an allreduce and their ranks.
// Prints "grow_cxx: ok PE p incarnation k" on each PE.
#include <shmem.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <tessera/coll.h>
#include <tessera/coll.hpp>

namespace tc = tessera::coll;

namespace {
int me = 0;
void require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "grow_cxx: PE %d: FAILED %s\n", me, what.c_str());
  std::exit(1);
}
double sum_of_ranks(tc::Comm& c) {
  double v = me + 1, sum = 0;
  c.allreduce(&v, &sum, 1, tc::DataType::kFloat64, tc::RedOp::kSum);
  return sum;
}
}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  const int n = shmem_n_pes(), victim = 1;
  require(n == 4, "needs 4 PEs");
  int incarnation = -1;
  require(tesseraIncarnation(&incarnation) == tesseraSuccess, "tesseraIncarnation");
  tc::Comm comm;
  if (incarnation == 0) {
    comm = tc::Comm::world();
    require(sum_of_ranks(comm) == 10, "the allreduce before the failure");
    if (me == victim) raise(SIGKILL);
    bool failed = false;
    try {
      (void)sum_of_ranks(comm);
    } catch (const tessera::PeerFailure& e) {
      failed = std::string(e.what()).find("PE 1") != std::string::npos;
    }
    require(failed, "the allreduce after PE 1's death throws PeerFailure naming it");
    tc::Comm survivors = comm.shrink();
    require(sum_of_ranks(survivors) == 10 - (victim + 1), "the survivors' allreduce");
    comm.destroy();
    comm = survivors.grow();
    survivors.destroy();
  } else {
    comm = tc::Comm::join();
  }
  require(comm.size() == 4 && comm.rank() == me, "rank " + std::to_string(comm.rank()) + " of " +
                                                     std::to_string(comm.size()) + " in the grown communicator");
  require(sum_of_ranks(comm) == 10, "the allreduce of the grown communicator");
  std::printf("grow_cxx: ok PE %d incarnation %d\n", me, incarnation);
  comm.destroy();
  shmem_finalize();
  return 0;
}
