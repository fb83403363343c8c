// The rows across hosts that move data (and the scans, folds of moved data); their formulas: hier/rows.cc.
#include <algorithm>
#include <cstring>

#include "base/memcopy.h"
#include "coll/hier/compose.h"
#include "coll/hier/net.h"

namespace tessera::coll::across {

// Allgather(v): each host's blocks gathered on the host, the host blocks exchanged by the leaders' ring,
// the whole broadcast on each host (allgatherv_bytes).
Status allgather_leaders(Communicator& c, const Args& a, bool v) {
  const size_t n = static_cast<size_t>(c.size), es = dtype_size(a.dtype);
  std::vector<size_t> offs(n), lens(n);
  for (size_t r = 0; r < n; ++r) {
    lens[r] = (v ? a.rcounts[r] : a.count) * es;
    offs[r] = v ? a.rdispls[r] * es : r * a.count * es;
  }
  return allgatherv_bytes(c, *c.hier, a.send, static_cast<char*>(a.recv), offs, lens);
}
Status allgather(Communicator& c, const Args& a) { return allgather_leaders(c, a, false); }
Status allgatherv(Communicator& c, const Args& a) { return allgather_leaders(c, a, true); }

// Broadcast: a binomial tree over one entry per host (the root on its own host), then the hosts' own.
Status broadcast_tree(Communicator& c, const Args& a) {
  const size_t bytes = a.count * dtype_size(a.dtype);
  if (c.rank == a.root && a.send != a.recv && bytes) memcopy(a.recv, a.send, bytes);
  return bcast_bytes(c, *c.hier, static_cast<char*>(a.recv), bytes, a.root);
}

// Gather(v): everyone learns every count, gathers everything, and the root keeps it at its displacements.
Status gather_via_allgather(Communicator& c, const Args& a, bool v) {
  Hier& h = *c.hier;
  const size_t n = static_cast<size_t>(c.size), es = dtype_size(a.dtype);
  const uint64_t my_len = a.count * es;
  std::vector<uint64_t> all_lens(n);
  TS_RETURN_IF_ERROR(allgather_packed(c, h, &my_len, reinterpret_cast<char*>(all_lens.data()), sizeof my_len));
  std::vector<size_t> lens(n), offs(n);
  size_t sum = 0;
  for (size_t r = 0; r < n; ++r) lens[r] = all_lens[r], offs[r] = sum, sum += lens[r];
  std::vector<char> all(sum);
  TS_RETURN_IF_ERROR(allgatherv_bytes(c, h, a.send, all.data(), offs, lens));
  if (c.rank != a.root) return Status::ok();
  for (size_t r = 0; r < n; ++r) {
    if (v && a.rcounts[r] * es != lens[r])
      return invalid_arg("gatherv: rank {} sends {} elements but the root's recvcounts[{}] is {}", r, lens[r] / es, r,
                         a.rcounts[r]);
    const size_t at = (v ? a.rdispls[r] : r * a.count) * es;
    if (lens[r]) memcopy(static_cast<char*>(a.recv) + at, all.data() + offs[r], lens[r]);
  }
  return Status::ok();
}
Status gather(Communicator& c, const Args& a) { return gather_via_allgather(c, a, false); }
Status gatherv(Communicator& c, const Args& a) { return gather_via_allgather(c, a, true); }

// Scatter(v): the root's layout goes everywhere (counts and displacements first), then its whole buffer,
// of which each rank takes its piece.
Status scatter_via_broadcast(Communicator& c, const Args& a, bool v) {
  Hier& h = *c.hier;
  const size_t n = static_cast<size_t>(c.size), me = static_cast<size_t>(c.rank), es = dtype_size(a.dtype);
  const bool root = c.rank == a.root;
  std::vector<uint64_t> layout(2 * n);
  if (root)
    for (size_t r = 0; r < n; ++r) {
      layout[2 * r] = (v ? a.scounts[r] : a.count) * es;
      layout[2 * r + 1] = (v ? a.sdispls[r] : r * a.count) * es;
    }
  TS_RETURN_IF_ERROR(bcast_bytes(c, h, reinterpret_cast<char*>(layout.data()), layout.size() * 8, a.root));
  uint64_t extent = 0;
  for (size_t r = 0; r < n; ++r) extent = std::max<uint64_t>(extent, layout[2 * r] + layout[2 * r + 1]);
  std::vector<char> all(extent);
  if (root && extent) memcopy(all.data(), a.send, extent);
  TS_RETURN_IF_ERROR(bcast_bytes(c, h, all.data(), extent, a.root));
  if (layout[2 * me] != a.count * es)
    return invalid_arg("scatterv: rank {} receives {} elements but the root's sendcounts[{}] is {}", me, a.count, me,
                       layout[2 * me] / es);
  if (a.count) memcopy(a.recv, all.data() + layout[2 * me + 1], layout[2 * me]);
  return Status::ok();
}
Status scatter(Communicator& c, const Args& a) { return scatter_via_broadcast(c, a, false); }
Status scatterv(Communicator& c, const Args& a) { return scatter_via_broadcast(c, a, true); }

// Alltoall(v): every message to another host posted at once, the host's own exchange meanwhile.
Status alltoall_exchange(Communicator& c, const Args& a) {
  Hier& h = *c.hier;
  const size_t n = static_cast<size_t>(c.size), bytes = a.count * dtype_size(a.dtype);
  std::vector<size_t> offs(n), lens(n, bytes);
  for (size_t r = 0; r < n; ++r) offs[r] = r * bytes;
  const char* send = static_cast<const char*>(a.send);
  if (a.send == a.recv && bytes) {  // in place: send from a copy
    char* copy = grow(h.b, n * bytes);
    memcopy(copy, a.send, n * bytes);
    send = copy;
  }
  return alltoallv_bytes(c, h, send, offs.data(), lens.data(), static_cast<char*>(a.recv), offs.data(), lens.data());
}
Status alltoallv_exchange(Communicator& c, const Args& a) {
  const size_t n = static_cast<size_t>(c.size), es = dtype_size(a.dtype);
  std::vector<size_t> so(n), sl(n), ro(n), rl(n);
  for (size_t r = 0; r < n; ++r) {
    so[r] = a.sdispls[r] * es, sl[r] = a.scounts[r] * es;
    ro[r] = a.rdispls[r] * es, rl[r] = a.rcounts[r] * es;
  }
  return alltoallv_bytes(c, *c.hier, static_cast<const char*>(a.send), so.data(), sl.data(),
                         static_cast<char*>(a.recv), ro.data(), rl.data());
}

// Barrier: the host's members meet, the leaders' dissemination barrier, the members meet again (the
// second so that no member leaves before every host has arrived).
Status barrier_leaders(Communicator& c, const Args&) {
  Hier& h = *c.hier;
  if (h.local_size > 1) TS_RETURN_IF_ERROR(local(h, Kind::kBarrier, Args{}));
  Net net{c, h};
  if (h.local_rank == 0) net_barrier(net, h.leaders, h.my_host);
  if (h.local_size > 1) TS_RETURN_IF_ERROR(local(h, Kind::kBarrier, Args{}));
  return Status::ok();
}

// Scans: every rank's input, folded in rank order up to this rank (exclusive: zeros on rank 0).
Status inscan(Communicator& c, const Args& a) {
  return fold_in_rank_order(c, *c.hier, a, static_cast<size_t>(c.rank) + 1, a.op);
}
Status exscan(Communicator& c, const Args& a) {
  return fold_in_rank_order(c, *c.hier, a, static_cast<size_t>(c.rank), a.op);
}

}  // namespace tessera::coll::across
