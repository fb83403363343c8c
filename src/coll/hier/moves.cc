// The rows across hosts that move data (and the scans, folds of moved data); their formulas: hier/rows.cc.
#include <algorithm>
#include <cstring>

#include "base/memcopy.h"
#include "coll/hier/compose.h"
#include "coll/hier/compress.h"
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

// Allgather(v) of float32 coded for the wire (NetShape::gather_compress, hier/compress.h): this member codes its
// block, the codes go everywhere as allgather_leaders moves bytes, and every member decodes every block into
// its place, its own block and its host's too, so that every member holds the same bits.
Status allgather_coded_of(Communicator& c, const Args& a, bool v) {
  Hier& h = *c.hier;
  const Compress k = c.net->gather_compress;
  const size_t n = static_cast<size_t>(c.size), me = static_cast<size_t>(c.rank);
  std::vector<size_t> offs(n), lens(n), counts(n);
  size_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    counts[r] = v ? a.rcounts[r] : a.count;
    lens[r] = encoded_bytes(k, counts[r]);
    offs[r] = total;
    total += lens[r];
  }
  if (total == 0) return Status::ok();
  char* codes = grow(h.codes, total);
  if (counts[me]) encode(k, static_cast<const float*>(a.send), nullptr, counts[me], codes + offs[me]);
  TS_RETURN_IF_ERROR(allgatherv_bytes(c, h, codes + offs[me], codes, offs, lens));
  float* out = static_cast<float*>(a.recv);
  for (size_t r = 0; r < n; ++r)
    if (counts[r]) decode(k, codes + offs[r], counts[r], out + (v ? a.rdispls[r] : r * a.count), false);
  return Status::ok();
}
Status allgather_coded(Communicator& c, const Args& a) { return allgather_coded_of(c, a, false); }
Status allgatherv_coded(Communicator& c, const Args& a) { return allgather_coded_of(c, a, true); }

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
// Alltoall through the hosts' first members: each host's send buffers gathered on its leader, one message
// per pair of hosts (every block from a member of one to a member of the other), each host's receive
// buffers assembled on its leader and scattered. (H - 1) messages per leader instead of p (n - p) per
// member: the row for small blocks with several members per host.
Status alltoall_leaders(Communicator& c, const Args& a) {
  Hier& h = *c.hier;
  const size_t n = static_cast<size_t>(c.size), B = a.count * dtype_size(a.dtype), row = n * B;
  const std::vector<int>& mine = h.members[static_cast<size_t>(h.my_host)];
  const size_t p = mine.size();
  if (row == 0) return Status::ok();  // every member passes the same count
  const bool leader = h.local_rank == 0;
  // Leader: gathered[i] = local member i's send buffer; result[j] = local member j's receive buffer.
  char* gathered = leader ? grow(h.a, 2 * p * row) : nullptr;
  char* result = leader ? gathered + p * row : nullptr;
  if (p > 1) {
    TS_RETURN_IF_ERROR(local(h, Kind::kGather, Args{.send = a.send, .recv = gathered, .count = row,
                                                   .dtype = DType::kUint8, .root = 0}));
  } else {
    memcopy(gathered, a.send, row);
  }
  if (leader) {
    Net net{c, h};
    // Per other host g: out[g] holds the blocks from my members (i) to g's (j), i-major; in[g] the blocks
    // from g's members to mine, in g's layout.
    size_t total = 0;
    for (int g = 0; g < h.n_hosts; ++g)
      if (g != h.my_host) total += 2 * p * h.members[static_cast<size_t>(g)].size() * B;
    char* buf = grow(h.b, total);
    std::vector<std::pair<int, void*>> reqs;
    std::vector<size_t> req_bytes;
    std::vector<const char*> in(static_cast<size_t>(h.n_hosts), nullptr);
    for (int g = 0; g < h.n_hosts; ++g) {
      if (g == h.my_host) continue;
      const std::vector<int>& theirs = h.members[static_cast<size_t>(g)];
      const size_t q = theirs.size(), bytes = p * q * B;
      char* out = buf;
      in[static_cast<size_t>(g)] = buf + bytes;
      buf += 2 * bytes;
      for (size_t i = 0; i < p; ++i)
        for (size_t j = 0; j < q; ++j)
          memcopy(out + (i * q + j) * B, gathered + i * row + static_cast<size_t>(theirs[j]) * B, B);
      const int peer = h.leaders[static_cast<size_t>(g)];
      reqs.emplace_back(peer, net.recv(peer, const_cast<char*>(in[static_cast<size_t>(g)]), bytes));
      req_bytes.push_back(bytes);
      reqs.emplace_back(peer, net.send(peer, out, bytes));
      req_bytes.push_back(bytes);
    }
    // My host's own blocks meanwhile.
    for (size_t j = 0; j < p; ++j)
      for (size_t i = 0; i < p; ++i)
        memcopy(result + j * row + static_cast<size_t>(mine[i]) * B, gathered + i * row + static_cast<size_t>(mine[j]) * B, B);
    for (size_t k = 0; k < reqs.size(); ++k)
      net.wait(reqs[k].first, reqs[k].second, "alltoall between the hosts' leaders", req_bytes[k]);
    for (int g = 0; g < h.n_hosts; ++g) {
      if (g == h.my_host) continue;
      const std::vector<int>& theirs = h.members[static_cast<size_t>(g)];
      const size_t q = theirs.size();
      for (size_t i = 0; i < q; ++i)  // from their member i to my member j
        for (size_t j = 0; j < p; ++j)
          memcopy(result + j * row + static_cast<size_t>(theirs[i]) * B, in[static_cast<size_t>(g)] + (i * p + j) * B, B);
    }
  }
  if (p > 1)
    return local(h, Kind::kScatter, Args{.send = result, .recv = a.recv, .count = row, .dtype = DType::kUint8, .root = 0});
  memcopy(a.recv, result, row);
  return Status::ok();
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
