// All-to-all: direct (one step per chunk, every member reads its piece from everyone), pairwise (n-1
// steps per chunk, one partner each) and Bruck (ceil(log2 n) steps, pieces forwarded along the bits of
// the distance); alltoallv (direct, after an exchange of the count matrix). The barriers are in barrier.cc.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"
#include "base/log.h"

namespace tessera::coll::algos {

uint64_t alltoall_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const Stores stream = stores_for(a.count * es * n);
  const Chunks chunks(a.count, chunk_elems(std::min(kAlltoallPieceMax, ex.slot_bytes() / static_cast<size_t>(n)), es));
  for (const Chunk c : chunks) {
    ex.step(c.step);
    // publish my pieces for the others
    stage_pieces(ex, a, c);
    // my own piece straight from my input (in place it is already there), then mine from the others in
    // pairwise order
    copy(mptr(a.recv, r * a.count + c.begin, es), cptr(a.send, r * a.count + c.begin, es), c.count * es, stream);
    for (int j = 1; j < n; ++j) {
      const int m = patterns::pairwise_from(r, j, n);
      copy(mptr(a.recv, m * a.count + c.begin, es), ex.in(m, c.step) + r * c.per * es, c.count * es, stream);
    }
  }
  return chunks.steps();
}

uint64_t alltoall_pairwise(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), n - 1);
  for (const Chunk c : chunks) {
    const size_t pb = c.count * es;
    // In place, a block is overwritten (received) before it is sent: send from a copy of the chunk.
    const char* tmp = nullptr;
    if (a.send == a.recv && n > 1) {
      char* t = ex.comm().scratch_bytes(static_cast<size_t>(n) * pb);
      for (int m = 0; m < n; ++m) copy(t + m * pb, cptr(a.send, m * a.count + c.begin, es), pb, Stores::kCached);
      tmp = t;
    }
    auto piece = [&](int m) { return tmp ? tmp + m * pb : cptr(a.send, m * a.count + c.begin, es); };
    // step j-1: serve member r+j, take my piece from member r-j
    for (int j = 1; j < n; ++j) {
      const uint64_t t = c.step + j - 1;
      ex.step(t);
      stage(ex.comm(), ex.out(t), piece(patterns::pairwise_to(r, j, n)), pb);
      ex.publish(t);
      const int from = patterns::pairwise_from(r, j, n);
      copy(mptr(a.recv, from * a.count + c.begin, es), ex.in(from, t), pb, Stores::kCached);
    }
    copy(mptr(a.recv, r * a.count + c.begin, es), piece(r), pb, Stores::kCached);
  }
  return chunks.steps();
}

uint64_t alltoall_bruck(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const int L = patterns::ceil_log2(n);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es), L);
  char* tmp = ex.comm().scratch_bytes(static_cast<size_t>(n) * chunks.per() * es);
  for (const Chunk c : chunks) {
    const size_t pb = c.count * es;
    // rotate: tmp[j] is my piece for member r+j
    for (int j = 0; j < n; ++j) copy(tmp + j * pb, cptr(a.send, patterns::mod(r + j, n) * a.count + c.begin, es), pb, Stores::kCached);
    for (int s = 0; s < L; ++s) {
      const uint64_t t = c.step + s;
      ex.step(t);
      // send the pieces whose index has bit s set to member r+2^s, receive the same indices from r-2^s
      char* o = ex.out(t);
      size_t at = 0;
      for (int j = 0; j < n; ++j)
        if (j & (1 << s)) stage(ex.comm(), o + (at++) * pb, tmp + j * pb, pb);
      ex.publish(t);
      const char* in = ex.in(patterns::bruck_a2a_peer(r, s, n), t);
      at = 0;
      for (int j = 0; j < n; ++j)
        if (j & (1 << s)) copy(tmp + j * pb, in + (at++) * pb, pb, Stores::kCached);
    }
    // tmp[j] now came from member r-j
    for (int j = 0; j < n; ++j) copy(mptr(a.recv, patterns::mod(r - j, n) * a.count + c.begin, es), tmp + j * pb, pb, Stores::kCached);
  }
  return chunks.steps();
}

// alltoallv: step 0 publishes my send counts; everyone checks them against its receive counts and finds
// the largest piece, which fixes the number of rounds. Round k moves piece k (n pieces per slot).
uint64_t alltoallv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  ex.step(0);
  uint64_t* mine = reinterpret_cast<uint64_t*>(ex.out(0));
  for (int m = 0; m < n; ++m) mine[m] = a.scounts[m];
  ex.publish(0);
  size_t maxc = 0;
  for (int m = 0; m < n; ++m) {
    const uint64_t* theirs = reinterpret_cast<const uint64_t*>(ex.in(m, 0));
    for (int q = 0; q < n; ++q) maxc = std::max<size_t>(maxc, theirs[q]);
    if (theirs[r] != a.rcounts[m])
      mismatch_fatal(fmt::format("alltoallv on {}: rank {} (PE {}) sends {} elements to rank {} (PE {}), which expects {}",
                                 ex.comm().name, m, ex.comm().world[m], theirs[r], r, ex.comm().world[r], a.rcounts[m]));
  }
  const Chunks chunks(maxc, chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es), 1, 1);
  for (const Chunk c : chunks) {
    ex.step(c.step);
    char* o = ex.out(c.step);
    for (int m = 0; m < n; ++m)
      if (c.part(a.scounts[m]))
        stage(ex.comm(), o + m * c.per * es, cptr(a.send, a.sdispls[m] + c.begin, es), c.part(a.scounts[m]) * es);
    ex.publish(c.step);
    for (int j = 0; j < n; ++j) {
      const int m = patterns::pairwise_from(r, j, n);
      if (const size_t got = c.part(a.rcounts[m]))
        copy(mptr(a.recv, a.rdispls[m] + c.begin, es), ex.in(m, c.step) + r * c.per * es, got * es, Stores::kCached);
    }
  }
  return chunks.steps();
}

}  // namespace tessera::coll::algos
