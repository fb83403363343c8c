// Resilient mode through the C++ API (tests/scripts/resilience_test.sh, under tessera-run --on-failure
// continue): PE 1 dies after the first allreduces; the survivors must see tessera::PeerFailure from the
// blocking call and a comm stream's pending call, Comm::failed() must name PE 1, agree must AND the flags,
// shrink must give a working communicator of the others, and revoke must make the others' calls throw
// PeerFailure with revoked() set. Prints "resilient_cxx: ok PE p" on each survivor. With the argument
// `hosts` (run under tests/pe/as_hosts.sh) the receive from any source is left out: it needs every member
// on one host.
#include <shmem.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tessera/coll.hpp>
#include <tessera/stream.hpp>

namespace tc = tessera::coll;

namespace {
int me = 0;
void require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "resilient_cxx: PE %d: FAILED %s\n", me, what.c_str());
  std::exit(1);
}
}  // namespace

int main(int argc, char** argv) {
  const bool across_hosts = argc > 1 && std::string(argv[1]) == "hosts";
  shmem_init();
  me = shmem_my_pe();
  const int n = shmem_n_pes(), victim = 1;
  require(n >= 3, "needs 3 or more PEs");
  tc::Comm world = tc::Comm::world();
  double v = me, sum = 0;
  world.allreduce(&v, &sum, 1, tc::DataType::kFloat64, tc::RedOp::kSum);
  require(sum == n * (n - 1) / 2.0, "the allreduce before the failure");
  if (me == victim) raise(SIGKILL);

  bool threw = false;
  try {
    world.allreduce(&v, &sum, 1, tc::DataType::kFloat64, tc::RedOp::kSum);
  } catch (const tc::PeerFailure& e) {
    threw = !e.revoked() && std::string(e.what()).find("PE 1 ") != std::string::npos;
  }
  require(threw, "Comm::allreduce throws PeerFailure naming PE 1");
  require(world.failed() == std::vector<int>{victim}, "Comm::failed() lists PE 1");

  // A comm stream's call on the broken communicator fails, and the stream reports it at synchronize.
  {
    tessera::Stream s;
    world.allreduce(&v, &sum, 1, tc::DataType::kFloat64, tc::RedOp::kSum, s);
    bool stream_threw = false;
    try {
      s.synchronize();
    } catch (const tc::PeerFailure& e) {  // the type survives the stream
      stream_threw = std::string(e.what()).find("PE 1 ") != std::string::npos;
    }
    require(stream_threw, "a comm stream's allreduce on the broken communicator throws PeerFailure naming PE 1");
  }

  require(world.agree(me == 0 ? 0x3 : 0x1) == 0x1, "agree ANDs the survivors' flags");
  tc::Comm survivors = world.shrink();
  require(survivors.size() == n - 1, "shrink keeps the n-1 survivors");
  v = 1;
  survivors.allreduce(&v, &sum, 1, tc::DataType::kFloat64, tc::RedOp::kSum);
  require(sum == n - 1, "an allreduce on the survivors");

  // A receive from any source on a communicator with a failed member: a message already there is taken;
  // then, with none coming but possibly the dead member's, it fails rather than waiting to the deadline.
  if (!across_hosts) {
    int64_t msg = 100 + me, got = -1;
    if (me == 2) world.send(&msg, 1, tc::DataType::kInt64, 0);  // small: buffered, complete at once
    survivors.barrier();
    if (me == 0) {
      require(world.recv_any(&got, 1, tc::DataType::kInt64) == 2 && got == 102, "recv_any takes the message there");
      bool any_threw = false;
      try {
        world.recv_any(&got, 1, tc::DataType::kInt64);
      } catch (const tc::PeerFailure& e) {
        any_threw = std::string(e.what()).find("its message may never come") != std::string::npos;
      }
      require(any_threw, "recv_any with a failed member and no message throws PeerFailure");
    }
  }

  // Nobody may still be finishing a call on `survivors` when its rank 0 revokes it (a call in flight at a
  // revocation may fail on some members): a barrier on another communicator of the survivors first.
  tc::Comm fence = world.shrink();
  fence.barrier();
  if (survivors.rank() == 0) {
    survivors.revoke();
  } else {
    bool revoked = false;
    try {
      survivors.allreduce(&v, &sum, 1, tc::DataType::kFloat64, tc::RedOp::kSum);
    } catch (const tc::PeerFailure& e) {
      revoked = e.revoked();
    }
    require(revoked, "a call pending at the revocation throws PeerFailure with revoked()");
  }
  fence.destroy();
  survivors.destroy();
  world.destroy();
  shmem_finalize();
  std::printf("resilient_cxx: ok PE %d\n", me);
  return 0;
}
