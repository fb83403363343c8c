// All-to-all: direct (one step per chunk, every member reads its piece from everyone), pairwise (n-1
// steps per chunk, one partner each) and Bruck (ceil(log2 n) steps, pieces forwarded along the bits of
// the distance); alltoallv (direct, after an exchange of the count matrix) and barriers.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"
#include "base/log.h"

namespace tessera::coll::algos {

uint64_t alltoall_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(std::min(kAlltoallPieceMax, ex.slot_bytes() / static_cast<size_t>(n)), es);
  const size_t nc = nchunks(a.count, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    // publish my pieces for the others
    char* o = ex.out(k);
    for (int m = 0; m < n; ++m)
      if (m != r) stage(ex.comm(), o + static_cast<size_t>(m) * per * es, cptr(a.send, m * a.count + c0, es), cnt * es);
    ex.publish(k);
    // my own piece straight from my input (in place it is already there), then mine from the others in
    // pairwise order
    copy(mptr(a.recv, r * a.count + c0, es), cptr(a.send, r * a.count + c0, es), cnt * es, stores_for(a.count * es * n));
    for (int j = 1; j < n; ++j) {
      const int m = patterns::pairwise_from(r, j, n);
      copy(mptr(a.recv, m * a.count + c0, es), ex.in(m, k) + static_cast<size_t>(r) * per * es, cnt * es,
           stores_for(a.count * es * n));
    }
  }
  return nc;
}

uint64_t alltoall_pairwise(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = nchunks(a.count, per);
  const uint64_t spc = static_cast<uint64_t>(n - 1);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    const uint64_t b = k * spc;
    // In place, a block is overwritten (received) before it is sent: send from a copy of the chunk.
    const char* tmp = nullptr;
    if (a.send == a.recv && n > 1) {
      char* t = ex.comm().scratch_bytes(static_cast<size_t>(n) * cnt * es);
      for (int m = 0; m < n; ++m) copy(t + m * cnt * es, cptr(a.send, m * a.count + c0, es), cnt * es, Stores::kCached);
      tmp = t;
    }
    auto piece = [&](int m) { return tmp ? tmp + m * cnt * es : cptr(a.send, m * a.count + c0, es); };
    // step j-1: serve member r+j, take my piece from member r-j
    for (int j = 1; j < n; ++j) {
      const uint64_t t = b + j - 1;
      ex.step(t);
      stage(ex.comm(), ex.out(t), piece(patterns::pairwise_to(r, j, n)), cnt * es);
      ex.publish(t);
      const int from = patterns::pairwise_from(r, j, n);
      copy(mptr(a.recv, from * a.count + c0, es), ex.in(from, t), cnt * es, Stores::kCached);
    }
    copy(mptr(a.recv, r * a.count + c0, es), piece(r), cnt * es, Stores::kCached);
  }
  return nc * spc;
}

uint64_t alltoall_bruck(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es);
  const size_t nc = nchunks(a.count, per);
  const int L = patterns::ceil_log2(n);
  char* tmp = ex.comm().scratch_bytes(static_cast<size_t>(n) * per * es);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    const size_t pb = cnt * es;
    const uint64_t b = k * static_cast<uint64_t>(L);
    // rotate: tmp[j] is my piece for member r+j
    for (int j = 0; j < n; ++j)
      copy(tmp + j * pb, cptr(a.send, patterns::mod(r + j, n) * a.count + c0, es), pb, Stores::kCached);
    for (int s = 0; s < L; ++s) {
      ex.step(b + s);
      // send the pieces whose index has bit s set to member r+2^s, receive the same indices from r-2^s
      char* o = ex.out(b + s);
      size_t at = 0;
      for (int j = 0; j < n; ++j)
        if (j & (1 << s)) stage(ex.comm(), o + (at++) * pb, tmp + j * pb, pb);
      ex.publish(b + s);
      const char* in = ex.in(patterns::bruck_a2a_peer(r, s, n), b + s);
      at = 0;
      for (int j = 0; j < n; ++j)
        if (j & (1 << s)) copy(tmp + j * pb, in + (at++) * pb, pb, Stores::kCached);
    }
    // tmp[j] now came from member r-j
    for (int j = 0; j < n; ++j)
      copy(mptr(a.recv, patterns::mod(r - j, n) * a.count + c0, es), tmp + j * pb, pb, Stores::kCached);
  }
  return nc * static_cast<uint64_t>(L);
}

// alltoallv: step 0 publishes my send counts; everyone checks them against its receive counts and finds
// the largest piece, which fixes the number of rounds. Round k moves piece k (n pieces per slot).
uint64_t alltoallv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es);
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
  const size_t nc = nchunks(maxc, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per;
    ex.step(1 + k);
    char* o = ex.out(1 + k);
    for (int m = 0; m < n; ++m)
      if (a.scounts[m] > c0)
        stage(ex.comm(), o + static_cast<size_t>(m) * per * es, cptr(a.send, a.sdispls[m] + c0, es), std::min(per, a.scounts[m] - c0) * es);
    ex.publish(1 + k);
    for (int j = 0; j < n; ++j) {
      const int m = patterns::pairwise_from(r, j, n);
      if (a.rcounts[m] <= c0) continue;
      copy(mptr(a.recv, a.rdispls[m] + c0, es), ex.in(m, 1 + k) + static_cast<size_t>(r) * per * es,
           std::min(per, a.rcounts[m] - c0) * es, Stores::kCached);
    }
  }
  return 1 + nc;
}

// Barrier, flat: publish, then see every member's flag (1 step).
uint64_t barrier_flat(Exec& ex, const Args&) {
  ex.step(0);
  ex.publish(0);
  for (int m = 0; m < ex.size(); ++m)
    if (m != ex.rank()) ex.in(m, 0);
  return 1;
}

// Barrier, dissemination: step k waits for member r-2^k only (ceil(log2 n) steps).
uint64_t barrier_dissemination(Exec& ex, const Args&) {
  const int n = ex.size(), r = ex.rank(), L = patterns::ceil_log2(n);
  for (int k = 0; k < L; ++k) {
    ex.step(k);
    ex.publish(k);
    ex.in(patterns::mod(r - (1 << k), n), k);
  }
  return static_cast<uint64_t>(L);
}

}  // namespace tessera::coll::algos
