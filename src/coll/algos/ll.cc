// Algorithms on the LL protocol (engine.h: ll_out/ll_publish/ll_in): small allreduce, reduce_scatter,
// allgather, broadcast, reduce, alltoall, gather and scatter; the barrier on LL is in barrier.cc with the
// other barrier rows. One wait per peer and no step counters; the payload is at most
// kLLBytes. Every member publishes a flag and reads every peer's, also where it needs no peer's data (the
// root of a broadcast, the receivers of a reduce): each member then sees every peer's call description
// (a root that differs is a mismatch, not a silent result) and every call proves that its peers have
// left call s-1, so call s+1 may rewrite the buffers of s-1 without waiting (ll.cc in coll/).
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

#include <cstring>

#include "base/memcopy.h"

namespace tessera::coll::algos {

// Every member publishes its input in its LL buffer, then reduces all n inputs in rank order (canonical:
// the same bits as oneshot and direct).
uint64_t allreduce_ll(Exec& ex, const Args& a) {
  const int n = ex.size();
  if (a.count == 0) return 0;
  // publish my input
  const size_t bytes = a.count * esize(a);
  ex.ll_put(a.send, bytes);
  // Reduce every member's input, in rank order; mine from the send buffer, not from my LL buffer. The
  // line just published is being read by the peers: a load of it stalls until their reads are answered
  // (a cache-line transfer, a large part of a small call across CCXs; docs/journal.md, "LL protocol"), while
  // the send buffer is private and in cache.
  Srcs s;
  ex.ll_in_all(s.p, [&](int) { return bytes; });
  s.p[ex.rank()] = a.send;
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  return 0;
}

// Every member publishes its whole input (n blocks); each reduces block r of all n inputs in rank order
// (canonical, as allreduce_ll), mine from my send buffer. In place (recv = send + r blocks) the kernel
// reads every source's element before it writes it, as in allreduce_ll.
uint64_t reduce_scatter_ll(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  if (a.count == 0) return 0;
  const size_t block = a.count * esize(a), bytes = block * static_cast<size_t>(n);
  ex.ll_put(a.send, bytes);
  Srcs s;
  ex.ll_in_all(s.p, [&](int) { return bytes; });
  s.p[r] = a.send;
  for (int m = 0; m < n; ++m) s.p[m] = static_cast<const char*>(s.p[m]) + static_cast<size_t>(r) * block;
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  return 0;
}

namespace {
// Every member publishes `published` bytes of its input and reads every peer's flag. With `out` set, each
// copies `piece` bytes at offset `off` of every member's payload to out + m * piece (its own from its send
// buffer; nothing when that is already in place).
void collect_ll(Exec& ex, const Args& a, size_t published, size_t off, size_t piece, char* out) {
  const int n = ex.size(), r = ex.rank();
  ex.ll_put(a.send, published);
  const char* in[kMaxSources];
  ex.ll_in_all(in, [&](int) { return published; });
  if (!out) return;
  for (int m = 0; m < n; ++m) {
    const char* src = (m == r ? static_cast<const char*>(a.send) : in[m]) + off;
    if (out + m * piece != src) memcopy(out + m * piece, src, piece);
  }
}

// The root publishes `published` bytes of its send buffer, the others a flag; every member reads every
// peer's flag and copies `piece` bytes at offset `off` of the root's payload to recv (the root from its send
// buffer, unless in place).
void from_root_ll(Exec& ex, const Args& a, size_t published, size_t off, size_t piece) {
  const int r = ex.rank();
  if (r == a.root) {
    ex.ll_put(a.send, published);
    const char* mine = static_cast<const char*>(a.send) + off;
    if (a.recv != mine) memcopy(a.recv, mine, piece);
  } else {
    ex.ll_out(0);
    ex.ll_publish();
  }
  const char* in[kMaxSources];
  ex.ll_in_all(in, [&](int m) { return m == a.root ? published : 0; });
  if (r != a.root) memcopy(a.recv, in[a.root] + off, piece);
}
}  // namespace

// Every member publishes its piece; each copies every member's into place (mine from my input).
uint64_t allgather_ll(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;
  const size_t bytes = a.count * esize(a);
  collect_ll(ex, a, bytes, 0, bytes, static_cast<char*>(a.recv));
  return 0;
}

// The root publishes its buffer, the others a flag; each receiver copies the root's payload.
uint64_t broadcast_ll(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;
  const size_t bytes = a.count * esize(a);
  from_root_ll(ex, a, bytes, 0, bytes);
  return 0;
}

// Every member publishes its input; the root reduces all n in rank order (canonical, as allreduce_ll).
uint64_t reduce_ll(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  if (a.count == 0) return 0;
  const size_t bytes = a.count * esize(a);
  if (r != a.root) {
    collect_ll(ex, a, bytes, 0, bytes, nullptr);
    return 0;
  }
  ex.ll_put(a.send, bytes);
  Srcs s;
  ex.ll_in_all(s.p, [&](int) { return bytes; });
  s.p[r] = a.send;
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  return 0;
}

// Every member publishes its whole input (n pieces); each copies piece r of every peer's (mine from my
// input). In place is safe: my input is in my LL buffer before any piece of recv is overwritten.
uint64_t alltoall_ll(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;
  const size_t piece = a.count * esize(a), r = static_cast<size_t>(ex.rank());
  collect_ll(ex, a, piece * static_cast<size_t>(ex.size()), r * piece, piece, static_cast<char*>(a.recv));
  return 0;
}

// Every member publishes its piece; the root copies every member's into place, the others only see every
// peer's flag (as reduce_ll).
uint64_t gather_ll(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;
  const size_t bytes = a.count * esize(a);
  collect_ll(ex, a, bytes, 0, bytes, ex.rank() == a.root ? static_cast<char*>(a.recv) : nullptr);
  return 0;
}

// The root publishes its n pieces, the others a flag; each member copies its own piece.
uint64_t scatter_ll(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;
  const size_t piece = a.count * esize(a);
  from_root_ll(ex, a, piece * static_cast<size_t>(ex.size()), static_cast<size_t>(ex.rank()) * piece, piece);
  return 0;
}

}  // namespace tessera::coll::algos
