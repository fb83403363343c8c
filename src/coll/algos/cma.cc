// Single-copy collectives: members read peers' user buffers directly with process_vm_readv (coll/single_copy.h)
// instead of staging them through the shared segment. A call takes a fixed 2 or 3 synchronisations
// whatever its size (the staged algorithms take 1-2 per slot-sized chunk), which is what matters when
// members outnumber CPUs and every wait may cost a context switch.
//
// Every call has the same shape:
//   step 0: publish my buffer addresses (Ctrl::peer), wait until the peers I read from have published theirs
//   ...     copy (and reduce) straight from their buffers
//   last:   publish "done reading", wait until everyone that reads my buffers is done, so my caller may
//           reuse them as soon as the call returns
// The waits are Exec::in() (deadline, flight recorder, consistency check); the staging slots are unused.
#include "coll/algos/algos.h"
#include "coll/algos/common.h"
#include "base/memcopy.h"
#include "coll/single_copy.h"

namespace tessera::coll::algos {
namespace {

// Reduction inputs from peers go through a private bounce buffer of about L2 size in total, so each
// piece is reduced while still in cache.
constexpr size_t kBounceBytes = size_t{1} << 20;
constexpr size_t kMinPiece = size_t{16} << 10;

void publish_bufs(Exec& ex, const void* send, const void* recv) {
  Peer& p = ex.comm().ctrl[ex.rank()]->peer;
  p.send.store(reinterpret_cast<uint64_t>(send), std::memory_order_relaxed);
  p.recv.store(reinterpret_cast<uint64_t>(recv), std::memory_order_relaxed);
  ex.publish(0);  // seq_cst store of ready: the addresses are visible before it
}
const char* peer_send(Exec& ex, int m) {
  ex.in(m, 0);
  return reinterpret_cast<const char*>(ex.comm().ctrl[m]->peer.send.load(std::memory_order_relaxed));
}
const char* peer_recv(Exec& ex, int m) {
  ex.in(m, 0);
  return reinterpret_cast<const char*>(ex.comm().ctrl[m]->peer.recv.load(std::memory_order_relaxed));
}
// dst[0, cnt) = canonical reduction of n inputs: every member's input from byte `offset` on (mine read in
// place, peers' through the bounce buffer, piece by piece). Needs the peers' addresses (publish_bufs).
void reduce_from_peers(Exec& ex, const Args& a, size_t offset, char* dst, size_t cnt) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  const char* at[kMaxSources];
  for (int m = 0; m < n; ++m) at[m] = (m == r ? static_cast<const char*>(a.send) : peer_send(ex, m)) + offset;
  const size_t piece_bytes =
      std::max(kMinPiece, kBounceBytes / static_cast<size_t>(std::max(1, n - 1))) / 64 * 64;
  const size_t per = std::max<size_t>(1, piece_bytes / es);
  // A page more per member: each piece lands at its source's offset within a page, so the kernel's copy
  // never meets the aliasing case of base/memcopy.h (a copy several times slower).
  const size_t stride = per * es + 4096;
  char* bounce = ex.comm().scratch_bytes(static_cast<size_t>(n) * stride);
  for (const Chunk c : Chunks(cnt, per)) {  // pieces of one call, no steps of their own
    Srcs s;
    for (int m = 0; m < n; ++m) {
      const char* src = at[m] + c.begin * es;
      if (m == r) {
        s.add(src);
      } else {
        char* b = at_page_offset_of(bounce + static_cast<size_t>(m) * stride, src);
        cma_read(ex.comm(), m, b, src, c.count * es);
        s.add(b);
      }
    }
    reduce(dst + c.begin * es, s.p, n, c.count, a.dtype, a.op, divisor(a, n));
  }
}

// True when a reducing call has nothing to exchange: no elements, or a single member (whose result this
// writes).
bool nothing_to_exchange(Exec& ex, const Args& a) {
  if (a.count == 0) return true;
  if (ex.size() > 1) return false;
  reduce_alone(a);
  return true;
}
}  // namespace

// Reduce-scatter + allgather, 3 steps:
//   step 0: publish my input and output addresses
//   step 1: reduce my slice from every member's input (rank order) into my output; publish it
//   step 2: copy every other member's reduced slice from its output into mine; wait until all are done
// In place is safe: a member writes other members' slices of its buffer only after step 1, when nobody
// reads inputs any more, and nobody writes the slice a peer copies in step 2.
uint64_t allreduce_cma(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  if (nothing_to_exchange(ex, a)) return 0;
  // step 0: addresses
  publish_bufs(ex, a.send, a.recv);
  // step 1: reduce my slice
  const Range my = patterns::slice(a.count, n, r, align_elems(es));
  reduce_from_peers(ex, a, my.begin * es, mptr(a.recv, my.begin, es), my.size());
  ex.publish(1);
  // step 2: gather the other slices, starting with my right neighbour's (spreads the readers)
  for (int j = 1; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    const Range sm = patterns::slice(a.count, n, m, align_elems(es));
    const char* src = peer_recv(ex, m);
    ex.in(m, 1);
    cma_read(ex.comm(), m, mptr(a.recv, sm.begin, es), src + sm.begin * es, sm.size() * es);
  }
  finish_all(ex, 2);
  return 3;
}

// Each member reduces its block from every member's input (rank order) straight into its output; 2 steps.
uint64_t reduce_scatter_cma(Exec& ex, const Args& a) {
  const int r = ex.rank();
  const size_t es = esize(a);
  if (nothing_to_exchange(ex, a)) return 0;
  // step 0: addresses
  publish_bufs(ex, a.send, a.recv);
  reduce_from_peers(ex, a, static_cast<size_t>(r) * a.count * es, static_cast<char*>(a.recv), a.count);
  // step 1: done reading inputs
  finish_all(ex, 1);
  return 2;
}

// One read per peer straight into place; 2 steps.
uint64_t allgather_cma(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  if (a.count == 0) return 0;
  copy(mptr(a.recv, static_cast<size_t>(r) * a.count, es), a.send, bytes, stores_for(bytes * n));
  if (n == 1) return 0;
  // step 0: addresses
  publish_bufs(ex, a.send, a.recv);
  for (int j = 1; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    cma_read(ex.comm(), m, mptr(a.recv, static_cast<size_t>(m) * a.count, es), peer_send(ex, m), bytes);
  }
  // step 1: done reading
  finish_all(ex, 1);
  return 2;
}

// The single copy shared by the root and the receivers, so two CPUs copy at once: the root writes the first
// 1/n of every receiver's buffer with process_vm_writev while each receiver reads the other (n-1)/n from
// the root's buffer; 2 steps.
//   step 0: every member publishes its addresses (the root needs the receivers' outputs)
//   step 1: done (the root: every write; a receiver: its read); everyone waits for everyone
// Each side copies (n-1)/n of the payload, so two CPUs share the copy that a receiver reading it all makes
// alone (docs/coll.md, broadcast).
uint64_t broadcast_cma_split(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  if (a.count == 0) return 0;
  if (r == a.root) copy(a.recv, a.send, bytes, stores_for(bytes));
  if (n == 1) return 0;
  const size_t head = patterns::slice(a.count, n, 0, align_elems(es)).size() * es;
  publish_bufs(ex, a.send, a.recv);
  if (r == a.root) {
    for (int j = 1; j < n; ++j) {
      const int m = patterns::mod(r + j, n);
      cma_write(ex.comm(), m, const_cast<char*>(peer_recv(ex, m)), a.send, head);
    }
  } else {
    cma_read(ex.comm(), a.root, static_cast<char*>(a.recv) + head, peer_send(ex, a.root) + head, bytes - head);
  }
  finish_all(ex, 1);
  return 2;
}

// Every member reads the root's buffer; the root waits until all have; 2 steps.
uint64_t broadcast_cma(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t bytes = a.count * esize(a);
  if (a.count == 0) return 0;
  if (r == a.root) copy(a.recv, a.send, bytes, stores_for(bytes));
  if (n == 1) return 0;
  // step 0: the root's address
  if (r == a.root) {
    publish_bufs(ex, a.send, a.recv);
    finish_all(ex, 1);
  } else {
    cma_read(ex.comm(), a.root, a.recv, peer_send(ex, a.root), bytes);
    ex.publish(1);  // step 1: done reading (only the root waits for it)
  }
  return 2;
}

// Every member reads its piece of every peer's input straight into place; 2 steps. In place, a member
// overwrites pieces its peers have not read yet, so it publishes a private copy of its input instead.
uint64_t alltoall_cma(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  if (a.count == 0) return 0;
  const void* send = a.send;
  if (send == a.recv && n > 1) {
    char* copy_of = ex.comm().scratch_bytes(bytes * static_cast<size_t>(n));
    copy(copy_of, a.send, bytes * static_cast<size_t>(n), Stores::kCached);
    send = copy_of;
  }
  copy(mptr(a.recv, static_cast<size_t>(r) * a.count, es), cptr(send, static_cast<size_t>(r) * a.count, es), bytes,
       Stores::kCached);
  if (n == 1) return 0;
  // step 0: addresses
  publish_bufs(ex, send, a.recv);
  for (int j = 1; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    cma_read(ex.comm(), m, mptr(a.recv, static_cast<size_t>(m) * a.count, es),
             peer_send(ex, m) + static_cast<size_t>(r) * bytes, bytes);
  }
  // step 1: done reading
  finish_all(ex, 1);
  return 2;
}

}  // namespace tessera::coll::algos
