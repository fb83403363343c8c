// Allreduce by direct reads of peers' staging: one-shot (small) and reduce-scatter + allgather (large).
// Both reduce every element in rank order 0..n-1 in one pass (canonical), so they give the same bits.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// One-shot: every member copies its input to its slot; every member reads all n slots and reduces them.
// 1 step; each member reads n*bytes. Best for small messages (one synchronisation).
uint64_t allreduce_oneshot(Exec& ex, const Args& a) {
  const size_t bytes = a.count * esize(a);
  if (a.count == 0) return 0;
  ex.step(0);
  // step 0: publish my input
  char* o = ex.out(0);
  copy(o, a.send, bytes, Stores::kCached);
  ex.publish(0);
  // reduce all inputs in rank order (mine straight from the user buffer)
  reduce_slots(ex, a, 0);
  return 1;
}

// Direct reduce-scatter + allgather, pipelined over chunks of one slot. Per chunk:
//   step 2k:   copy the slices that other members own into my slot
//   step 2k+1: reduce my slice from every member's slot (mine from the user buffer) into my slot and my
//              output, then copy every other member's reduced slice into my output
// Each member reduces 1/n of the data: the reduction work is split, reads of peers' memory are direct.
uint64_t allreduce_direct(Exec& ex, const Args& a) {
  const int n = ex.size();
  const size_t es = esize(a);
  const Stores st = stores_for(a.count * es);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), 2);
  for (const Chunk c : chunks) {
    const uint64_t t = c.step;
    // step 2k: hand the slices owned by others to them; then my slice's sources from all members
    Srcs s;
    const Range my = direct_rs_chunk(ex, a, c, &s);
    // step 2k+1: reduce my slice, in rank order
    char* res = ex.out(t + 1) + my.begin * es;
    char* mine = mptr(a.recv, c.begin + my.begin, es);
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
    direct_ag_chunk(ex, a, c, t + 1, st);
  }
  return chunks.steps();
}

}  // namespace tessera::coll::algos
