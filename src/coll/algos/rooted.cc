// Rooted collectives: broadcast (direct, chain), reduce (direct, one-shot), gather and scatter (direct), and
// their v variants (direct).
#include "base/log.h"
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// Broadcast, direct: the root publishes a chunk, every member copies it from the root's slot.
uint64_t broadcast_direct(Exec& ex, const Args& a) {
  const int r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = ex.size() == 1 ? 0 : nchunks(a.count, per);
  if (r == a.root && nc == 0) copy(a.recv, a.send, a.count * es, Stores::kCached);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    if (r == a.root) {
      // The root's own copy goes with each chunk it publishes, in the same pass over its input (in place:
      // staging only): the receivers start at once, and the input is read from memory once.
      stage2(ex.comm(), mptr(a.recv, c0, es), ex.out(k), cptr(a.send, c0, es), cnt * es, stores_for(a.count * es));
      ex.publish(k);
    } else {
      copy(mptr(a.recv, c0, es), ex.in(a.root, k), cnt * es, stores_for(a.count * es));
    }
  }
  return nc;
}

// Broadcast, chain: member root+i copies from member root+i-1 and republishes, pipelined over chunks.
uint64_t broadcast_chain(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const int pos = patterns::mod(r - a.root, n);
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = n == 1 ? 0 : nchunks(a.count, per);
  if (r == a.root) copy(a.recv, a.send, a.count * es, Stores::kCached);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    const char* src = pos == 0 ? cptr(a.send, c0, es) : ex.in(patterns::mod(r - 1, n), k);
    if (pos != 0) copy(mptr(a.recv, c0, es), src, cnt * es, Stores::kCached);
    if (pos != n - 1) {
      stage(ex.comm(), ex.out(k), src, cnt * es);
      ex.publish(k);
    }
  }
  return nc;
}

// Reduce, one-shot: every member publishes its input, the root reduces all of them (1 step).
uint64_t reduce_oneshot(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t bytes = a.count * esize(a);
  if (a.count == 0) return 0;
  ex.step(0);
  if (r != a.root) {
    stage(ex.comm(), ex.out(0), a.send, bytes);
    ex.publish(0);
    return 1;
  }
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(m == r ? a.send : ex.in(m, 0));
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  return 1;
}

// Reduce, direct: as allreduce_direct, but only the root gathers the reduced slices (2 steps per chunk).
uint64_t reduce_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), al = align_elems(es);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = nchunks(a.count, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    const uint64_t t = 2 * k;
    ex.step(t);
    char* o = ex.out(t);
    for (int m = 0; m < n; ++m) {
      if (m == r) continue;
      Range s = patterns::slice(cnt, n, m, al);
      stage(ex.comm(), o + s.begin * es, cptr(a.send, c0 + s.begin, es), s.size() * es);
    }
    ex.publish(t);
    Range my = patterns::slice(cnt, n, r, al);
    Srcs s;
    for (int m = 0; m < n; ++m) s.add(m == r ? cptr(a.send, c0 + my.begin, es) : ex.in(m, t) + my.begin * es);
    if (r == a.root) {
      reduce(mptr(a.recv, c0 + my.begin, es), s.p, n, my.size(), a.dtype, a.op, divisor(a, n));
    } else {
      reduce(ex.out(t + 1) + my.begin * es, s.p, n, my.size(), a.dtype, a.op, divisor(a, n));
      ex.publish(t + 1);
    }
    ex.step(t + 1);
    if (r != a.root) continue;
    for (int m = 0; m < n; ++m) {
      if (m == r) continue;
      Range sm = patterns::slice(cnt, n, m, al);
      copy(mptr(a.recv, c0 + sm.begin, es), ex.in(m, t + 1) + sm.begin * es, sm.size() * es, Stores::kCached);
    }
  }
  return 2 * nc;
}

// Gather, direct: every member publishes its piece, the root copies all of them into place.
uint64_t gather_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  const size_t nc = n == 1 ? 0 : nchunks(a.count, per);
  if (r == a.root) copy(mptr(a.recv, r * a.count, es), a.send, a.count * es, Stores::kCached);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    if (r != a.root) {
      stage(ex.comm(), ex.out(k), cptr(a.send, c0, es), cnt * es);
      ex.publish(k);
      continue;
    }
    for (int m = 0; m < n; ++m)
      if (m != r) copy(mptr(a.recv, m * a.count + c0, es), ex.in(m, k), cnt * es, Stores::kCached);
  }
  return nc;
}

// Scatter, direct: the root publishes one piece per member, each member copies its own.
uint64_t scatter_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es);
  const size_t nc = n == 1 ? 0 : nchunks(a.count, per);
  if (r == a.root) copy(a.recv, cptr(a.send, r * a.count, es), a.count * es, Stores::kCached);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per, cnt = std::min(per, a.count - c0);
    ex.step(k);
    if (r == a.root) {
      char* o = ex.out(k);
      for (int m = 0; m < n; ++m)
        if (m != r) stage(ex.comm(), o + static_cast<size_t>(m) * per * es, cptr(a.send, m * a.count + c0, es), cnt * es);
      ex.publish(k);
    } else {
      copy(mptr(a.recv, c0, es), ex.in(a.root, k) + static_cast<size_t>(r) * per * es, cnt * es, Stores::kCached);
    }
  }
  return nc;
}

// Gatherv, direct: step 0 publishes every member's count (the root checks each against its recvcounts, and
// every member takes the largest for the number of chunks, so all run the same steps); then as gather_direct,
// member m's piece into recv + rdispls[m] (displacements in elements).
uint64_t gatherv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const bool root = r == a.root;
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes(), es);
  if (root && a.count) copy(mptr(a.recv, a.rdispls[r], es), a.send, a.count * es, Stores::kCached);
  if (n == 1) return 0;
  ex.step(0);
  const uint64_t mine = a.count;
  std::memcpy(ex.out(0), &mine, sizeof mine);
  ex.publish(0);
  size_t maxc = 0;
  for (int m = 0; m < n; ++m) {
    uint64_t theirs;
    std::memcpy(&theirs, ex.in(m, 0), sizeof theirs);
    maxc = std::max<size_t>(maxc, theirs);
    if (root && theirs != a.rcounts[m])
      mismatch_fatal(fmt::format("gatherv on {}: rank {} (PE {}) sends {} elements to the root, rank {} (PE {}), "
                                 "which expects {}", ex.comm().name, m, ex.comm().world[m], theirs, r,
                                 ex.comm().world[r], a.rcounts[m]));
  }
  const size_t nc = nchunks(maxc, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per;
    ex.step(1 + k);
    if (!root) {
      if (a.count > c0) stage(ex.comm(), ex.out(1 + k), cptr(a.send, c0, es), std::min(per, a.count - c0) * es);
      ex.publish(1 + k);
      continue;
    }
    for (int m = 0; m < n; ++m)
      if (m != r && a.rcounts[m] > c0)
        copy(mptr(a.recv, a.rdispls[m] + c0, es), ex.in(m, 1 + k), std::min(per, a.rcounts[m] - c0) * es,
             Stores::kCached);
  }
  return 1 + nc;
}

// Scatterv, direct: step 0 the root publishes every member's count (each member checks its own against its
// recvcount; all take the largest); then as scatter_direct, the piece of member m from send + sdispls[m].
uint64_t scatterv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const bool root = r == a.root;
  const size_t es = esize(a);
  const size_t per = chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es);
  if (root && a.count) copy(a.recv, cptr(a.send, a.sdispls[r], es), a.count * es, Stores::kCached);
  if (n == 1) return 0;
  ex.step(0);
  if (root) {
    for (int m = 0; m < n; ++m) {
      const uint64_t c = a.scounts[m];
      std::memcpy(ex.out(0) + static_cast<size_t>(m) * sizeof c, &c, sizeof c);
    }
    ex.publish(0);
  }
  const char* counts = ex.in(a.root, 0);
  size_t maxc = 0;
  for (int m = 0; m < n; ++m) {
    uint64_t c;
    std::memcpy(&c, counts + static_cast<size_t>(m) * sizeof c, sizeof c);
    maxc = std::max<size_t>(maxc, c);
    if (m == r && c != a.count)
      mismatch_fatal(fmt::format("scatterv on {}: the root, rank {} (PE {}), sends {} elements to rank {} (PE {}), "
                                 "which expects {}", ex.comm().name, a.root, ex.comm().world[a.root], c, r,
                                 ex.comm().world[r], a.count));
  }
  const size_t nc = nchunks(maxc, per);
  for (size_t k = 0; k < nc; ++k) {
    const size_t c0 = k * per;
    ex.step(1 + k);
    if (root) {
      char* o = ex.out(1 + k);
      for (int m = 0; m < n; ++m)
        if (m != r && a.scounts[m] > c0)
          stage(ex.comm(), o + static_cast<size_t>(m) * per * es, cptr(a.send, a.sdispls[m] + c0, es),
                std::min(per, a.scounts[m] - c0) * es);
      ex.publish(1 + k);
    } else if (a.count > c0) {
      copy(mptr(a.recv, c0, es), ex.in(a.root, 1 + k) + static_cast<size_t>(r) * per * es,
           std::min(per, a.count - c0) * es, Stores::kCached);
    }
  }
  return 1 + nc;
}

}  // namespace tessera::coll::algos
