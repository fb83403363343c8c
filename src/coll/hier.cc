#include "coll/hier.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "base/cpu.h"
#include "base/log.h"
#include "coll/dispatch.h"
#include "coll/reduce/reduce.h"
#include "coll/p2p.h"
#include "coll/select/link.h"
#include "coll/select/select.h"
#include "pgas/runtime.h"
#include "transport/transport.h"

namespace tessera::coll {

struct Hier {
  Communicator* local = nullptr;           // the members on this host
  int n_hosts = 0, my_host = 0, local_rank = 0, local_size = 0;
  std::vector<int> host_of;                // host of each rank (0.. by each host's lowest rank)
  std::vector<std::vector<int>> members;   // ranks of each host, ascending
  std::vector<int> leaders;                // members[h][0]
  std::vector<int> rail;                   // members[h][local_rank] (equal hosts only)
  bool equal = false;                      // every host has the same number of members
  uint64_t key = 0;                        // tag: key << 24 | sender's PE (hier_create)
  std::vector<char> a, b, c, zeros;        // scratch
  LinkParams link;                         // rank 0's, the same on every member (agree_link)
  ModelParams model;                       // rank 0's local cost model (each host measures its own)
  HierShape shape;                         // allreduce's, for the cost model (rank 0's)
  size_t plan_bytes = ~size_t{0};          // the last allreduce's plan, by bytes and type
  DType plan_dtype = DType::kFloat32;
  HierPlan plan;
};

namespace {

constexpr int kPeBits = 24;
// Pieces in which the ring between hosts receives, folds and sends on (net_allreduce).
constexpr size_t kPieceBytes = 1 << 20;

char* grow(std::vector<char>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Messages between ranks of `c` on different hosts.
struct Net {
  Communicator& c;
  Hier& h;
  int pe(int rank) const { return c.world[static_cast<size_t>(rank)]; }
  const transport::Transport* t(int rank) const { return pgas::rt().transports[static_cast<size_t>(pe(rank))]; }
  void* send(int rank, const void* buf, size_t bytes) {
    return t(rank)->send(pe(rank), h.key << kPeBits | static_cast<uint64_t>(c.world[static_cast<size_t>(c.rank)]),
                         buf, bytes);
  }
  void* recv(int rank, void* buf, size_t bytes) {
    return t(rank)->recv(pe(rank), h.key << kPeBits | static_cast<uint64_t>(pe(rank)), buf, bytes);
  }
  void wait(int rank, void* req, const char* what, size_t bytes) {
    if (req) t(rank)->wait(req, what, pe(rank), bytes);
  }
  // Sends `out` to `to` while receiving `in` from `from`.
  void exchange(int to, const void* out, size_t out_bytes, int from, void* in, size_t in_bytes, const char* what) {
    void* r = recv(from, in, in_bytes);
    void* s = send(to, out, out_bytes);
    wait(from, r, what, in_bytes);
    wait(to, s, what, out_bytes);
  }
};

// Block b of `count` elements split into n: [begin, begin + size).
size_t block_begin(size_t count, int n, int b) {
  const size_t q = count / static_cast<size_t>(n), r = count % static_cast<size_t>(n);
  return q * static_cast<size_t>(b) + std::min(static_cast<size_t>(b), r);
}
size_t block_size(size_t count, int n, int b) { return block_begin(count, n, b + 1) - block_begin(count, n, b); }

void fold2(void* dst, const void* x, const void* y, size_t count, DType t, Op op) {
  const void* s[2] = {x, y};
  reduce(dst, s, 2, count, t, op, 0);
}

// Allreduce of `in` into `out` (the same or disjoint buffers) among `group` (ranks, one per host); this
// rank is group[gi]. `doubling`: recursive doubling on a power-of-two group (else the ring). Out of place
// without a copy: the first step reads `in` and every fold writes `out`.
void net_allreduce(Net& net, const std::vector<int>& group, int gi, const char* in, char* out, size_t count, DType t,
                   Op op, bool doubling) {
  const int n = static_cast<int>(group.size());
  const size_t es = dtype_size(t);
  if (n == 1 || count == 0) {
    if (in != out && count) std::memcpy(out, in, count * es);
    return;
  }
  if (doubling && (n & (n - 1)) == 0) {
    // Recursive doubling: partners fold (lower rank's value op higher's), so both hold the same bits.
    char* tmp = grow(net.h.b, count * es);
    const char* mine = in;
    for (int d = 1; d < n; d <<= 1) {
      const int p = gi ^ d;
      net.exchange(group[p], mine, count * es, group[p], tmp, count * es, "allreduce between hosts");
      if (gi < p) fold2(out, mine, tmp, count, t, op);
      else fold2(out, tmp, mine, count, t, op);
      mine = out;
    }
    return;
  }
  // Ring: reduce-scatter, then allgather of the reduced blocks, pipelined in pieces of kPieceBytes. Each
  // block is folded once per rank in the reduce-scatter, always (what arrived) op (this rank's input), and
  // each folded piece goes on to the right at once, as the next step's piece (the last step's, as the
  // allgather's first); in the allgather each piece that arrives goes on at once too. So folds overlap the
  // transfer, and the steps overlap each other. Both ends of a connection cut a block into the same
  // pieces and post them in the same order (messages of one tag match in posting order).
  // Buffers: step s receives into tmp[s % 2], posted one step ahead. The allgather receives into `out`
  // directly: a block's final value can reach this rank only after every rank's part of it, including
  // the partial sent from `out` here, has left, so it never overwrites data still to be sent.
  const int right = group[(gi + 1) % n], left = group[(gi + n - 1) % n];
  const size_t piece = std::max<size_t>(1, kPieceBytes / es), bmax = block_size(count, n, 0);
  char* const tmp_base = grow(net.h.b, (n > 2 ? 2 : 1) * bmax * es);  // a second buffer from the second step
  char* const tmp[2] = {tmp_base, tmp_base + bmax * es};
  using Pending = std::pair<void*, size_t>;
  std::vector<Pending> sends;
  std::vector<std::vector<Pending>> recvs(static_cast<size_t>(2 * n - 2));  // per step: n - 1 RS, then n - 1 AG
  auto post_recvs = [&](int step, char* dst, size_t cnt) {
    for (size_t at = 0; at < cnt; at += piece) {
      const size_t bytes = std::min(piece, cnt - at) * es;
      recvs[static_cast<size_t>(step)].emplace_back(net.recv(left, dst + at * es, bytes), bytes);
    }
  };
  auto send_piece = [&](const char* src, size_t bytes) { sends.emplace_back(net.send(right, src, bytes), bytes); };
  const int ag0 = n - 1;  // the allgather's first step, in recvs
  post_recvs(0, tmp[0], block_size(count, n, (gi + n - 1) % n));
  {
    const int sb = gi;
    const size_t cnt = block_size(count, n, sb);
    for (size_t at = 0; at < cnt; at += piece)
      send_piece(in + (block_begin(count, n, sb) + at) * es, std::min(piece, cnt - at) * es);
  }
  for (int s = 0; s < n - 1; ++s) {
    if (s + 1 < n - 1) {
      post_recvs(s + 1, tmp[(s + 1) % 2], block_size(count, n, (gi - s - 2 + 2 * n) % n));
    } else {
      for (int a = 0; a < n - 1; ++a) {
        const int rb = (gi - a + n) % n;
        post_recvs(ag0 + a, out + block_begin(count, n, rb) * es, block_size(count, n, rb));
      }
    }
    const int rb = (gi - s - 1 + 2 * n) % n;
    char* const dst = out + block_begin(count, n, rb) * es;
    const char* const mine = in + block_begin(count, n, rb) * es;
    size_t at = 0;
    for (auto& [r, bytes] : recvs[static_cast<size_t>(s)]) {
      net.wait(left, r, "allreduce between hosts (reduce-scatter)", bytes);
      fold2(dst + at, tmp[s % 2] + at, mine + at, bytes / es, t, op);
      send_piece(dst + at, bytes);  // posting moves the connection on
      at += bytes;
    }
  }
  for (int a = 0; a < n - 1; ++a) {
    const int rb = (gi - a + n) % n;
    const char* const src = out + block_begin(count, n, rb) * es;
    size_t at = 0;
    for (auto& [r, bytes] : recvs[static_cast<size_t>(ag0 + a)]) {
      net.wait(left, r, "allreduce between hosts (allgather)", bytes);
      if (a + 1 < n - 1) send_piece(src + at, bytes);
      at += bytes;
    }
  }
  for (auto& [r, bytes] : sends) net.wait(right, r, "allreduce between hosts", bytes);
}

// Ring allgather among `group`: member i's block is [offs[i], offs[i] + lens[i]) bytes of buf.
void net_allgatherv(Net& net, const std::vector<int>& group, int gi, char* buf, const std::vector<size_t>& offs,
                    const std::vector<size_t>& lens) {
  const int n = static_cast<int>(group.size());
  const int right = group[(gi + 1) % n], left = group[(gi + n - 1) % n];
  for (int s = 0; s < n - 1; ++s) {
    const int sb = (gi - s + n) % n, rb = (gi - s - 1 + 2 * n) % n;
    net.exchange(right, buf + offs[sb], lens[sb], left, buf + offs[rb], lens[rb], "allgather between hosts");
  }
}

// Binomial-tree broadcast among `group` from group[ri].
void net_bcast(Net& net, const std::vector<int>& group, int gi, int ri, char* buf, size_t bytes) {
  const int n = static_cast<int>(group.size());
  const int v = (gi - ri + n) % n;
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      const int from = group[(v - mask + ri) % n];
      net.wait(from, net.recv(from, buf, bytes), "broadcast between hosts", bytes);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (v + mask < n) {
      const int to = group[(v + mask + ri) % n];
      net.wait(to, net.send(to, buf, bytes), "broadcast between hosts", bytes);
    }
  }
}

// Dissemination barrier among `group`.
void net_barrier(Net& net, const std::vector<int>& group, int gi) {
  const int n = static_cast<int>(group.size());
  char out = 0, in = 0;
  for (int d = 1; d < n; d <<= 1)
    net.exchange(group[(gi + d) % n], &out, 1, group[(gi - d % n + n) % n], &in, 1, "barrier between hosts");
}

Status local(Hier& h, Kind kind, const Args& a) { return dispatch(*h.local, kind, a); }

Status allgatherv_bytes(Communicator& c, Hier& h, const void* in, char* out, const std::vector<size_t>& offs,
                        const std::vector<size_t>& lens);

// One ring over every member in rank order (send/recv: shared memory between members of a host, messages
// between hosts): the flat algorithm the two-level ones are measured against, and the cheapest where hosts
// have one member each and the link is fast.
Status ring_allreduce(Communicator& c, Hier& h, const void* send, void* recv, size_t count, DType t, Op op) {
  const int n = c.size, me = c.rank;
  const size_t es = dtype_size(t);
  char* buf = static_cast<char*>(recv);
  if (send != recv) std::memcpy(recv, send, count * es);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  char* tmp = grow(h.b, block_size(count, n, 0) * es);
  auto exchange = [&](const char* out, size_t out_bytes, char* in, size_t in_bytes) {
    group_start();
    TS_RETURN_IF_ERROR(p2p_send(c, out, out_bytes, right));
    TS_RETURN_IF_ERROR(p2p_recv(c, in, in_bytes, left));
    return group_end();
  };
  for (int s = 0; s < n - 1; ++s) {
    const int sb = (me - s + n) % n, rb = (me - s - 1 + 2 * n) % n;
    char* rp = buf + block_begin(count, n, rb) * es;
    TS_RETURN_IF_ERROR(exchange(buf + block_begin(count, n, sb) * es, block_size(count, n, sb) * es, tmp,
                                block_size(count, n, rb) * es));
    fold2(rp, tmp, rp, block_size(count, n, rb), t, op);
  }
  for (int s = 0; s < n - 1; ++s) {
    const int sb = (me + 1 - s + n) % n, rb = (me - s + n) % n;
    TS_RETURN_IF_ERROR(exchange(buf + block_begin(count, n, sb) * es, block_size(count, n, sb) * es,
                                buf + block_begin(count, n, rb) * es, block_size(count, n, rb) * es));
  }
  return Status::ok();
}

// Allreduce of count elements from send into recv on every rank.
Status allreduce(Communicator& c, Hier& h, const void* send, void* recv, size_t count, DType t, Op op) {
  if (count == 0) return Status::ok();
  const size_t es = dtype_size(t);
  Net net{c, h};
  const Op inner = op == Op::kAvg ? Op::kSum : op;
  if (deterministic_mode()) {
    // Every rank's input everywhere, folded in rank order: the canonical algorithms' bits.
    const size_t n = static_cast<size_t>(c.size);
    char* all = grow(h.c, count * es * n);
    std::vector<size_t> offs(n), lens(n, count * es);
    for (size_t r = 0; r < n; ++r) offs[r] = r * count * es;
    TS_RETURN_IF_ERROR(allgatherv_bytes(c, h, send, all, offs, lens));
    std::vector<const void*> srcs(n);
    for (size_t r = 0; r < n; ++r) srcs[r] = all + r * count * es;
    if (n == 1) std::memcpy(recv, all, count * es);
    else reduce(recv, srcs.data(), static_cast<int>(n), count, t, op, op == Op::kAvg ? static_cast<int>(n) : 0);
    return Status::ok();
  }
  if (count * es != h.plan_bytes || t != h.plan_dtype) {
    HierShape shape = h.shape;
    shape.bytes = count * es;
    shape.dtype = t;
    h.plan = plan_allreduce(shape, h.model, h.link);
    h.plan_bytes = count * es;
    h.plan_dtype = t;
  }
  if (h.plan.how == HierAllreduce::kRing && group_depth() == 0) {
    TS_RETURN_IF_ERROR(ring_allreduce(c, h, send, recv, count, t, inner));
  } else if (h.plan.how == HierAllreduce::kRails && h.local_size > 1) {
    // Rails: my slice of the local reduce-scatter, allreduced with the same slice of every other host.
    std::vector<size_t> counts(static_cast<size_t>(h.local_size)), displs(counts.size());
    for (int i = 0; i < h.local_size; ++i) {
      counts[static_cast<size_t>(i)] = block_size(count, h.local_size, i);
      displs[static_cast<size_t>(i)] = block_begin(count, h.local_size, i);
    }
    const size_t mine = counts[static_cast<size_t>(h.local_rank)];
    char* slice = grow(h.a, mine * es);
    TS_RETURN_IF_ERROR(local(h, Kind::kReduceScatterv,
                             Args{.send = send, .recv = slice, .count = mine, .dtype = t, .op = inner,
                                  .rcounts = counts.data()}));
    net_allreduce(net, h.rail, h.my_host, slice, slice, mine, t, inner, h.plan.doubling);
    TS_RETURN_IF_ERROR(local(h, Kind::kAllgatherv,
                             Args{.send = slice, .recv = recv, .count = mine, .dtype = t, .rcounts = counts.data(),
                                  .rdispls = displs.data()}));
  } else {
    // Leaders: reduce to the host's first member, allreduce between hosts, broadcast on the host. With one
    // PE per host rails are the same (the whole buffer, straight from send to recv).
    const char* mine = static_cast<const char*>(send);  // what this host's leader contributes
    if (h.local_size > 1) {
      TS_RETURN_IF_ERROR(local(h, Kind::kReduce, Args{.send = send, .recv = recv, .count = count, .dtype = t,
                                                      .op = inner, .root = 0}));
      mine = static_cast<const char*>(recv);
    }
    if (h.local_rank == 0)
      net_allreduce(net, h.leaders, h.my_host, mine, static_cast<char*>(recv), count, t, inner, h.plan.doubling);
    if (h.local_size > 1)
      TS_RETURN_IF_ERROR(local(h, Kind::kBroadcast, Args{.send = recv, .recv = recv, .count = count, .dtype = t,
                                                         .root = 0}));
  }
  if (op == Op::kAvg) {
    char* zeros = grow(h.zeros, count * es);
    std::memset(zeros, 0, count * es);
    const void* s[2] = {recv, zeros};
    reduce(recv, s, 2, count, t, Op::kAvg, c.size);
  }
  return Status::ok();
}

// Every rank's `lens[r]` bytes, packed by rank at offs[r] of `out`, on every rank; mine are at `in`.
Status allgatherv_bytes(Communicator& c, Hier& h, const void* in, char* out, const std::vector<size_t>& offs,
                        const std::vector<size_t>& lens) {
  Net net{c, h};
  const size_t me = static_cast<size_t>(c.rank);
  // 1. The host's blocks, packed in local rank order, at the leader.
  const std::vector<int>& mine = h.members[static_cast<size_t>(h.my_host)];
  std::vector<size_t> lcounts(mine.size()), ldispls(mine.size());
  size_t host_bytes = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    lcounts[i] = lens[static_cast<size_t>(mine[i])];
    ldispls[i] = host_bytes;
    host_bytes += lcounts[i];
  }
  // Every host's packed block, in host order.
  std::vector<size_t> hoffs(static_cast<size_t>(h.n_hosts)), hlens(hoffs.size());
  size_t all_bytes = 0;
  for (int hh = 0; hh < h.n_hosts; ++hh) {
    hoffs[static_cast<size_t>(hh)] = all_bytes;
    for (int r : h.members[static_cast<size_t>(hh)]) hlens[static_cast<size_t>(hh)] += lens[static_cast<size_t>(r)];
    all_bytes += hlens[static_cast<size_t>(hh)];
  }
  // When the output already is that layout (each host's ranks consecutive, in host order, blocks back to
  // back: an allgather over hosts that hold rank ranges), it is the packing buffer, and nothing is packed
  // or unpacked: with one PE per host, 64 MiB meant copying 96 MiB beside the transfer.
  bool packed_out = true;
  for (int hh = 0; hh < h.n_hosts && packed_out; ++hh) {
    size_t at = hoffs[static_cast<size_t>(hh)];
    for (int r : h.members[static_cast<size_t>(hh)]) {
      packed_out = packed_out && offs[static_cast<size_t>(r)] == at;
      at += lens[static_cast<size_t>(r)];
    }
  }
  char* packed = packed_out ? out : grow(h.a, all_bytes);
  char* my_block = packed + hoffs[static_cast<size_t>(h.my_host)];
  if (h.local_size > 1) {
    TS_RETURN_IF_ERROR(local(h, Kind::kAllgatherv, Args{.send = in, .recv = my_block, .count = lens[me],
                                                        .dtype = DType::kUint8, .rcounts = lcounts.data(),
                                                        .rdispls = ldispls.data()}));
  } else if (lens[me] && my_block != in) {
    std::memcpy(my_block, in, lens[me]);
  }
  // 2. Between hosts: every member of a rail holds the whole host block, so the leaders alone exchange.
  if (h.local_rank == 0) net_allgatherv(net, h.leaders, h.my_host, packed, hoffs, hlens);
  if (h.local_size > 1)
    TS_RETURN_IF_ERROR(local(h, Kind::kBroadcast, Args{.send = packed, .recv = packed, .count = all_bytes,
                                                       .dtype = DType::kUint8, .root = 0}));
  // 3. Unpack by rank.
  for (int hh = 0; hh < h.n_hosts && !packed_out; ++hh) {
    size_t at = hoffs[static_cast<size_t>(hh)];
    for (int r : h.members[static_cast<size_t>(hh)]) {
      const size_t len = lens[static_cast<size_t>(r)];
      if (len) std::memmove(out + offs[static_cast<size_t>(r)], packed + at, len);
      at += len;
    }
  }
  return Status::ok();
}

// Broadcast of `bytes` from rank `root`: the root's host's copy goes to one member of every other host.
Status bcast_bytes(Communicator& c, Hier& h, char* buf, size_t bytes, int root) {
  Net net{c, h};
  const int root_host = h.host_of[static_cast<size_t>(root)];
  // Each host's entry: the root on its own host, the first member elsewhere.
  std::vector<int> entries(static_cast<size_t>(h.n_hosts));
  for (int hh = 0; hh < h.n_hosts; ++hh) entries[static_cast<size_t>(hh)] = h.members[static_cast<size_t>(hh)][0];
  entries[static_cast<size_t>(root_host)] = root;
  const int entry = entries[static_cast<size_t>(h.my_host)];
  if (c.rank == entry) net_bcast(net, entries, h.my_host, root_host, buf, bytes);
  if (h.local_size > 1) {
    const auto& mine = h.members[static_cast<size_t>(h.my_host)];
    const int lroot = static_cast<int>(std::find(mine.begin(), mine.end(), entry) - mine.begin());
    TS_RETURN_IF_ERROR(local(h, Kind::kBroadcast, Args{.send = buf, .recv = buf, .count = bytes,
                                                       .dtype = DType::kUint8, .root = lroot}));
  }
  return Status::ok();
}

Status alltoallv_bytes(Communicator& c, Hier& h, const char* send, const size_t* soffs, const size_t* slens,
                       char* recv, const size_t* roffs, const size_t* rlens) {
  Net net{c, h};
  const int n = c.size;
  // Peers on other hosts: every receive posted, then every send; the host's own exchange meanwhile.
  std::vector<std::pair<int, void*>> reqs;
  std::vector<size_t> req_bytes;
  for (int r = 0; r < n; ++r)
    if (h.host_of[static_cast<size_t>(r)] != h.my_host) {
      reqs.emplace_back(r, net.recv(r, recv + roffs[r], rlens[r]));
      req_bytes.push_back(rlens[r]);
    }
  for (int k = 1; k <= n; ++k) {  // staggered, so that not every rank sends to rank 0 first
    const int r = (c.rank + k) % n;
    if (h.host_of[static_cast<size_t>(r)] != h.my_host) {
      reqs.emplace_back(r, net.send(r, send + soffs[r], slens[r]));
      req_bytes.push_back(slens[r]);
    }
  }
  const auto& mine = h.members[static_cast<size_t>(h.my_host)];
  const size_t m = mine.size();
  if (m == 1) {
    if (slens[c.rank]) std::memmove(recv + roffs[c.rank], send + soffs[c.rank], slens[c.rank]);
  } else {
    std::vector<size_t> sc(m), sd(m), rc(m), rd(m);
    for (size_t i = 0; i < m; ++i) {
      const int r = mine[i];
      sc[i] = slens[r];
      sd[i] = soffs[r];
      rc[i] = rlens[r];
      rd[i] = roffs[r];
    }
    TS_RETURN_IF_ERROR(local(h, Kind::kAlltoallv, Args{.send = send, .recv = recv, .count = 0, .dtype = DType::kUint8,
                                                       .scounts = sc.data(), .sdispls = sd.data(),
                                                       .rcounts = rc.data(), .rdispls = rd.data()}));
  }
  for (size_t i = 0; i < reqs.size(); ++i) net.wait(reqs[i].first, reqs[i].second, "alltoall between hosts", req_bytes[i]);
  return Status::ok();
}

// The link measured once per process (the first communicator that spans hosts whose rank 0 is this PE).
std::mutex g_link_mu;
bool g_link_measured = false;
LinkParams g_link;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Between the first two hosts: the leaders' median ping-pong of 1 byte (latency), then 16 MiB both ways at once,
// the traffic of the rings and exchanges the model prices (median of three after a warm-up; larger than the
// sockets' buffers, which a 4 MiB one-way probe fitted in: it read 1.1-3.6 GB/s on a link iperf3 put at
// 1.5 each way, and the model then picked a flat ring 1.5x slower than the leaders), then every rail at
// once (what a host's streams carry together). Members of other hosts do nothing.
LinkParams measure_link(Communicator& c, Hier& h) {
  LinkParams l;
  std::snprintf(l.source, sizeof l.source, "measured");
  if (h.my_host > 1) return l;
  Net net{c, h};
  const int peer_host = 1 - h.my_host;
  const bool first = h.my_host == 0;
  const int lead = h.members[static_cast<size_t>(peer_host)][0];
  constexpr int kPings = 20, kWarm = 3, kStreams = 3;
  constexpr size_t kBig = size_t{16} << 20;
  char byte = 0;
  std::vector<char> out, in;  // kBig each, made after the pings (their zeroing would delay one side)
  // One byte from the first host to `peer` and back.
  auto ping = [&](int peer) {
    if (first) {
      net.wait(peer, net.send(peer, &byte, 1), "link measurement", 1);
      net.wait(peer, net.recv(peer, &byte, 1), "link measurement", 1);
    } else {
      net.wait(peer, net.recv(peer, &byte, 1), "link measurement", 1);
      net.wait(peer, net.send(peer, &byte, 1), "link measurement", 1);
    }
  };
  // kBig bytes each way with `peer`: seconds.
  auto both_ways = [&](int peer) {
    const auto t0 = std::chrono::steady_clock::now();
    net.exchange(peer, out.data(), kBig, peer, in.data(), kBig, "link measurement");
    return seconds_since(t0);
  };
  if (h.local_rank == 0) {
    // The median round trip: right after start-up a few are slow (the PE's yielding waits hand the CPU to
    // threads still setting up), and a mean over them read 50-470 us on a link of 5.
    double rtt[kPings];
    for (int i = 0; i < kWarm + kPings; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      ping(lead);
      if (i >= kWarm) rtt[i - kWarm] = seconds_since(t0);
    }
    std::sort(rtt, rtt + kPings);
    l.alpha = rtt[kPings / 2] / 2;
    out.resize(kBig);
    in.resize(kBig);
    (void)both_ways(lead);  // warm-up: pages, the sockets' windows
    double took[kStreams];
    for (double& t : took) t = both_ways(lead);
    std::sort(took, took + kStreams);
    l.stream_bw = static_cast<double>(kBig) / std::max(took[kStreams / 2] - l.alpha, 1e-9);
  }
  l.host_bw = l.stream_bw;
  if (h.equal && h.local_size > 1) {
    // Every rail at once, started together on each host: the slowest rail's time for all the bytes.
    const int partner = h.members[static_cast<size_t>(peer_host)][static_cast<size_t>(h.local_rank)];
    out.resize(kBig);
    in.resize(kBig);
    (void)dispatch(*h.local, Kind::kBarrier, Args{});  // the leaders' measurement done: it runs alone
    (void)both_ways(partner);                          // warm-up
    (void)dispatch(*h.local, Kind::kBarrier, Args{});
    double mine = both_ways(partner), slowest = 0;
    (void)dispatch(*h.local, Kind::kAllreduce, Args{.send = &mine, .recv = &slowest, .count = 1,
                                                    .dtype = DType::kFloat64, .op = Op::kMax});
    l.host_bw = static_cast<double>(kBig) * h.local_size / std::max(slowest - l.alpha, 1e-9);
  }
  return l;
}

// Every member prices with rank 0's link (configured, measured before by this process, or measured now),
// local model and shape.
void agree_link(Communicator& c, Hier& h) {
  LinkParams l = configured_link();
  uint8_t measure = 0;
  if (c.rank == 0 && std::strcmp(l.source, "default") == 0) {
    std::lock_guard lk(g_link_mu);
    if (g_link_measured) l = g_link;
    else measure = 1;
  }
  (void)bcast_bytes(c, h, reinterpret_cast<char*>(&measure), 1, 0);
  if (measure) {
    transport::set_message_waits_yield(true);
    l = measure_link(c, h);
    transport::set_message_waits_yield(false);
    if (c.rank == 0) {
      std::lock_guard lk(g_link_mu);
      g_link = l;
      g_link_measured = true;
      log::info("link between hosts: {}", describe(l));
    }
  }
  // Every input of the plan is rank 0's: members on different hosts would otherwise price with their own
  // host's measured model (or oversubscription) and pick different patterns for the same call.
  struct Agreed {
    LinkParams link;
    ModelParams model;
    HierShape shape;
  } a{l, h.local->model, h.shape};
  (void)bcast_bytes(c, h, reinterpret_cast<char*>(&a), sizeof a, 0);
  h.link = a.link;
  h.model = a.model;
  h.shape = a.shape;
}

}  // namespace

Communicator* hier_local_peer(Communicator& c, int peer, int* local_peer) {
  Hier& h = *c.hier;
  if (h.host_of[static_cast<size_t>(peer)] != h.my_host) return nullptr;
  const auto& mine = h.members[static_cast<size_t>(h.my_host)];
  *local_peer = static_cast<int>(std::find(mine.begin(), mine.end(), peer) - mine.begin());
  return h.local;
}

void* hier_post(Communicator& c, bool send, void* buf, size_t bytes, int peer) {
  Hier& h = *c.hier;
  const int pe = c.world[static_cast<size_t>(peer)];
  const transport::Transport* t = pgas::rt().transports[static_cast<size_t>(pe)];
  const uint64_t p2p_key = h.key | (uint64_t{1} << (62 - kPeBits));  // apart from the collectives' tags
  if (send) return t->send(pe, p2p_key << kPeBits | static_cast<uint64_t>(c.world[static_cast<size_t>(c.rank)]), buf, bytes);
  return t->recv(pe, p2p_key << kPeBits | static_cast<uint64_t>(pe), buf, bytes);
}

void hier_complete(Communicator& c, void* request, bool send, size_t bytes, int peer) {
  if (!request) return;
  const int pe = c.world[static_cast<size_t>(peer)];
  pgas::rt().transports[static_cast<size_t>(pe)]->wait(request, send ? "send" : "recv", pe, bytes);
}

Hier* hier_create(Communicator& c, Communicator* local) {
  auto* h = new Hier;
  h->local = local;
  const pgas::Runtime& r = pgas::rt();
  h->host_of.resize(static_cast<size_t>(c.size));
  std::vector<int> host_number(static_cast<size_t>(r.n_hosts), -1);  // job host -> this communicator's host
  for (int i = 0; i < c.size; ++i) {
    int& hn = host_number[static_cast<size_t>(r.host_of[static_cast<size_t>(c.world[static_cast<size_t>(i)])])];
    if (hn < 0) {
      hn = h->n_hosts++;
      h->members.emplace_back();
    }
    h->host_of[static_cast<size_t>(i)] = hn;
    h->members[static_cast<size_t>(hn)].push_back(i);
  }
  h->my_host = h->host_of[static_cast<size_t>(c.rank)];
  const auto& mine = h->members[static_cast<size_t>(h->my_host)];
  h->local_size = static_cast<int>(mine.size());
  h->local_rank = static_cast<int>(std::find(mine.begin(), mine.end(), c.rank) - mine.begin());
  h->equal = true;
  for (const auto& m : h->members) {
    h->leaders.push_back(m[0]);
    h->equal = h->equal && m.size() == mine.size();
  }
  if (h->equal)
    for (const auto& m : h->members) h->rail.push_back(m[static_cast<size_t>(h->local_rank)]);
  // Tags: key << 24 | sender's PE, with the key's two top bits clear (the transport's own tags set the
  // tag's top bit; send/recv set the next one).
  h->key = c.uid & ((uint64_t{1} << (62 - kPeBits)) - 1);
  size_t largest = 0;
  for (const auto& m : h->members) largest = std::max(largest, m.size());
  h->shape.hosts = h->n_hosts;
  h->shape.ppn = static_cast<int>(largest);
  h->shape.equal = h->equal;
  h->shape.slot_bytes = local->slot_bytes;
  h->shape.oversubscribed = local->oversubscribed;
  h->shape.contention = std::max(1.0, static_cast<double>(r.machine_pes) / usable_cpus());
  agree_link(c, *h);
  return h;
}

void hier_destroy(Hier* h) {
  if (!h) return;
  comm_destroy(h->local);
  delete h;
}

std::string hier_describe(const Communicator& c) {
  const Hier& h = *c.hier;
  return fmt::format("{} hosts, {} members on this one{}; link {}", h.n_hosts, h.local_size,
                     h.equal ? "" : " (hosts of unequal size)", describe(h.link));
}

Status hier_dispatch(Communicator& c, Kind kind, const Args& a, size_t total) {
  Hier& h = *c.hier;
  Net net{c, h};
  const size_t es = dtype_size(a.dtype);
  const size_t n = static_cast<size_t>(c.size), me = static_cast<size_t>(c.rank);
  switch (kind) {
    case Kind::kAllreduce:
      return allreduce(c, h, a.send, a.recv, a.count, a.dtype, a.op);
    case Kind::kReduce: {
      char* out = me == static_cast<size_t>(a.root) ? static_cast<char*>(a.recv) : grow(h.c, a.count * es);
      return allreduce(c, h, a.send, out, a.count, a.dtype, a.op);
    }
    case Kind::kReduceScatter:
    case Kind::kReduceScatterv: {
      std::vector<size_t> counts(n, a.count), displs(n);
      if (kind == Kind::kReduceScatterv) counts.assign(a.rcounts, a.rcounts + n);
      size_t sum = 0;
      for (size_t r = 0; r < n; ++r) displs[r] = sum, sum += counts[r];
      std::vector<char> all(sum * es);
      TS_RETURN_IF_ERROR(allreduce(c, h, a.send, all.data(), sum, a.dtype, a.op));
      if (counts[me]) std::memcpy(a.recv, all.data() + displs[me] * es, counts[me] * es);
      return Status::ok();
    }
    case Kind::kAllgather:
    case Kind::kAllgatherv: {
      std::vector<size_t> offs(n), lens(n);
      for (size_t r = 0; r < n; ++r) {
        lens[r] = (kind == Kind::kAllgather ? a.count : a.rcounts[r]) * es;
        offs[r] = kind == Kind::kAllgather ? r * a.count * es : a.rdispls[r] * es;
      }
      return allgatherv_bytes(c, h, a.send, static_cast<char*>(a.recv), offs, lens);
    }
    case Kind::kBroadcast: {
      if (me == static_cast<size_t>(a.root) && a.send != a.recv && a.count) std::memcpy(a.recv, a.send, a.count * es);
      return bcast_bytes(c, h, static_cast<char*>(a.recv), a.count * es, a.root);
    }
    case Kind::kGather:
    case Kind::kGatherv: {
      // Everyone learns every count, gathers everything, and the root keeps it at its displacements.
      std::vector<size_t> lens(n), offs(n);
      const uint64_t my_len = a.count * es;
      std::vector<uint64_t> all_lens(n);
      std::vector<size_t> eight(n, sizeof(uint64_t)), eoffs(n);
      for (size_t r = 0; r < n; ++r) eoffs[r] = r * sizeof(uint64_t);
      TS_RETURN_IF_ERROR(allgatherv_bytes(c, h, &my_len, reinterpret_cast<char*>(all_lens.data()), eoffs, eight));
      size_t sum = 0;
      for (size_t r = 0; r < n; ++r) lens[r] = all_lens[r], offs[r] = sum, sum += lens[r];
      std::vector<char> all(sum);
      TS_RETURN_IF_ERROR(allgatherv_bytes(c, h, a.send, all.data(), offs, lens));
      if (me == static_cast<size_t>(a.root))
        for (size_t r = 0; r < n; ++r) {
          const size_t at = (kind == Kind::kGather ? r * a.count : a.rdispls[r]) * es;
          if (kind == Kind::kGatherv && a.rcounts[r] * es != lens[r])
            return invalid_arg("gatherv: rank {} sends {} elements but the root's recvcounts[{}] is {}", r,
                               lens[r] / es, r, a.rcounts[r]);
          if (lens[r]) std::memcpy(static_cast<char*>(a.recv) + at, all.data() + offs[r], lens[r]);
        }
      return Status::ok();
    }
    case Kind::kScatter:
    case Kind::kScatterv: {
      // The root's layout goes everywhere (counts and displacements first), then each rank takes its piece.
      const bool root = me == static_cast<size_t>(a.root);
      std::vector<uint64_t> layout(2 * n);
      uint64_t extent = 0;
      if (root)
        for (size_t r = 0; r < n; ++r) {
          layout[2 * r] = (kind == Kind::kScatter ? a.count : a.scounts[r]) * es;
          layout[2 * r + 1] = (kind == Kind::kScatter ? r * a.count : a.sdispls[r]) * es;
          extent = std::max<uint64_t>(extent, layout[2 * r] + layout[2 * r + 1]);
        }
      TS_RETURN_IF_ERROR(bcast_bytes(c, h, reinterpret_cast<char*>(layout.data()), layout.size() * 8, a.root));
      for (size_t r = 0; r < n; ++r) extent = std::max<uint64_t>(extent, layout[2 * r] + layout[2 * r + 1]);
      std::vector<char> all(extent);
      if (root && extent) std::memcpy(all.data(), a.send, extent);
      TS_RETURN_IF_ERROR(bcast_bytes(c, h, all.data(), extent, a.root));
      if (layout[2 * me] != a.count * es)
        return invalid_arg("scatterv: rank {} receives {} elements but the root's sendcounts[{}] is {}", me, a.count,
                           me, layout[2 * me] / es);
      if (a.count) std::memmove(a.recv, all.data() + layout[2 * me + 1], layout[2 * me]);
      return Status::ok();
    }
    case Kind::kAlltoall: {
      std::vector<size_t> offs(n), lens(n, a.count * es);
      for (size_t r = 0; r < n; ++r) offs[r] = r * a.count * es;
      const char* send = static_cast<const char*>(a.send);
      if (a.send == a.recv && a.count) {  // in place: send from a copy
        char* copy = grow(h.b, n * a.count * es);
        std::memcpy(copy, a.send, n * a.count * es);
        send = copy;
      }
      return alltoallv_bytes(c, h, send, offs.data(), lens.data(), static_cast<char*>(a.recv), offs.data(), lens.data());
    }
    case Kind::kAlltoallv: {
      std::vector<size_t> so(n), sl(n), ro(n), rl(n);
      for (size_t r = 0; r < n; ++r) {
        so[r] = a.sdispls[r] * es, sl[r] = a.scounts[r] * es;
        ro[r] = a.rdispls[r] * es, rl[r] = a.rcounts[r] * es;
      }
      return alltoallv_bytes(c, h, static_cast<const char*>(a.send), so.data(), sl.data(), static_cast<char*>(a.recv),
                             ro.data(), rl.data());
    }
    case Kind::kBarrier:
      if (h.local_size > 1) TS_RETURN_IF_ERROR(local(h, Kind::kBarrier, Args{}));
      if (h.local_rank == 0) net_barrier(net, h.leaders, h.my_host);
      if (h.local_size > 1) TS_RETURN_IF_ERROR(local(h, Kind::kBarrier, Args{}));
      return Status::ok();
    case Kind::kInscan:
    case Kind::kExscan: {
      // Every rank's input, folded in rank order up to this rank (exclusive: zeros on rank 0).
      const size_t bytes = a.count * es;
      std::vector<char> all(bytes * n);
      std::vector<size_t> offs(n), lens(n, bytes);
      for (size_t r = 0; r < n; ++r) offs[r] = r * bytes;
      TS_RETURN_IF_ERROR(allgatherv_bytes(c, h, a.send, all.data(), offs, lens));
      const size_t upto = kind == Kind::kInscan ? me + 1 : me;
      if (upto == 0) {
        if (bytes) std::memset(a.recv, 0, bytes);
      } else if (upto == 1) {
        if (bytes) std::memcpy(a.recv, all.data(), bytes);
      } else {
        std::vector<const void*> srcs(upto);
        for (size_t r = 0; r < upto; ++r) srcs[r] = all.data() + r * bytes;
        reduce(a.recv, srcs.data(), static_cast<int>(upto), a.count, a.dtype, a.op, 0);
      }
      return Status::ok();
    }
    case Kind::kSendRecv:
      break;
  }
  (void)total;
  return make_status(Code::kUnsupported, "{} across hosts is not available on {} ({})", kind_name(kind), c.name,
                     hier_describe(c));
}

}  // namespace tessera::coll
