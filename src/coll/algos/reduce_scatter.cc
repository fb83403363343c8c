// Reduce-scatter: direct (every member reduces its block from all members' staging, canonical order) and
// ring (pull form, n steps per chunk). Also reduce_scatterv (direct).
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// Per chunk (one piece of every block, n pieces per slot): copy the pieces other members own into my slot,
// then reduce my block's piece from every member. One step per chunk.
uint64_t reduce_scatter_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es));
  for (const Chunk c : chunks) {
    ex.step(c.step);
    // publish the pieces of the other members' blocks
    stage_pieces(ex, a, c);
    // reduce my piece from everyone, in rank order
    Srcs s;
    for (int m = 0; m < n; ++m)
      s.add(m == r ? cptr(a.send, r * a.count + c.begin, es) : ex.in(m, c.step) + r * c.per * es);
    reduce(mptr(a.recv, c.begin, es), s.p, n, c.count, a.dtype, a.op, divisor(a, n));
  }
  return chunks.steps();
}

// Ring: block (r-2-s) mod n travels right, each member adding its contribution; after n-1 steps member r
// holds block r. A chunk is one piece of every block (a piece fills a slot).
uint64_t reduce_scatter_ring(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank(), left = patterns::ring_left(r, n);
  const size_t es = esize(a);
  const Op pop = partial_op(a.op);
  if (n == 1) {
    reduce_alone(a);
    return 0;
  }
  auto block = [&](int j) { return patterns::mod(j, n); };
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), n);
  for (const Chunk c : chunks) {
    const uint64_t b = c.step;
    ex.step(b);
    // prologue: my contribution to block r-1 starts its trip
    stage(ex.comm(), ex.out(b), cptr(a.send, block(r - 1) * a.count + c.begin, es), c.count * es);
    ex.publish(b);
    for (int s = 0; s < n - 1; ++s) {
      ex.step(b + s);
      const int j = block(r - 2 - s);
      const void* src[2] = {ex.in(left, b + s), cptr(a.send, j * a.count + c.begin, es)};
      if (s == n - 2) {
        reduce(mptr(a.recv, c.begin, es), src, 2, c.count, a.dtype, a.op, divisor(a, n));
      } else {
        reduce(ex.out(b + s + 1), src, 2, c.count, a.dtype, pop, 0);
        ex.publish(b + s + 1);
      }
    }
  }
  return chunks.steps();
}

// reduce_scatterv: member m receives rcounts[m] elements; the input holds the blocks back to back.
uint64_t reduce_scatterv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  size_t maxc = 0;
  std::vector<size_t>& offs = ex.comm().offsets;
  offs.assign(static_cast<size_t>(n), 0);
  for (int m = 0; m < n; ++m) {
    offs[m] = m ? offs[m - 1] + a.rcounts[m - 1] : 0;  // blocks lie back to back in the input
    maxc = std::max(maxc, a.rcounts[m]);
  }
  const Chunks chunks(maxc, chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es));
  for (const Chunk c : chunks) {
    ex.step(c.step);
    char* o = ex.out(c.step);
    for (int m = 0; m < n; ++m)
      if (m != r && c.part(a.rcounts[m]))
        stage(ex.comm(), o + m * c.per * es, cptr(a.send, offs[m] + c.begin, es), c.part(a.rcounts[m]) * es);
    ex.publish(c.step);
    const size_t mine = c.part(a.rcounts[r]);
    if (!mine) continue;
    Srcs s;
    for (int m = 0; m < n; ++m)
      s.add(m == r ? cptr(a.send, offs[r] + c.begin, es) : ex.in(m, c.step) + r * c.per * es);
    reduce(mptr(a.recv, c.begin, es), s.p, n, mine, a.dtype, a.op, divisor(a, n));
  }
  return chunks.steps();
}

}  // namespace tessera::coll::algos
