// The allreduce rows across hosts and the reductions composed of this communicator's allreduce (their
// formulas: hier/rows.cc).
#include <cstring>

#include "base/memcopy.h"
#include "coll/dispatch.h"
#include "coll/hier/compose.h"
#include "coll/hier/net.h"
#include "coll/p2p.h"
#include "coll/reduce/reduce.h"

namespace tessera::coll {
namespace {

// Avg: the rows reduce with sum and divide here, once.
void divide_avg(Communicator& c, Hier& h, const Args& a) {
  if (a.op != Op::kAvg) return;
  const size_t es = dtype_size(a.dtype);
  char* zeros = grow(h.zeros, a.count * es);
  std::memset(zeros, 0, a.count * es);
  const void* s[2] = {a.recv, zeros};
  reduce(a.recv, s, 2, a.count, a.dtype, Op::kAvg, c.size);
}
Op inner(Op op) { return op == Op::kAvg ? Op::kSum : op; }
using NetAllreduce = void (*)(Net&, const std::vector<int>&, int, const char*, char*, size_t, DType, Op);

// The phase between hosts coded for the wire (NetShape::compress) when the call is a float32 sum or
// average; false when it runs as it is. `at`: where this member's values start in the call's buffers (the
// residual of error feedback is kept per send buffer, count and slice).
bool coded_between(Communicator& c, const Args& a, const std::vector<int>& group, int gi, const char* in, char* out,
                   size_t count, size_t at) {
  const NetShape& ns = *c.net;
  if (ns.compress == Compress::kNone || a.dtype != DType::kFloat32 || (a.op != Op::kSum && a.op != Op::kAvg))
    return false;
  Hier& h = *c.hier;
  float* residual = nullptr;
  if (ns.feedback) {
    std::vector<float>& r = h.feedback[{a.send, a.count, at}];
    if (r.size() != count) r.assign(count, 0.0f);
    residual = r.data();
  }
  Net net{c, h};
  net_allreduce_compressed(net, group, gi, reinterpret_cast<const float*>(in), reinterpret_cast<float*>(out), count,
                           ns.compress, residual);
  return true;
}

// My slice of the local reduce-scatter, allreduced with the same slice of every other host, then the
// local allgather.
Status rails(Communicator& c, const Args& a, NetAllreduce between) {
  Hier& h = *c.hier;
  if (a.count == 0) return Status::ok();
  const size_t es = dtype_size(a.dtype);
  std::vector<size_t> counts(static_cast<size_t>(h.local_size)), displs(counts.size());
  for (int i = 0; i < h.local_size; ++i) {
    counts[static_cast<size_t>(i)] = block_size(a.count, h.local_size, i);
    displs[static_cast<size_t>(i)] = block_begin(a.count, h.local_size, i);
  }
  const size_t mine = counts[static_cast<size_t>(h.local_rank)];
  char* slice = grow(h.a, mine * es);
  const Op op = inner(a.op);
  TS_RETURN_IF_ERROR(local(h, Kind::kReduceScatterv, Args{.send = a.send, .recv = slice, .count = mine,
                                                          .dtype = a.dtype, .op = op, .rcounts = counts.data()}));
  Net net{c, h};
  if (!coded_between(c, a, h.rail, h.my_host, slice, slice, mine, displs[static_cast<size_t>(h.local_rank)]))
    between(net, h.rail, h.my_host, slice, slice, mine, a.dtype, op);
  TS_RETURN_IF_ERROR(local(h, Kind::kAllgatherv, Args{.send = slice, .recv = a.recv, .count = mine, .dtype = a.dtype,
                                                      .rcounts = counts.data(), .rdispls = displs.data()}));
  divide_avg(c, h, a);
  return Status::ok();
}

// Reduce to the host's first member, allreduce between the hosts' first members, broadcast on the host.
// With one member per host, the whole buffer goes straight from send to recv.
Status leaders(Communicator& c, const Args& a, NetAllreduce between) {
  Hier& h = *c.hier;
  if (a.count == 0) return Status::ok();
  const Op op = inner(a.op);
  const char* mine = static_cast<const char*>(a.send);  // what this host's leader contributes
  if (h.local_size > 1) {
    TS_RETURN_IF_ERROR(local(h, Kind::kReduce, Args{.send = a.send, .recv = a.recv, .count = a.count,
                                                    .dtype = a.dtype, .op = op, .root = 0}));
    mine = static_cast<const char*>(a.recv);
  }
  Net net{c, h};
  if (h.local_rank == 0 && !coded_between(c, a, h.leaders, h.my_host, mine, static_cast<char*>(a.recv), a.count, 0))
    between(net, h.leaders, h.my_host, mine, static_cast<char*>(a.recv), a.count, a.dtype, op);
  if (h.local_size > 1)
    TS_RETURN_IF_ERROR(local(h, Kind::kBroadcast, Args{.send = a.recv, .recv = a.recv, .count = a.count,
                                                       .dtype = a.dtype, .root = 0}));
  divide_avg(c, h, a);
  return Status::ok();
}

}  // namespace

namespace across {

Status allreduce_rails(Communicator& c, const Args& a) { return rails(c, a, net_allreduce_ring); }
Status allreduce_rails_rd(Communicator& c, const Args& a) { return rails(c, a, net_allreduce_doubling); }
Status allreduce_leaders(Communicator& c, const Args& a) { return leaders(c, a, net_allreduce_ring); }
Status allreduce_leaders_rd(Communicator& c, const Args& a) { return leaders(c, a, net_allreduce_doubling); }

// One ring over every member in rank order. Inside a group of send/recv calls (group_start) the ring's own
// exchanges cannot complete, so the call runs as `leaders` there.
Status allreduce_flat_ring(Communicator& c, const Args& a) {
  if (group_depth() != 0) return allreduce_leaders(c, a);
  Hier& h = *c.hier;
  if (a.count == 0) return Status::ok();
  const int n = c.size, me = c.rank;
  const size_t es = dtype_size(a.dtype), count = a.count;
  const Op op = inner(a.op);
  char* buf = static_cast<char*>(a.recv);
  if (a.send != a.recv) memcopy(a.recv, a.send, count * es);
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
    fold2(rp, tmp, rp, block_size(count, n, rb), a.dtype, op);
  }
  for (int s = 0; s < n - 1; ++s) {
    const int sb = (me + 1 - s + n) % n, rb = (me - s + n) % n;
    TS_RETURN_IF_ERROR(exchange(buf + block_begin(count, n, sb) * es, block_size(count, n, sb) * es,
                                buf + block_begin(count, n, rb) * es, block_size(count, n, rb) * es));
  }
  divide_avg(c, h, a);
  return Status::ok();
}

// Every rank's `bytes` at `in`, packed by rank into `out` (n * bytes) on every rank.
Status allgather_packed(Communicator& c, Hier& h, const void* in, char* out, size_t bytes) {
  const size_t n = static_cast<size_t>(c.size);
  std::vector<size_t> offs(n), lens(n, bytes);
  for (size_t r = 0; r < n; ++r) offs[r] = r * bytes;
  return allgatherv_bytes(c, h, in, out, offs, lens);
}

// Every rank's input everywhere, the first `upto` folded in rank order: the canonical rows' bits.
Status fold_in_rank_order(Communicator& c, Hier& h, const Args& a, size_t upto, Op op) {
  if (a.count == 0) return Status::ok();  // every rank's count is the same
  const size_t bytes = a.count * dtype_size(a.dtype);
  char* all = grow(h.c, bytes * static_cast<size_t>(c.size));
  TS_RETURN_IF_ERROR(allgather_packed(c, h, a.send, all, bytes));
  if (upto == 0) {
    std::memset(a.recv, 0, bytes);
  } else if (upto == 1) {
    memcopy(a.recv, all, bytes);
  } else {
    std::vector<const void*> srcs(upto);
    for (size_t r = 0; r < upto; ++r) srcs[r] = all + r * bytes;
    reduce(a.recv, srcs.data(), static_cast<int>(upto), a.count, a.dtype, op, op == Op::kAvg ? static_cast<int>(upto) : 0);
  }
  return Status::ok();
}

Status allreduce_gather_fold(Communicator& c, const Args& a) {
  return fold_in_rank_order(c, *c.hier, a, static_cast<size_t>(c.size), a.op);
}

// Reduce: the allreduce this communicator selects, into a scratch buffer at non-roots.
Status reduce_via_allreduce(Communicator& c, const Args& a) {
  Hier& h = *c.hier;
  Args b = a;
  if (c.rank != a.root) b.recv = grow(h.not_root, a.count * dtype_size(a.dtype));
  return dispatch(c, Kind::kAllreduce, b);
}

// Reduce-scatter(v): the allreduce of the whole input, of which each rank keeps its block.
Status reduce_scatter_via_allreduce(Communicator& c, const Args& a, bool v) {
  const size_t n = static_cast<size_t>(c.size), me = static_cast<size_t>(c.rank), es = dtype_size(a.dtype);
  std::vector<size_t> counts(n, a.count);
  if (v) counts.assign(a.rcounts, a.rcounts + n);
  size_t sum = 0, at = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r == me) at = sum;
    sum += counts[r];
  }
  std::vector<char> all(sum * es);
  TS_RETURN_IF_ERROR(dispatch(c, Kind::kAllreduce,
                              Args{.send = a.send, .recv = all.data(), .count = sum, .dtype = a.dtype, .op = a.op}));
  if (counts[me]) memcopy(a.recv, all.data() + at * es, counts[me] * es);
  return Status::ok();
}
Status reduce_scatter(Communicator& c, const Args& a) { return reduce_scatter_via_allreduce(c, a, false); }
Status reduce_scatterv(Communicator& c, const Args& a) { return reduce_scatter_via_allreduce(c, a, true); }

}  // namespace across
}  // namespace tessera::coll
