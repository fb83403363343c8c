// Algorithms on the LL protocol (engine.h: ll_out/ll_publish/ll_in): small allreduce and the barrier.
// One wait per peer and no step counters; the payload is at most kLLBytes.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// Every member publishes its input in its LL buffer, then reduces all n inputs in rank order (canonical:
// the same bits as oneshot and direct).
uint64_t allreduce_ll(Exec& ex, const Args& a) {
  const int n = ex.size();
  if (a.count == 0) return 0;
  // publish my input
  const size_t bytes = a.count * esize(a);
  ex.ll_put(a.send, bytes);
  // Reduce every member's input, in rank order; mine from the send buffer, not from my LL buffer. The
  // line just published is being read by the peers: a load of it stalls until their reads are answered
  // (a cache-line transfer, 70-90 ns of a 0.45 us call across CCXs, measured at 2 ranks), while the send
  // buffer is private and in cache.
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(m == ex.rank() ? a.send : ex.ll_in(m, bytes));
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  return 0;
}

// Publish my flag (the call number), see every member's.
uint64_t barrier_ll(Exec& ex, const Args&) {
  ex.ll_out(0);
  ex.ll_publish();
  for (int m = 0; m < ex.size(); ++m)
    if (m != ex.rank()) ex.ll_in(m, 0);
  return 0;
}

}  // namespace tessera::coll::algos
