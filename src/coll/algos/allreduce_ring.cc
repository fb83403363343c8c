// Allreduce by ring (reduce-scatter then allgather, 2(n-1) steps per chunk) and by recursive
// halving-doubling (Rabenseifner, with the non-power-of-two fold). Both combine partial results, so the
// order of additions depends on the position of an element: not canonical.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {

// Ring, pipelined: a chunk is n blocks of at most one slot each; 2n-1 steps per chunk.
uint64_t allreduce_ring(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const int left = patterns::ring_left(r, n);
  const size_t es = esize(a), al = align_elems(es);
  const Op pop = partial_op(a.op);
  if (n == 1) {
    reduce_alone(a);
    return 0;
  }
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es) * static_cast<size_t>(n), 2 * n - 1);
  for (const Chunk c : chunks) {
    const uint64_t b = c.step;
    auto blk = [&](int j) { return patterns::slice(c.count, n, j, al); };
    // prologue: publish my own block for my right neighbour
    ex.step(b);
    Range mine = blk(r);
    stage(ex.comm(), ex.out(b), cptr(a.send, c.begin + mine.begin, es), mine.size() * es);
    ex.publish(b);
    // n-1 steps: add my contribution to the partial my left neighbour published, publish the sum
    for (int s = 0; s < n - 1; ++s) {
      ex.step(b + s);
      Range bj = blk(patterns::ring_rs_block(r, s, n));
      const void* src[2] = {ex.in(left, b + s), cptr(a.send, c.begin + bj.begin, es)};
      char* o = ex.out(b + s + 1);
      bool last = s == n - 2;
      reduce(o, src, 2, bj.size(), a.dtype, last ? a.op : pop, last ? divisor(a, n) : 0);
      ex.publish(b + s + 1);
      if (last) copy(mptr(a.recv, c.begin + bj.begin, es), o, bj.size() * es, Stores::kCached);
    }
    // n-1 steps: take the final block from my left neighbour, pass it on
    for (int s = 0; s < n - 1; ++s) {
      const uint64_t t = b + n - 1 + s;
      ex.step(t);
      Range bj = blk(patterns::ring_ag_block(r, s, n));
      const char* in = ex.in(left, t);
      copy(mptr(a.recv, c.begin + bj.begin, es), in, bj.size() * es, Stores::kCached);
      if (s < n - 2) {
        stage(ex.comm(), ex.out(t + 1), in, bj.size() * es);
        ex.publish(t + 1);
      }
    }
  }
  return chunks.steps();
}

// Recursive halving-doubling over chunks of one slot; the result is built in the output buffer.
// Steps per chunk: fold, log2(p2) halvings, log2(p2) doublings, unfold.
uint64_t allreduce_rhd(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const patterns::Rhd p = patterns::rhd_plan(n);
  const int v = patterns::rhd_vrank(p, r);
  const size_t es = esize(a), al = align_elems(es);
  const uint64_t spc = 2 * static_cast<uint64_t>(p.levels) + 2;
  const Op pop = partial_op(a.op);
  if (n == 1) {
    reduce_alone(a);
    return 0;
  }
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), spc);
  for (const Chunk c : chunks) {
    const uint64_t b = c.step;
    char* work = mptr(a.recv, c.begin, es);
    copy(work, cptr(a.send, c.begin, es), c.count * es, Stores::kCached);
    // Element range of blocks [lo, hi) of the p2 blocks of this chunk.
    auto elems = [&](int lo, int hi) {
      return Range{patterns::slice(c.count, p.p2, lo, al).begin, patterns::slice(c.count, p.p2, hi - 1, al).end};
    };
    // fold: an even rank among the first 2*extra hands its chunk to the odd one above it
    ex.step(b);
    if (r < 2 * p.extra && (r & 1) == 0) {
      stage(ex.comm(), ex.out(b), work, c.count * es);
      ex.publish(b);
    } else if (r < 2 * p.extra) {
      const void* src[2] = {ex.in(r - 1, b), work};
      reduce(work, src, 2, c.count, a.dtype, p.levels == 0 ? a.op : pop, p.levels == 0 ? divisor(a, n) : 0);
    }
    // Level-l exchange at step t with my partner: stage the blocks one of us keeps at level l + 1 (its, when
    // halving; mine, when doubling) for it, then hand the partner's staged copy of the other blocks to
    // take(partner, theirs, mine in work, elements).
    auto exchange = [&](uint64_t t, int l, bool halving, auto take) {
      ex.step(t);
      if (v < 0) return;
      const int pv = patterns::rhd_partner(p, v, l), pr = patterns::rhd_real(p, pv);
      int lo, hi;
      patterns::rhd_range(p, halving ? pv : v, l + 1, &lo, &hi);
      const Range out = elems(lo, hi);
      stage(ex.comm(), ex.out(t) + out.begin * es, work + out.begin * es, out.size() * es);
      ex.publish(t);
      patterns::rhd_range(p, halving ? v : pv, l + 1, &lo, &hi);
      const Range in = elems(lo, hi);
      take(pr, ex.in(pr, t) + in.begin * es, work + in.begin * es, in.size());
    };
    // halving: keep half of my range, reduce it with my partner's copy of that half
    for (int l = 0; l < p.levels; ++l) {
      exchange(b + 1 + l, l, true, [&](int pr, const char* theirs, char* w, size_t count) {
        const void* src[2] = {pr < r ? static_cast<const void*>(theirs) : w,
                              pr < r ? static_cast<const void*>(w) : theirs};
        bool last = l == p.levels - 1;
        reduce(w, src, 2, count, a.dtype, last ? a.op : pop, last ? divisor(a, n) : 0);
      });
    }
    // doubling: exchange the reduced ranges back
    for (int l = p.levels - 1; l >= 0; --l) {
      exchange(b + 1 + p.levels + (p.levels - 1 - l), l, false, [&](int, const char* theirs, char* w, size_t count) {
        copy(w, theirs, count * es, Stores::kCached);
      });
    }
    // unfold: the odd rank hands the result back to its folded-out partner
    const uint64_t t = b + spc - 1;
    ex.step(t);
    if (r < 2 * p.extra && (r & 1)) {
      stage(ex.comm(), ex.out(t), work, c.count * es);
      ex.publish(t);
    } else if (r < 2 * p.extra) {
      copy(work, ex.in(r + 1, t), c.count * es, Stores::kCached);
    }
  }
  return chunks.steps();
}

// Double binary tree: half of each chunk is reduced up tree 0 and broadcast down it, the other half uses
// tree 1 (mirrored ranks), so every member does the work of an interior node in about one tree. Each
// tree's phase has its own step (up 0, up 1, down 0, down 1): a phase of one tree only waits within that
// tree, so the two trees cannot wait on each other.
uint64_t allreduce_dbtree(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), al = align_elems(es);
  const Op pop = partial_op(a.op);
  patterns::TreeNode node[2] = {patterns::dtree(n, 0, r), patterns::dtree(n, 1, r)};
  const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), 4);
  for (const Chunk c : chunks) {
    const uint64_t b = c.step;
    // up: reduce my half-chunk with my children's partials; the root's result goes to the output
    for (int h = 0; h < 2; ++h) {
      const uint64_t u = b + h;
      ex.step(u);
      Range R = patterns::slice(c.count, 2, h, al);
      Srcs s;
      s.add(cptr(a.send, c.begin + R.begin, es));
      for (int c : node[h].child)
        if (c >= 0) s.add(ex.in(c, u) + R.begin * es);
      if (node[h].parent < 0) {
        reduce(mptr(a.recv, c.begin + R.begin, es), s.p, s.n, R.size(), a.dtype, a.op, divisor(a, n));
      } else {
        reduce(ex.out(u) + R.begin * es, s.p, s.n, R.size(), a.dtype, pop, 0);
        ex.publish(u);
      }
    }
    // down: take the result from my parent (roots already have it), pass it to my children
    for (int h = 0; h < 2; ++h) {
      const uint64_t d = b + 2 + h;
      ex.step(d);
      Range R = patterns::slice(c.count, 2, h, al);
      char* dst = mptr(a.recv, c.begin + R.begin, es);
      if (node[h].parent >= 0) copy(dst, ex.in(node[h].parent, d) + R.begin * es, R.size() * es, Stores::kCached);
      if (node[h].child[0] >= 0 || node[h].child[1] >= 0) {
        stage(ex.comm(), ex.out(d) + R.begin * es, dst, R.size() * es);
        ex.publish(d);
      }
    }
  }
  return chunks.steps();
}

}  // namespace tessera::coll::algos
