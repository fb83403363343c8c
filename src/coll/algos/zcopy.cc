// Zero copy for symmetric buffers: when every member's input and output lie in symmetric memory (the
// PGAS heap or data segment, which every PE of the host maps), the large "direct" algorithms read peers'
// buffers in place through those mappings instead of staging them: no staging copies, no syscall, 3 steps
// for allreduce and 2 for the others whatever the size.
//
// Agreement: buffer placement is a property of each member's call, not of the call description, so it is
// agreed inside the call. Step 0 publishes each member's buffers as offsets in the symmetric space (or 0
// when private); when every member published offsets, all take the zero-copy path, else all continue with
// the staged algorithm, renumbered after step 0 (Exec::advance). Only calls larger than a staging slot do
// this (one extra step where the staged algorithm takes many).
//
// Measured (docs/coll.md): reduce_scatter, allgather and broadcast gain at 2 and 4 ranks. allreduce and
// alltoall gain only when members outnumber CPUs (fewer steps, each a possible context switch); with a CPU
// each they ran slower than the staged algorithm, which reads and writes small slots that stay in cache
// and in the TLB, while the shared heap is mapped with 4 KiB pages (no transparent huge pages for shared
// memory on our hosts) and streaming whole buffers through it costs page walks. So those two keep the
// staged algorithm (and skip the agreement step) unless oversubscribed; members agree on that without
// exchanging anything (Communicator::oversubscribed).
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {
namespace {

uint64_t sym_word(Exec& ex, const void* p, size_t bytes) { return ex.comm().sym.word(p, bytes); }

// The address in my space of member m's symmetric object at word `word` (SymMap::word). The members of a
// communicator that runs these algorithms share a host (coll/hier/ runs the others), so each is mapped.
const char* peer_ptr(Exec& ex, int m, uint64_t word) { return ex.comm().sym.at(m, word); }

// Step 0 of a large call. Returns true, with every member's send (and recv) pointer in my space, when all
// members' buffers are symmetric; then everyone has published step 0 and read the others'. Returns false
// otherwise, having renumbered the call past step 0 (Exec::advance): the caller runs the staged algorithm.
struct Bufs {
  const char* send[kMaxSources];
  const char* recv[kMaxSources];
};
// only >= 0: only that member's send buffer matters (broadcast root).
bool agree(Exec& ex, const void* send, size_t sbytes, const void* recv, size_t rbytes, Bufs* b, int only = -1) {
  const int n = ex.size(), r = ex.rank();
  const size_t call = ex.comm().seq % kRecords;
  const uint64_t ws = sym_word(ex, send, sbytes), wr = sym_word(ex, recv, rbytes);
  const bool sym = (ws || !sbytes) && (wr || !rbytes);
  auto& mine = ex.comm().ctrl[r]->peer.sym[call];
  mine[0].store(sym ? ws : 0, std::memory_order_relaxed);
  mine[1].store(sym ? wr : 0, std::memory_order_relaxed);
  ex.publish(0);  // seq_cst: the words are visible before step 0 is
  bool all = sym;
  for (int m = 0; m < n; ++m) {
    if (m == r || (only >= 0 && m != only)) continue;
    ex.in(m, 0);
    const auto& w = ex.comm().ctrl[m]->peer.sym[call];
    const uint64_t s = w[0].load(std::memory_order_relaxed), t = w[1].load(std::memory_order_relaxed);
    const size_t sb = only >= 0 ? size_t{1} : sbytes;  // the root's word is what matters
    if ((sb && !s) || (rbytes && !t)) all = false;
    if (all) {
      b->send[m] = s ? peer_ptr(ex, m, s) : nullptr;
      b->recv[m] = rbytes ? peer_ptr(ex, m, t) : nullptr;
    }
  }
  b->send[r] = static_cast<const char*>(send);
  b->recv[r] = static_cast<const char*>(recv);
  if (!all) ex.advance(1);
  return all;
}

bool large(Exec& ex, size_t bytes) { return ex.size() > 1 && ex.size() <= kMaxSources && bytes > ex.slot_bytes(); }

// Copies a.count elements at byte offset `off` of every member m's input to piece m of my output, starting
// with my own and going round from there (members then read different inputs at once).
void gather_pieces(Exec& ex, const Args& a, const Bufs& b, size_t off) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  for (int j = 0; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    copy(mptr(a.recv, static_cast<size_t>(m) * a.count, es), b.send[m] + off, bytes, stores_for(bytes * n));
  }
}

}  // namespace

// Reduce-scatter + allgather in place: step 1 reduces my slice from every member's input (rank order,
// canonical) into my output; step 2 copies the other slices from their outputs; step 3 ends reading.
uint64_t allreduce_direct_zc(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  Bufs b;
  if (!large(ex, bytes) || !ex.comm().oversubscribed || !agree(ex, a.send, bytes, a.recv, bytes, &b))
    return allreduce_direct(ex, a);
  const Range my = patterns::slice(a.count, n, r, align_elems(es));
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(b.send[m] + my.begin * es);
  reduce(mptr(a.recv, my.begin, es), s.p, n, my.size(), a.dtype, a.op, divisor(a, n));
  ex.publish(1);
  for (int j = 1; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    const Range sm = patterns::slice(a.count, n, m, align_elems(es));
    ex.in(m, 1);
    copy(mptr(a.recv, sm.begin, es), b.recv[m] + sm.begin * es, sm.size() * es, stores_for(bytes));
  }
  finish_all(ex, 2);
  return 3;
}

// Each member reduces its block straight from every member's input.
uint64_t reduce_scatter_direct_zc(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  Bufs b;
  if (!large(ex, bytes) || !agree(ex, a.send, bytes * static_cast<size_t>(n), nullptr, 0, &b))
    return reduce_scatter_direct(ex, a);
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(b.send[m] + static_cast<size_t>(r) * bytes);
  reduce(a.recv, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
  finish_all(ex, 1);
  return 2;
}

// Every member copies every member's input into place.
uint64_t allgather_direct_zc(Exec& ex, const Args& a) {
  const size_t bytes = a.count * esize(a);
  Bufs b;
  if (!large(ex, bytes) || !agree(ex, a.send, bytes, nullptr, 0, &b)) return allgather_direct(ex, a);
  gather_pieces(ex, a, b, 0);
  finish_all(ex, 1);
  return 2;
}

// Every member copies the root's input. Only the root's buffer matters, but all publish (agreement).
uint64_t broadcast_direct_zc(Exec& ex, const Args& a) {
  const int r = ex.rank();
  const size_t bytes = a.count * esize(a);
  Bufs b;
  // Non-roots publish "symmetric" (nothing of theirs is read); the root its input's placement.
  if (!large(ex, bytes) ||
      !agree(ex, r == a.root ? a.send : nullptr, r == a.root ? bytes : 0, nullptr, 0, &b, a.root))
    return broadcast_direct(ex, a);
  if (r != a.root) copy(a.recv, b.send[a.root], bytes, stores_for(bytes));
  else copy(a.recv, a.send, bytes, stores_for(bytes));
  finish_all(ex, 1);
  return 2;
}

// Every member copies its piece of every member's input (only when members outnumber CPUs: see the top
// of the file). In place, a member would overwrite pieces its
// peers still read: in-place calls keep the staged algorithm (every member agrees: placement is published).
uint64_t alltoall_direct_zc(Exec& ex, const Args& a) {
  const size_t bytes = a.count * esize(a), n = static_cast<size_t>(ex.size());
  Bufs b;
  const bool ip = a.send == a.recv;
  // In place, publish "private": every member then keeps the staged algorithm.
  if (!large(ex, bytes) || !ex.comm().oversubscribed ||
      !agree(ex, ip ? nullptr : a.send, bytes * n, nullptr, 0, &b))
    return alltoall_direct(ex, a);
  gather_pieces(ex, a, b, static_cast<size_t>(ex.rank()) * bytes);
  finish_all(ex, 1);
  return 2;
}

}  // namespace tessera::coll::algos
