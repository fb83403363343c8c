// Allgather: direct (everyone reads every member's slot), ring (n-1 steps per chunk) and Bruck
// (ceil(log2 n) steps per chunk); allgatherv (direct).
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// Per chunk: publish my piece, copy every member's piece into place. One step per chunk.
uint64_t allgather_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = nchunks(a.count, per);
  const Stores st = stores_for(a.count * es * n);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    // My piece into my staging and my output in one pass over the input (in place: staging only).
    char* own = mptr(a.recv, r * a.count + c0, es);
    if (n == 1) {
      copy(own, cptr(a.send, c0, es), cnt * es, Stores::kCached);
      continue;
    }
    stage2(ex.comm(), own, ex.out(k), cptr(a.send, c0, es), cnt * es, st);
    ex.publish(k);
    for (int j = 1; j < n; ++j) {
      const int m = patterns::mod(r + j, n);  // the next members in turn
      copy(mptr(a.recv, m * a.count + c0, es), ex.in(m, k), cnt * es, st);
    }
  }
  return nc;
}

// Ring: my piece starts at my right neighbour; each step takes the piece from the left and passes it on.
uint64_t allgather_ring(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank(), left = patterns::ring_left(r, n);
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = nchunks(a.count, per);
  const uint64_t spc = static_cast<uint64_t>(n - 1);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    const uint64_t b = k * spc;
    copy(mptr(a.recv, r * a.count + c0, es), cptr(a.send, c0, es), cnt * es, Stores::kCached);
    if (n == 1) continue;
    ex.step(b);
    stage(ex.comm(), ex.out(b), cptr(a.send, c0, es), cnt * es);
    ex.publish(b);
    for (int s = 0; s < n - 1; ++s) {
      ex.step(b + s);
      const int j = patterns::mod(r - 1 - s, n);
      const char* in = ex.in(left, b + s);
      copy(mptr(a.recv, j * a.count + c0, es), in, cnt * es, Stores::kCached);
      if (s < n - 2) {
        stage(ex.comm(), ex.out(b + s + 1), in, cnt * es);
        ex.publish(b + s + 1);
      }
    }
  }
  return n == 1 ? 0 : nc * spc;
}

// Bruck: member r accumulates pieces r, r+1, ... (rotated) in scratch; step k appends the first
// min(2^k, n-2^k) pieces of member r+2^k's accumulation. A chunk holds one piece per member in a slot.
uint64_t allgather_bruck(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es);
  const size_t nc = nchunks(a.count, per);
  const int L = patterns::ceil_log2(n);
  char* acc = ex.comm().scratch_bytes(static_cast<size_t>(n) * per * es);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    const size_t pb = cnt * es;  // bytes of one piece (packed at stride pb)
    const uint64_t b = k * static_cast<uint64_t>(L);
    copy(acc, cptr(a.send, c0, es), pb, Stores::kCached);
    int have = 1;
    for (int s = 0; s < L; ++s) {
      ex.step(b + s);
      stage(ex.comm(), ex.out(b + s), acc, static_cast<size_t>(have) * pb);
      ex.publish(b + s);
      const int take = patterns::bruck_ag_count(s, n);
      copy(acc + static_cast<size_t>(have) * pb, ex.in(patterns::bruck_ag_peer(r, s, n), b + s),
           static_cast<size_t>(take) * pb, Stores::kCached);
      have += take;
    }
    // un-rotate: piece j of the accumulation came from member r+j
    for (int j = 0; j < n; ++j)
      copy(mptr(a.recv, patterns::mod(r + j, n) * a.count + c0, es), acc + static_cast<size_t>(j) * pb, pb,
           Stores::kCached);
  }
  return nc * static_cast<uint64_t>(L);
}

// allgatherv: member m contributes rcounts[m] elements placed at rdispls[m] (elements) of the output.
uint64_t allgatherv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  size_t maxc = 0;
  for (int m = 0; m < n; ++m) maxc = std::max(maxc, a.rcounts[m]);
  const size_t nc = nchunks(maxc, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per;
    ex.step(k);
    if (a.count > c0) {
      // My piece into my staging and my output in one pass over the input (as allgather_direct).
      char* own = mptr(a.recv, a.rdispls[r] + c0, es);
      const size_t bytes = std::min(per, a.count - c0) * es;
      if (n == 1) {
        copy(own, cptr(a.send, c0, es), bytes, Stores::kCached);
      } else {
        stage2(ex.comm(), own, ex.out(k), cptr(a.send, c0, es), bytes, Stores::kCached);
        ex.publish(k);
      }
    }
    for (int m = 0; m < n; ++m) {
      if (m == r || a.rcounts[m] <= c0) continue;
      copy(mptr(a.recv, a.rdispls[m] + c0, es), ex.in(m, k), std::min(per, a.rcounts[m] - c0) * es, Stores::kCached);
    }
  }
  return nc;
}

}  // namespace tessera::coll::algos
