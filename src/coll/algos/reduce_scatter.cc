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
  const size_t per = chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es);
  const size_t nc = nchunks(a.count, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    // publish the pieces of the other members' blocks
    char* o = ex.out(k);
    for (int m = 0; m < n; ++m)
      if (m != r) stage(ex.comm(), o + static_cast<size_t>(m) * per * es, cptr(a.send, m * a.count + c0, es), cnt * es);
    ex.publish(k);
    // reduce my piece from everyone, in rank order
    Srcs s;
    for (int m = 0; m < n; ++m)
      s.add(m == r ? cptr(a.send, r * a.count + c0, es) : ex.in(m, k) + static_cast<size_t>(r) * per * es);
    reduce(mptr(a.recv, c0, es), s.p, n, cnt, a.dtype, a.op, divisor(a, n));
  }
  return nc;
}

// Ring: block (r-2-s) mod n travels right, each member adding its contribution; after n-1 steps member r
// holds block r. A chunk is one piece of every block (a piece fills a slot).
uint64_t reduce_scatter_ring(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank(), left = patterns::ring_left(r, n);
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = nchunks(a.count, per);
  const uint64_t spc = static_cast<uint64_t>(n);
  const Op pop = partial_op(a.op);
  if (n == 1) {
    reduce_alone(a);
    return 0;
  }
  auto block = [&](int j) { return patterns::mod(j, n); };
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    const uint64_t b = k * spc;
    ex.step(b);
    // prologue: my contribution to block r-1 starts its trip
    stage(ex.comm(), ex.out(b), cptr(a.send, block(r - 1) * a.count + c0, es), cnt * es);
    ex.publish(b);
    for (int s = 0; s < n - 1; ++s) {
      ex.step(b + s);
      const int j = block(r - 2 - s);
      const void* src[2] = {ex.in(left, b + s), cptr(a.send, j * a.count + c0, es)};
      if (s == n - 2) {
        reduce(mptr(a.recv, c0, es), src, 2, cnt, a.dtype, a.op, divisor(a, n));
      } else {
        reduce(ex.out(b + s + 1), src, 2, cnt, a.dtype, pop, 0);
        ex.publish(b + s + 1);
      }
    }
  }
  return nc * spc;
}

// reduce_scatterv: member m receives rcounts[m] elements; the input holds the blocks back to back.
uint64_t reduce_scatterv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es);
  size_t maxc = 0, off_r = 0;
  std::vector<size_t>& offs = ex.comm().offsets;
  offs.assign(static_cast<size_t>(n), 0);
  for (int m = 0; m < n; ++m) {
    offs[m] = m ? offs[m - 1] + a.rcounts[m - 1] : 0;  // blocks lie back to back in the input
    maxc = std::max(maxc, a.rcounts[m]);
  }
  off_r = offs[r];
  const size_t nc = nchunks(maxc, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per;
    ex.step(k);
    char* o = ex.out(k);
    for (int m = 0; m < n; ++m) {
      if (m == r || a.rcounts[m] <= c0) continue;
      stage(ex.comm(), o + static_cast<size_t>(m) * per * es, cptr(a.send, offs[m] + c0, es), std::min(per, a.rcounts[m] - c0) * es);
    }
    ex.publish(k);
    if (a.rcounts[r] <= c0) continue;
    const size_t cnt = std::min(per, a.rcounts[r] - c0);
    Srcs s;
    for (int m = 0; m < n; ++m)
      s.add(m == r ? cptr(a.send, off_r + c0, es) : ex.in(m, k) + static_cast<size_t>(r) * per * es);
    reduce(mptr(a.recv, c0, es), s.p, n, cnt, a.dtype, a.op, divisor(a, n));
  }
  return nc;
}

}  // namespace tessera::coll::algos
