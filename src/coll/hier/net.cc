#include "coll/hier/net.h"

#include <algorithm>
#include <cstring>

#include "base/memcopy.h"
#include "coll/dispatch.h"
#include "coll/reduce/reduce.h"
#include "sync/barrier_forms.h"
#include "transport/transport.h"

namespace tessera::coll {

char* grow(std::vector<char>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

const transport::Transport* Net::t(int rank) const { return h.msg[static_cast<size_t>(rank)]; }
Net::~Net() {
  for (const auto& [rank, req] : open)
    if (const transport::Transport* tr = t(rank); tr->abandon) tr->abandon(req, pe(rank));
}
void* Net::send(int rank, const void* buf, size_t bytes) {
  void* r = t(rank)->send(pe(rank), h.key << kPeBits | static_cast<uint64_t>(pe(c.rank)), buf, bytes);
  if (r && c.resilient) [[unlikely]] open.emplace_back(rank, r);
  return r;
}
void* Net::recv(int rank, void* buf, size_t bytes) {
  void* r = t(rank)->recv(pe(rank), h.key << kPeBits | static_cast<uint64_t>(pe(rank)), buf, bytes);
  if (r && c.resilient) [[unlikely]] open.emplace_back(rank, r);
  return r;
}
void Net::wait(int rank, void* req, const char* what, size_t bytes) {
  if (!req) return;
  // From here the request is the wait's: it completes, or a failure watch stops the wait, which lets go of it.
  if (c.resilient) [[unlikely]]
    std::erase(open, std::pair<int, void*>{rank, req});
  t(rank)->wait(req, what, pe(rank), bytes);
}
void Net::exchange(int to, const void* out, size_t out_bytes, int from, void* in, size_t in_bytes, const char* what) {
  void* r = recv(from, in, in_bytes);
  void* s = send(to, out, out_bytes);
  wait(from, r, what, in_bytes);
  wait(to, s, what, out_bytes);
}

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

namespace {
// Pieces in which the ring between hosts receives, folds and sends on (net_allreduce_ring): the pipeline's
// unit, large enough that a piece's fixed costs (a message, a wait) stay small against its transfer.
constexpr size_t kPieceBytes = 1 << 20;
}  // namespace

void net_allreduce_doubling(Net& net, const std::vector<int>& group, int gi, const char* in, char* out, size_t count,
                            DType t, Op op) {
  const int n = static_cast<int>(group.size());
  const size_t es = dtype_size(t);
  if (n == 1 || count == 0) {
    if (in != out && count) memcopy(out, in, count * es);
    return;
  }
  // Partners fold (lower rank's value op higher's), so both hold the same bits.
  char* tmp = grow(net.h.b, count * es);
  const char* mine = in;
  for (int d = 1; d < n; d <<= 1) {
    const int p = gi ^ d;
    net.exchange(group[p], mine, count * es, group[p], tmp, count * es, "allreduce between hosts");
    if (gi < p) fold2(out, mine, tmp, count, t, op);
    else fold2(out, tmp, mine, count, t, op);
    mine = out;
  }
}

// Pipelined in pieces of compress_piece() values (a multiple of the codes' block, so each piece codes the
// same blocks as the whole buffer would, and the result has the same bits): every piece is coded and sent
// on at once, so coding overlaps the wire; pieces are a ring allgather of codes, and each piece is decoded
// (summed in group order) as soon as every member's code of it is in, while later pieces are on the wire.
// Message order on every connection: each piece's first step, in piece order, then for each piece in turn
// its forwarding steps; receives are posted up front in that same order (a pair's messages of one tag
// match in posting order).
void net_allreduce_compressed(Net& net, const std::vector<int>& group, int gi, const float* in, float* out,
                              size_t count, Compress c, float* residual) {
  const int n = static_cast<int>(group.size());
  if (count == 0) return;
  const size_t piece = compress_piece(), np = (count + piece - 1) / piece;
  auto len = [&](size_t j) { return std::min(piece, count - j * piece); };
  std::vector<size_t> at(np + 1, 0);  // a member's codes: piece j at [at[j], at[j + 1])
  for (size_t j = 0; j < np; ++j) at[j + 1] = at[j] + encoded_bytes(c, len(j));
  const size_t cb = at[np];
  char* all = grow(net.h.z, cb * static_cast<size_t>(n));
  auto code = [&](int member, size_t j) { return all + static_cast<size_t>(member) * cb + at[j]; };
  const int right = group[(gi + 1) % n], left = group[(gi + n - 1) % n];
  using Pending = std::pair<void*, size_t>;
  std::vector<Pending> recvs, sends;  // recvs[j * (n - 1) + s]: piece j's step s, from the left
  recvs.resize(np * static_cast<size_t>(n - 1));
  auto post = [&](size_t j, int s) {
    const int rb = (gi - s - 1 + 2 * n) % n;
    const size_t bytes = at[j + 1] - at[j];
    recvs[j * static_cast<size_t>(n - 1) + static_cast<size_t>(s)] = {net.recv(left, code(rb, j), bytes), bytes};
  };
  for (size_t j = 0; j < np && n > 1; ++j) post(j, 0);
  for (size_t j = 0; j < np; ++j)
    for (int s = 1; s < n - 1; ++s) post(j, s);
  for (size_t j = 0; j < np; ++j) {
    encode(c, in + j * piece, residual ? residual + j * piece : nullptr, len(j), code(gi, j));
    if (n > 1) sends.emplace_back(net.send(right, code(gi, j), at[j + 1] - at[j]), at[j + 1] - at[j]);
  }
  for (size_t j = 0; j < np; ++j) {
    for (int s = 0; s < n - 1; ++s) {
      const auto& [r, bytes] = recvs[j * static_cast<size_t>(n - 1) + static_cast<size_t>(s)];
      net.wait(left, r, "allreduce between hosts (coded)", bytes);
      if (s + 1 < n - 1) sends.emplace_back(net.send(right, code((gi - s - 1 + 2 * n) % n, j), bytes), bytes);
    }
    for (int i = 0; i < n; ++i) decode(c, code(i, j), len(j), out + j * piece, i > 0);
  }
  for (auto& [r, bytes] : sends) net.wait(right, r, "allreduce between hosts (coded)", bytes);
}

void net_allreduce_ring(Net& net, const std::vector<int>& group, int gi, const char* in, char* out, size_t count,
                        DType t, Op op) {
  const int n = static_cast<int>(group.size());
  const size_t es = dtype_size(t);
  if (n == 1 || count == 0) {
    if (in != out && count) memcopy(out, in, count * es);
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

// Dissemination barrier among `group` (sync/barrier_forms.h): a round's signal is a one-byte message, its
// wait the receive of the one from member gi - 2^k, then the completion of my send. Messages of one sender
// and tag arrive in the order sent, so round k of the next barrier cannot be taken for this one's.
void net_barrier(Net& net, const std::vector<int>& group, int gi) {
  constexpr const char* kWhat = "barrier between hosts";
  char out = 0, in = 0;
  int to = -1;
  void* sent = nullptr;
  sync::barrier::dissemination(
      gi, static_cast<int>(group.size()),
      [&](int, int to_index) {
        to = group[static_cast<size_t>(to_index)];
        sent = net.send(to, &out, 1);
      },
      [&](int, int from_index) {
        const int from = group[static_cast<size_t>(from_index)];
        net.wait(from, net.recv(from, &in, 1), kWhat, 1);
        net.wait(to, sent, kWhat, 1);
      });
}

Status local(Hier& h, Kind kind, const Args& a) { return dispatch(*h.local, kind, a); }

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
    memcopy(my_block, in, lens[me]);
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

}  // namespace tessera::coll
