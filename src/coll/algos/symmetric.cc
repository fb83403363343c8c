// Direct reads and writes of symmetric buffers (Args::symmetric: the OpenSHMEM collectives' contract).
//
// Every PE of a host maps every peer's symmetric memory, so a member reaches member m's buffer at the same
// offset in m's mapping: no staging copy, no syscall, and, unlike the zero-copy path of the staged
// algorithms (zcopy.cc), no agreement step, since every member promises symmetric buffers alike.
//
// Two steps order the accesses, whatever the size:
//   step 0  "I have entered this call": every earlier call of mine is over, including peers' accesses to
//           my buffers; a member touches member m's buffers only after seeing m's step 0;
//   step 1  "I no longer touch anybody's buffers": a member returns only after every member whose reads or
//           writes reach its buffers has published step 1, so the caller may reuse them at once.
// A broadcast's non-roots touch only the root's buffer, so only the root waits for step 1.
//
// Reductions combine the n inputs in rank order in one pass (canonical), each element once, by one member,
// which writes the same bits into every member's output.
#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/memcopy.h"
#include "coll/algos/algos.h"
#include "coll/algos/common.h"

namespace tessera::coll::algos {
namespace {

// Member m's copy of my symmetric object p (bytes long), through the communicator's map of its members'
// symmetric memory. A member mapped nowhere here (another host) is an internal error, not a silent null: a
// communicator's engine members share one host (one whose members span hosts runs coll/hier/). So is an
// object outside the symmetric memory, which the API entry checked (Args::symmetric).
template <typename T>
T* at(Exec& ex, int m, T* p, size_t bytes) {
  if (m == ex.rank()) return p;
  const Communicator& c = ex.comm();
  const uint64_t w = c.sym.word(p, bytes);
  char* q = w ? c.sym.at(m, w) : nullptr;
  if (!q) [[unlikely]]
    log::fatal("{}: {} bytes at {} on rank {} (PE {}) are not mapped on this PE, so an in-place collective "
               "cannot reach them", c.caller ? c.caller : c.name.c_str(), bytes, static_cast<const void*>(p), m,
               c.world[static_cast<size_t>(m)]);
  return reinterpret_cast<T*>(q);
}

// Step 0: I have entered the call (every earlier access to my buffers is over).
void enter(Exec& ex) {
  ex.step(0);
  ex.publish(0);
}

// Step t from everyone: everybody entered the call (0) or nobody touches my buffers any more (1).
void wait_all(Exec& ex, uint64_t t) {
  for (int m = 0; m < ex.size(); ++m)
    if (m != ex.rank()) ex.in(m, t);
}

// Reductions up to this size: every member reduces the whole payload into a private buffer (one read of
// each input, no writes into peers' lines), then writes its own output once nobody reads its input.
constexpr size_t kWholeBytes = 4096;
// Larger ones: member i reduces its slice of the payload in blocks of this size and writes each block
// into every member's output.
constexpr size_t kBlockBytes = 16 << 10;

}  // namespace

uint64_t allreduce_symmetric(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;  // every member passes the same count: nothing to order
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  enter(ex);
  wait_all(ex, 0);
  Srcs s;
  for (int m = 0; m < n; ++m) s.add(at(ex, m, static_cast<const char*>(a.send), bytes));
  if (bytes <= kWholeBytes) {
    alignas(64) char buf[kWholeBytes];
    reduce(buf, s.p, n, a.count, a.dtype, a.op, divisor(a, n));
    finish_all(ex, 1);  // in place, my input is my output: everyone has read it
    memcopy(a.recv, buf, bytes);
    return 2;
  }
  const Range my = patterns::slice(a.count, n, r, align_elems(es));
  const size_t block = std::max<size_t>(1, kBlockBytes / es);
  alignas(64) char buf[kBlockBytes + 64];
  Srcs part;
  for (size_t b = my.begin; b < my.end; b += block) {
    const size_t k = std::min(block, my.end - b);
    part.n = 0;
    for (int m = 0; m < n; ++m) part.add(static_cast<const char*>(s.p[m]) + b * es);
    reduce(buf, part.p, n, k, a.dtype, a.op, divisor(a, n));
    // Every output's block, starting with the next member's (members spread their writes).
    for (int j = 1; j <= n; ++j) {
      const int m = patterns::mod(r + j, n);
      copy(at(ex, m, static_cast<char*>(a.recv), bytes) + b * es, buf, k * es, Stores::kCached);
    }
  }
  finish_all(ex, 1);
  return 2;
}

uint64_t broadcast_symmetric(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;  // every member passes the same count: nothing to order
  const int r = ex.rank();
  const size_t bytes = a.count * esize(a);
  enter(ex);
  if (r != a.root) {
    ex.in(a.root, 0);
    copy(a.recv, at(ex, a.root, static_cast<const char*>(a.send), bytes), bytes, stores_for(bytes));
  } else if (a.recv != a.send) {
    copy(a.recv, a.send, bytes, stores_for(bytes));
  }
  ex.step(1);
  ex.publish(1);
  if (r == a.root) wait_all(ex, 1);
  return 2;
}

// fcollect: every member copies every member's input into place, its own first.
uint64_t allgather_symmetric(Exec& ex, const Args& a) {
  if (a.count == 0) return 0;  // every member passes the same count: nothing to order
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es;
  enter(ex);
  for (int j = 0; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    char* to = mptr(a.recv, static_cast<size_t>(m) * a.count, es);
    if (m != r) ex.in(m, 0);
    const char* from = at(ex, m, static_cast<const char*>(a.send), bytes);
    if (to != from) copy(to, from, bytes, stores_for(bytes * static_cast<size_t>(n)));
  }
  finish_all(ex, 1);
  return 2;
}

// collect: as allgather with each member's count and displacement (Args::rcounts, rdispls).
uint64_t allgatherv_symmetric(Exec& ex, const Args& a) {
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a);
  enter(ex);
  for (int j = 0; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    const size_t b = a.rcounts[m] * es;
    if (m != r) ex.in(m, 0);
    if (b == 0) continue;
    char* to = mptr(a.recv, a.rdispls[m], es);
    const char* from = at(ex, m, static_cast<const char*>(a.send), b);
    if (to != from) copy(to, from, b, Stores::kCached);
  }
  finish_all(ex, 1);
  return 2;
}

// Member r copies piece r of every member's input into block m of its output. In place a member would
// overwrite pieces its peers still read: every member passes the same addresses, so all take the staged
// algorithm alike.
uint64_t alltoall_symmetric(Exec& ex, const Args& a) {
  if (a.send == a.recv) return alltoall_direct(ex, a);
  if (a.count == 0) return 0;  // every member passes the same count: nothing to order
  const int n = ex.size(), r = ex.rank();
  const size_t es = esize(a), bytes = a.count * es, total = bytes * static_cast<size_t>(n);
  enter(ex);
  for (int j = 0; j < n; ++j) {
    const int m = patterns::mod(r + j, n);
    if (m != r) ex.in(m, 0);
    const char* from = at(ex, m, static_cast<const char*>(a.send), total) + static_cast<size_t>(r) * bytes;
    copy(mptr(a.recv, static_cast<size_t>(m) * a.count, es), from, bytes, stores_for(total));
  }
  finish_all(ex, 1);
  return 2;
}

// Scans: member r folds the inputs of members 0..r (inclusive) or 0..r-1 (exclusive) in rank order; the
// exclusive scan leaves zeros on member 0. In place, the result waits in a private buffer until every
// member has read this member's input.
namespace {
uint64_t scan_symmetric(Exec& ex, const Args& a, bool inclusive) {
  if (a.count == 0) return 0;  // every member passes the same count: nothing to order
  const int n = ex.size(), r = ex.rank(), upto = inclusive ? r + 1 : r;
  const size_t es = esize(a), bytes = a.count * es;
  enter(ex);
  const bool in_place = a.send == a.recv;
  char* out = in_place ? ex.comm().scratch_bytes(bytes) : static_cast<char*>(a.recv);
  if (upto == 0) {
    std::memset(out, 0, bytes);
  } else {
    Srcs s;
    for (int m = 0; m < upto; ++m) {
      if (m != r) ex.in(m, 0);
      s.add(at(ex, m, static_cast<const char*>(a.send), bytes));
    }
    reduce(out, s.p, upto, a.count, a.dtype, a.op, 0);
  }
  ex.step(1);
  ex.publish(1);
  // Members after me read my input.
  for (int m = r + 1; m < n; ++m) ex.in(m, 1);
  if (in_place) memcopy(a.recv, out, bytes);
  return 2;
}
}  // namespace

uint64_t inscan_symmetric(Exec& ex, const Args& a) { return scan_symmetric(ex, a, true); }
uint64_t exscan_symmetric(Exec& ex, const Args& a) { return scan_symmetric(ex, a, false); }

}  // namespace tessera::coll::algos
