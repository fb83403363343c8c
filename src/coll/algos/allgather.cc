// Allgather: direct (everyone reads every member's slot), ring (n-1 steps per chunk) and Bruck
// (ceil(log2 n) steps per chunk); allgatherv (direct).
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// Per chunk: publish my piece, copy every member's piece into place. One step per chunk.
uint64_t allgather_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const Stores stream = stores_for(a.count * es * n);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es));
  for (const Chunk c : chunks) {
    ex.step(c.step);
    // My piece into my staging and my output in one pass over the input (in place: staging only).
    char* own = mptr(a.recv, r * a.count + c.begin, es);
    if (n == 1) {
      copy(own, cptr(a.send, c.begin, es), c.count * es, Stores::kCached);
      continue;
    }
    stage2(ex.comm(), own, ex.out(c.step), cptr(a.send, c.begin, es), c.count * es, stream);
    ex.publish(c.step);
    for (int j = 1; j < n; ++j) {
      const int m = patterns::mod(r + j, n);  // the next members in turn
      copy(mptr(a.recv, m * a.count + c.begin, es), ex.in(m, c.step), c.count * es, stream);
    }
  }
  return chunks.steps();
}

// Ring: my piece starts at my right neighbour; each step takes the piece from the left and passes it on.
// A member alone takes no steps (n - 1 per chunk).
uint64_t allgather_ring(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank(), left = patterns::ring_left(r, n);
  const size_t es = esize(a);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), n - 1);
  for (const Chunk c : chunks) {
    const uint64_t b = c.step;
    const size_t bytes = c.count * es;
    copy(mptr(a.recv, r * a.count + c.begin, es), cptr(a.send, c.begin, es), bytes, Stores::kCached);
    if (n == 1) continue;
    ex.step(b);
    stage(ex.comm(), ex.out(b), cptr(a.send, c.begin, es), bytes);
    ex.publish(b);
    for (int s = 0; s < n - 1; ++s) {
      ex.step(b + s);
      const int j = patterns::mod(r - 1 - s, n);
      const char* in = ex.in(left, b + s);
      copy(mptr(a.recv, j * a.count + c.begin, es), in, bytes, Stores::kCached);
      if (s < n - 2) {
        stage(ex.comm(), ex.out(b + s + 1), in, bytes);
        ex.publish(b + s + 1);
      }
    }
  }
  return chunks.steps();
}

// Bruck: member r accumulates pieces r, r+1, ... (rotated) in scratch; step k appends the first
// min(2^k, n-2^k) pieces of member r+2^k's accumulation. A chunk holds one piece per member in a slot.
uint64_t allgather_bruck(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const int L = patterns::ceil_log2(n);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es), L);
  char* acc = ex.comm().scratch_bytes(static_cast<size_t>(n) * chunks.per() * es);
  for (const Chunk c : chunks) {
    const size_t pb = c.count * es;  // bytes of one piece (packed at stride pb)
    copy(acc, cptr(a.send, c.begin, es), pb, Stores::kCached);
    int have = 1;
    for (int s = 0; s < L; ++s) {
      const uint64_t t = c.step + s;
      ex.step(t);
      stage(ex.comm(), ex.out(t), acc, static_cast<size_t>(have) * pb);
      ex.publish(t);
      const int take = patterns::bruck_ag_count(s, n);
      copy(acc + static_cast<size_t>(have) * pb, ex.in(patterns::bruck_ag_peer(r, s, n), t),
           static_cast<size_t>(take) * pb, Stores::kCached);
      have += take;
    }
    // un-rotate: piece j of the accumulation came from member r+j
    for (int j = 0; j < n; ++j)
      copy(mptr(a.recv, patterns::mod(r + j, n) * a.count + c.begin, es), acc + static_cast<size_t>(j) * pb, pb, Stores::kCached);
  }
  return chunks.steps();
}

// allgatherv: member m contributes rcounts[m] elements placed at rdispls[m] (elements) of the output.
uint64_t allgatherv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  size_t maxc = 0;
  for (int m = 0; m < n; ++m) maxc = std::max(maxc, a.rcounts[m]);
  const Chunks chunks(maxc, chunk_elems(ex.slot_bytes(), es));
  for (const Chunk c : chunks) {
    ex.step(c.step);
    if (const size_t mine = c.part(a.count)) {
      // My piece into my staging and my output in one pass over the input (as allgather_direct).
      char* own = mptr(a.recv, a.rdispls[r] + c.begin, es);
      if (n == 1) {
        copy(own, cptr(a.send, c.begin, es), mine * es, Stores::kCached);
      } else {
        stage2(ex.comm(), own, ex.out(c.step), cptr(a.send, c.begin, es), mine * es, Stores::kCached);
        ex.publish(c.step);
      }
    }
    for (int m = 0; m < n; ++m)
      if (m != r && c.part(a.rcounts[m]))
        copy(mptr(a.recv, a.rdispls[m] + c.begin, es), ex.in(m, c.step), c.part(a.rcounts[m]) * es, Stores::kCached);
  }
  return chunks.steps();
}

}  // namespace tessera::coll::algos
