// Helpers shared by the algorithm implementations (algos/*.cc). Internal.
#pragma once
#include <algorithm>
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

}  // namespace tessera::coll::algos
