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
  const Stores stream = stores_for(a.count * es);
  const Chunks chunks(ex.size() == 1 ? 0 : a.count, chunk_elems(ex.slot_bytes(), es));  // alone: no steps
  if (r == a.root && chunks.size() == 0) copy(a.recv, a.send, a.count * es, Stores::kCached);
  for (const Chunk c : chunks) {
    ex.step(c.step);
    if (r == a.root) {
      // The root's own copy goes with each chunk it publishes, in the same pass over its input (in place:
      // staging only): the receivers start at once, and the input is read from memory once.
      stage2(ex.comm(), mptr(a.recv, c.begin, es), ex.out(c.step), cptr(a.send, c.begin, es), c.count * es, stream);
      ex.publish(c.step);
    } else {
      copy(mptr(a.recv, c.begin, es), ex.in(a.root, c.step), c.count * es, stream);
    }
  }
  return chunks.steps();
}

// Broadcast, chain: member root+i copies from member root+i-1 and republishes, pipelined over chunks.
uint64_t broadcast_chain(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const int pos = patterns::mod(r - a.root, n);
  const size_t es = esize(a);
  if (r == a.root) copy(a.recv, a.send, a.count * es, Stores::kCached);
  const Chunks chunks(n == 1 ? 0 : a.count, chunk_elems(ex.slot_bytes(), es));  // alone: no steps
  for (const Chunk c : chunks) {
    ex.step(c.step);
    const char* src = pos == 0 ? cptr(a.send, c.begin, es) : ex.in(patterns::mod(r - 1, n), c.step);
    if (pos != 0) copy(mptr(a.recv, c.begin, es), src, c.count * es, Stores::kCached);
    if (pos != n - 1) {
      stage(ex.comm(), ex.out(c.step), src, c.count * es);
      ex.publish(c.step);
    }
  }
  return chunks.steps();
}

// Reduce, one-shot: every member publishes its input, the root reduces all of them (1 step).
uint64_t reduce_oneshot(Exec& ex, const Args& a) {
  const int r = ex.rank();
  const size_t bytes = a.count * esize(a);
  if (a.count == 0) return 0;
  ex.step(0);
  if (r != a.root) {
    stage(ex.comm(), ex.out(0), a.send, bytes);
    ex.publish(0);
    return 1;
  }
  reduce_slots(ex, a, 0);
  return 1;
}

// Reduce, direct: as allreduce_direct, but only the root gathers the reduced slices (2 steps per chunk).
uint64_t reduce_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), 2);
  for (const Chunk c : chunks) {
    const uint64_t t = c.step;
    Srcs s;
    const Range my = direct_rs_chunk(ex, a, c, &s);
    if (r == a.root) {
      reduce(mptr(a.recv, c.begin + my.begin, es), s.p, n, my.size(), a.dtype, a.op, divisor(a, n));
    } else {
      reduce(ex.out(t + 1) + my.begin * es, s.p, n, my.size(), a.dtype, a.op, divisor(a, n));
      ex.publish(t + 1);
    }
    ex.step(t + 1);
    if (r == a.root) direct_ag_chunk(ex, a, c, t + 1, Stores::kCached);
  }
  return chunks.steps();
}

// Gather, direct: every member publishes its piece, the root copies all of them into place.
uint64_t gather_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  if (r == a.root) copy(mptr(a.recv, r * a.count, es), a.send, a.count * es, Stores::kCached);
  const Chunks chunks(n == 1 ? 0 : a.count, chunk_elems(ex.slot_bytes(), es));  // alone: no steps
  for (const Chunk c : chunks) {
    ex.step(c.step);
    if (r != a.root) {
      stage(ex.comm(), ex.out(c.step), cptr(a.send, c.begin, es), c.count * es);
      ex.publish(c.step);
      continue;
    }
    for (int m = 0; m < n; ++m)
      if (m != r) copy(mptr(a.recv, m * a.count + c.begin, es), ex.in(m, c.step), c.count * es, Stores::kCached);
  }
  return chunks.steps();
}

// Scatter, direct: the root publishes one piece per member, each member copies its own.
uint64_t scatter_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  if (r == a.root) copy(a.recv, cptr(a.send, r * a.count, es), a.count * es, Stores::kCached);
  const Chunks chunks(n == 1 ? 0 : a.count, chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es));
  for (const Chunk c : chunks) {
    ex.step(c.step);
    if (r == a.root) {
      char* o = ex.out(c.step);
      for (int m = 0; m < n; ++m)
        if (m != r) stage(ex.comm(), o + m * c.per * es, cptr(a.send, m * a.count + c.begin, es), c.count * es);
      ex.publish(c.step);
    } else {
      copy(mptr(a.recv, c.begin, es), ex.in(a.root, c.step) + r * c.per * es, c.count * es, Stores::kCached);
    }
  }
  return chunks.steps();
}

// Gatherv, direct: step 0 publishes every member's count (the root checks each against its recvcounts, and
// every member takes the largest for the number of chunks, so all run the same steps); then as gather_direct,
// member m's piece into recv + rdispls[m] (displacements in elements).
uint64_t gatherv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const bool root = r == a.root;
  const size_t es = esize(a);
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
  const Chunks chunks(maxc, chunk_elems(ex.slot_bytes(), es), 1, 1);
  for (const Chunk c : chunks) {
    ex.step(c.step);
    if (!root) {
      if (const size_t mine = c.part(a.count)) stage(ex.comm(), ex.out(c.step), cptr(a.send, c.begin, es), mine * es);
      ex.publish(c.step);
      continue;
    }
    for (int m = 0; m < n; ++m)
      if (m != r && c.part(a.rcounts[m]))
        copy(mptr(a.recv, a.rdispls[m] + c.begin, es), ex.in(m, c.step), c.part(a.rcounts[m]) * es, Stores::kCached);
  }
  return chunks.steps();
}

// Scatterv, direct: step 0 the root publishes every member's count (each member checks its own against its
// recvcount; all take the largest); then as scatter_direct, the piece of member m from send + sdispls[m].
uint64_t scatterv_direct(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const bool root = r == a.root;
  const size_t es = esize(a);
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
  const Chunks chunks(maxc, chunk_elems(ex.slot_bytes() / static_cast<size_t>(n), es), 1, 1);
  for (const Chunk c : chunks) {
    ex.step(c.step);
    if (root) {
      char* o = ex.out(c.step);
      for (int m = 0; m < n; ++m)
        if (m != r && c.part(a.scounts[m]))
          stage(ex.comm(), o + m * c.per * es, cptr(a.send, a.sdispls[m] + c.begin, es), c.part(a.scounts[m]) * es);
      ex.publish(c.step);
    } else if (const size_t mine = c.part(a.count)) {
      copy(mptr(a.recv, c.begin, es), ex.in(a.root, c.step) + r * c.per * es, mine * es, Stores::kCached);
    }
  }
  return chunks.steps();
}

}  // namespace tessera::coll::algos
