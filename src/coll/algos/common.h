// Helpers shared by the algorithm implementations (algos/*.cc). Internal.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "base/memcopy.h"
#include "coll/algo.h"
#include "coll/engine.h"
#include "coll/patterns/patterns.h"
#include "coll/reduce/reduce.h"

namespace tessera::coll::algos {

using patterns::Range;

inline size_t esize(const Args& a) { return dtype_size(a.dtype); }
inline const char* cptr(const void* p, size_t elems, size_t es) { return static_cast<const char*>(p) + elems * es; }
inline char* mptr(void* p, size_t elems, size_t es) { return static_cast<char*>(p) + elems * es; }

// Slices start on 64-byte boundaries so that two members never write the same cache line.
inline size_t align_elems(size_t es) { return 64 / es ? 64 / es : 1; }

// Elements of one chunk that fit in `bytes` of staging, a multiple of the slice alignment (at least one unit).
inline size_t chunk_elems(size_t bytes, size_t es) {
  size_t al = align_elems(es);
  size_t e = bytes / es / al * al;
  return e ? e : al;
}
inline size_t nchunks(size_t count, size_t per) { return count ? (count + per - 1) / per : 0; }

// The pipelining loop of the staged algorithms: a payload of `total` elements moves in chunks of `per`
// elements (the last one may be shorter), and chunk k owns steps [first + k * spc, first + (k + 1) * spc).
//
//   const Chunks chunks(a.count, chunk_elems(ex.slot_bytes(), es), 2);
//   for (const Chunk c : chunks) { ex.step(c.step); ... elements [c.begin, c.begin + c.count) ... }
//   return chunks.steps();
//
// Every member must number the steps alike (tags, the flight recorder), so every member passes the same
// total, per, spc and first: the v variants pass the largest count and take each member's part of a chunk
// with Chunk::part().
struct Chunk {
  size_t begin;   // first element of the chunk
  size_t count;   // elements in it, at most per
  uint64_t step;  // its first step
  size_t per;     // elements of a full chunk (the stride of pieces packed in a slot)
  // Elements of this chunk within a payload of `total` elements: 0 where the payload ends before it.
  size_t part(size_t total) const { return total > begin ? std::min(per, total - begin) : 0; }
};
class Chunks {
 public:
  Chunks(size_t total, size_t per, uint64_t spc = 1, uint64_t first = 0)
      : total_(total), per_(per), spc_(spc), first_(first), n_(nchunks(total, per)) {}
  size_t size() const { return n_; }
  size_t per() const { return per_; }
  // The steps numbered up to the end of the last chunk (first included): what run() returns.
  uint64_t steps() const { return first_ + n_ * spc_; }

  class iterator {
   public:
    iterator(const Chunks* cs, size_t k) : cs_(cs), k_(k) {}
    Chunk operator*() const {
      const size_t b = k_ * cs_->per_;
      return {b, std::min(cs_->per_, cs_->total_ - b), cs_->first_ + k_ * cs_->spc_, cs_->per_};
    }
    iterator& operator++() { ++k_; return *this; }
    bool operator==(const iterator& o) const { return k_ == o.k_; }
   private:
    const Chunks* cs_;
    size_t k_;
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, n_}; }

 private:
  size_t total_, per_;
  uint64_t spc_, first_;
  size_t n_;
};

// Partial results of kAvg are sums; the division happens once, where the last input is folded in.
inline Op partial_op(Op op) { return op == Op::kAvg ? Op::kSum : op; }
inline int divisor(const Args& a, int n) { return a.op == Op::kAvg ? n : 0; }

// A communicator of one member: the result is its own input, converted by the op (avg divides by 1).
inline void reduce_alone(const Args& a) {
  const void* s[1] = {a.send};
  reduce(a.recv, s, 1, a.count, a.dtype, a.op, divisor(a, 1));
}

// Output writes: a collective's output is written in pieces, with the stores stores_for() picks for the
// whole output (base/memcopy.h): streamed when the whole would not stay in cache anyway.

// Writes into my staging slots, which peers read next (algos/stage.cc). Ordinary stores leave the lines
// in my caches, where a peer finds them; but every line a peer has read must first be taken back from it,
// one round trip per line, and across the CCXs of a Zen host (the slow phase of our VMs) that round trip
// dominates the rewrite, where streaming stores skip it and the peer then reads from memory no slower.
// Between CPUs that share a cache the ordinary stores win. Which case holds depends on where the host runs
// the CPUs at that moment, and either kind can lose by a wide margin in the other case (docs/coll.md,
// staging stores). So a member times its calls of 128 KiB and more per rank, per collective and size class,
// with each kind of store and uses the faster (stage_call_begin, comm.h). Writes below 64 KiB use
// ordinary stores (kStreamCopyMin, base/memcopy.h).
// stage: copy src into my slot. stage2: also into out (with the stores `out_stores`), one pass over src
// with ordinary staging stores.
void stage(Communicator& c, void* slot, const void* src, size_t bytes);
void stage2(Communicator& c, void* out, void* slot, const void* src, size_t bytes, Stores out_stores);
// Whether a staging write of `bytes` uses streaming stores now (for results a kernel writes elsewhere first).
bool stage_streams(const Communicator& c, size_t bytes);

// Alltoall direct stages at most this much of each piece per step: a member's pieces of a step and the
// peers' it copies out then stay in L2, where pieces of half a slot spilled from it (docs/coll.md, alltoall).
inline constexpr size_t kAlltoallPieceMax = size_t{256} << 10;

// Up to kMaxSources pointers without allocating (algorithms reading every member need n <= kMaxSources).
inline constexpr int kMaxSources = 256;
struct Srcs {
  const void* p[kMaxSources];
  int n = 0;
  void add(const void* x) { p[n++] = x; }
};

// Canonical reduction into a.recv of every member's step-t slot (a.count elements each), mine read from
// a.send instead: the one-shot allreduce and reduce, once every member has staged its input at step t.
inline void reduce_slots(Exec& ex, const Args& a, uint64_t t) {
  const int n = ex.size(), r = ex.rank();
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(m == r ? a.send : ex.in(m, t));
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
}

// Step c.step of the direct piecewise algorithms (alltoall, reduce-scatter): stage the piece of chunk c of
// every other member's block (block m of my input, at m * c.per elements into my slot) and publish it.
inline void stage_pieces(Exec& ex, const Args& a, const Chunk& c) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  char* o = ex.out(c.step);
  for (int m = 0; m < n; ++m)
    if (m != r) stage(ex.comm(), o + m * c.per * es, cptr(a.send, m * a.count + c.begin, es), c.count * es);
  ex.publish(c.step);
}

// Direct reduce-scatter of one chunk, the first half of allreduce and reduce `direct`. Step t = c.step:
// copy the slices of the chunk that the other members own into my slot and publish it; then collect the
// sources of my own slice in rank order (mine from my input, each peer's from its slot of step t, waiting
// for it). Returns my slice (elements of the chunk); s holds n sources.
inline Range direct_rs_chunk(Exec& ex, const Args& a, const Chunk& c, Srcs* s) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), al = align_elems(es);
  const uint64_t t = c.step;
  ex.step(t);
  char* o = ex.out(t);
  for (int m = 0; m < n; ++m) {
    if (m == r) continue;
    const Range sm = patterns::slice(c.count, n, m, al);
    stage(ex.comm(), o + sm.begin * es, cptr(a.send, c.begin + sm.begin, es), sm.size() * es);
  }
  ex.publish(t);
  const Range my = patterns::slice(c.count, n, r, al);
  for (int m = 0; m < n; ++m) s->add(m == r ? cptr(a.send, c.begin + my.begin, es) : ex.in(m, t) + my.begin * es);
  return my;
}

// The allgather half of direct allreduce (and of reduce at the root): copy every other member's reduced
// slice of chunk c from its slot of step t into my output, with `stores`.
inline void direct_ag_chunk(Exec& ex, const Args& a, const Chunk& c, uint64_t t, Stores stores) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), al = align_elems(es);
  for (int m = 0; m < n; ++m) {
    if (m == r) continue;
    const Range sm = patterns::slice(c.count, n, m, al);
    copy(mptr(a.recv, c.begin + sm.begin, es), ex.in(m, t) + sm.begin * es, sm.size() * es, stores);
  }
}

// The closing step t of the algorithms that read peers' buffers in place (cma.cc, zcopy.cc): I am done
// reading; wait until every other member is too, so that the caller may reuse its buffers on return.
inline void finish_all(Exec& ex, uint64_t t) {
  ex.publish(t);
  for (int m = 0; m < ex.size(); ++m)
    if (m != ex.rank()) ex.in(m, t);
}

}  // namespace tessera::coll::algos
