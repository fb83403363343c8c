// Allreduce by direct reads of peers' staging: one-shot (small) and reduce-scatter + allgather (large).
// Both reduce every element in rank order 0..n-1 in one pass (canonical), so they give the same bits.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// One-shot: every member copies its input to its slot; every member reads all n slots and reduces them.
// 1 step; each member reads n*bytes. Best for small messages (one synchronisation).
uint64_t allreduce_oneshot(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t bytes = a.count * esize(a);
  if (a.count == 0) return 0;
  ex.step(0);
  // step 0: publish my input
  char* o = ex.out(0);
  copy(o, a.send, bytes, Stores::kCached);
  ex.publish(0);
  // reduce all inputs in rank order (mine straight from the user buffer)
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(m == r ? a.send : ex.in(m, 0));
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  return 1;
}

// Direct reduce-scatter + allgather, pipelined over chunks of one slot. Per chunk:
//   step 2k:   copy the slices that other members own into my slot
//   step 2k+1: reduce my slice from every member's slot (mine from the user buffer) into my slot and my
//              output, then copy every other member's reduced slice into my output
// Each member reduces 1/n of the data: the reduction work is split, reads of peers' memory are direct.
uint64_t allreduce_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), al = align_elems(es);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = nchunks(a.count, per);
  const Stores st = stores_for(a.count * es);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    const uint64_t t = 2 * k;
    ex.step(t);
    // step 2k: hand the slices owned by others to them
    char* in_slot = ex.out(t);
    for (int m = 0; m < n; ++m) {
      if (m == r) continue;
      Range s = patterns::slice(cnt, n, m, al);
      stage(ex.comm(), in_slot + s.begin * es, cptr(a.send, c0 + s.begin, es), s.size() * es);
    }
    ex.publish(t);
    // step 2k+1: reduce my slice from all members, in rank order
    Range my = patterns::slice(cnt, n, r, al);
    Srcs s;
    for (int m = 0; m < n; ++m) s.add(m == r ? cptr(a.send, c0 + my.begin, es) : ex.in(m, t) + my.begin * es);
    char* res = ex.out(t + 1) + my.begin * es;
    char* mine = mptr(a.recv, c0 + my.begin, es);
    if (stage_streams(ex.comm(), my.size() * es)) {
      // Streaming staging stores (common.h): reduce into my output, then stream the result to my slot.
      reduce(mine, s.p, n, my.size(), a.dtype, a.op, divisor(a, n));
      copy(res, mine, my.size() * es, Stores::kStream);
      ex.publish(t + 1);
    } else {
      reduce(res, s.p, n, my.size(), a.dtype, a.op, divisor(a, n));
      ex.publish(t + 1);
      copy(mine, res, my.size() * es, st);
    }
    ex.step(t + 1);
    // gather the other reduced slices
    for (int m = 0; m < n; ++m) {
      if (m == r) continue;
      Range sm = patterns::slice(cnt, n, m, al);
      copy(mptr(a.recv, c0 + sm.begin, es), ex.in(m, t + 1) + sm.begin * es, sm.size() * es, st);
    }
  }
  return 2 * nc;
}

}  // namespace tessera::coll::algos
