// The rows of a communicator whose members span hosts: each composes collectives of the host-local
// communicator (the shared-memory engine's own rows, selected there) with patterns between hosts
// (hier/net.h), and is priced by the same model as the engine's rows: the local phases by the local rows'
// costs on a host of ppn members, the phases between hosts by the link (Shape::net, select/link.h).
//
// Allreduce of S bytes over H hosts of p members (n = H p):
//   rails      local reduce-scatter(S) + net(S/p, bw = min(stream_bw, host_bw/p)) + local allgather(S):
//              the members with the same local rank on every host (a rail) allreduce their slice between
//              hosts, all rails at once, so every member carries 1/p of the host's traffic (equal hosts)
//   leaders    local reduce(S) + net(S, stream_bw) + local broadcast(S): the first member of each host alone
//   flat_ring  2(n-1) T(S/n, stream_bw) + (n-1) S/n gamma: one ring over every member (send/recv:
//              shared memory within a host, messages between hosts)
//   gather_fold  every member's input everywhere, folded in rank order: the canonical row (deterministic
//              mode's bits equal the one-host canonical rows')
//   net(S, bw) between hosts: ring (_ring rows) 2(H-1) T(S/H, bw) + (H-1) S/H gamma, or recursive
//              doubling (_rd rows, H a power of two) log2(H) (T(S, bw) + S gamma)
//   T(S, bw)   one transfer between hosts: latency, the first MiB at the link's burst rate, the rest at bw
//              (transfer_seconds, select/link.h)
// On a machine with more of the job's PEs than CPUs (NetShape::contention = PEs per CPU: hosts that are
// namespaces or containers of one machine), phases in which every PE works at once take `contention` times
// longer: all of rails, flat_ring and the alltoall exchange, and the local phases of the leaders rows (their
// transfers between hosts are the leaders' alone). A local phase's waits are priced as switches of process
// there already (ModelParams::oversub_alpha) and are not scaled again: its copies and reductions are.
// The other collectives have one row each, composed of the byte movers of hier/net.h or of another
// collective of this communicator (reduce and reduce-scatter of allreduce, gather and the scans of
// allgather, scatter of broadcast), priced as what they compose.
#include "coll/hier/rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "coll/hier/compose.h"
#include "coll/select/link.h"
#include "coll/select/select.h"

namespace tessera::coll {
namespace {

using M = ModelParams;
using namespace across;

// ---- costs

double H(const Shape& s) { return s.net->hosts; }
double P(const Shape& s) { return s.net->ppn; }
double B(const Shape& s) { return static_cast<double>(s.bytes); }
double K(const Shape& s) { return s.net->contention; }
const LinkParams& link(const Shape& s) { return s.net->link; }
double log2_ceil(double x) { return x > 1 ? std::ceil(std::log2(x)) : 0; }
bool spans(const Shape& s) { return s.net != nullptr; }
bool pow2_hosts(const Shape& s) { return spans(s) && (s.net->hosts & (s.net->hosts - 1)) == 0; }
// Rails need hosts of equal size, more than one member each, and a slice for every member.
bool rails_apply(const Shape& s) {
  return spans(s) && s.net->equal && s.net->ppn > 1 && s.bytes / dtype_size(s.dtype) >= static_cast<size_t>(s.net->ppn);
}
bool rails_rd_apply(const Shape& s) { return rails_apply(s) && pow2_hosts(s); }

// The bytes of its own buffers (input and output) that the busiest member of a local phase of `kind` reads or
// writes once, for `bytes` as the rows pass it: the whole payload for reduce and broadcast (in place, as the
// rows call it), a member's block for the reduce-scatters, gathers and scatters, a piece for alltoall.
double own_bytes(Kind kind, double bytes, double p) {
  switch (kind) {
    case Kind::kReduce: return 2 * bytes;  // the root's input read and its output written
    case Kind::kBroadcast: return bytes;   // the root's buffer read, every other's written
    case Kind::kReduceScatter: case Kind::kReduceScatterv: case Kind::kAllgather: case Kind::kAllgatherv:
    case Kind::kGather: case Kind::kScatter: return (p + 1) * bytes;
    case Kind::kAlltoall: return 2 * p * bytes;
    default: return 0;
  }
}

// The cheapest local row of `kind` for `bytes` on a host of ppn members, on the machine's shared CPUs. Its
// estimate is added to transfers between hosts, so the absolute figure counts where the engine's own choice
// needs only the order. The local rows price their copies in cache, where their staging stays; a member
// whose own buffers outgrow the cache streams them through memory once besides: each of those bytes pays
// half a copy's difference between the memory's rate and the cache's (ModelParams::beta_mem; a copy reads
// one byte and writes one). Pricing every copy at the memory's rate instead put the reduce and broadcast of
// the leaders rows well above their measured time, and the choice with two members per host on the rails
// (docs/hosts.md, "Local phases beyond the cache"). The copies and reductions take `contention` times
// longer on shared CPUs; the row's waits do not again, since a local row on a machine with more PEs than
// CPUs already prices each wait as a switch of process (ModelParams::oversub_alpha). A host of one member
// still copies its own block from its input to its output in an allgather or alltoall (out of place, as the
// calls mostly are; left out, the large rows of one member per host ran well above their estimate:
// docs/hosts.md, "The model's wake-up"); the other kinds move nothing there.
double on_host(Kind kind, const Shape& s, size_t bytes, const M& m) {
  if (s.net->ppn == 1) {
    if (kind != Kind::kAllgather && kind != Kind::kAlltoall) return 0;
    return K(s) * static_cast<double>(bytes) *
           (2.0 * static_cast<double>(bytes) <= m.cache_bytes ? m.beta : m.beta_mem);
  }
  Shape h = s;
  h.kind = kind;
  h.n = s.net->ppn;
  h.bytes = bytes;
  h.net = nullptr;
  h.symmetric = false;
  const Candidate* best = nullptr;
  const std::vector<Candidate> rows = candidates(h, m, false);
  for (const Candidate& c : rows)
    if (c.supported && c.allowed && std::isfinite(c.cost) && (!best || c.cost < best->cost)) best = &c;
  if (!best) return 0;
  M no_waits = m;
  no_waits.alpha = no_waits.oversub_alpha = 0;
  const double work = best->algo->cost(h, no_waits), waits = std::max(0.0, best->cost - work);
  const double own = own_bytes(kind, static_cast<double>(bytes), P(s));
  const double memory = own <= m.cache_bytes ? 0 : own * std::max(0.0, m.beta_mem - m.beta) / 2;
  return waits + K(s) * (work + memory);
}
size_t per_member(const Shape& s) { return s.bytes / static_cast<size_t>(s.net->ppn); }

// A member that sends `messages` to other hosts in one step and receives as many: the latency covers one of
// each; every further one costs its CPU a send's and a receive's overhead (LogP's o), taken together as the
// link's one-way latency (on a link whose wire is the kernel's copy, a ping is little else), and on shared
// CPUs `contention` times that.
double messages_seconds(const Shape& s, double messages) {
  return messages > 1 ? K(s) * (messages - 1) * link(s).alpha : 0;
}

// The phase between hosts coded for the wire (hier/compress.h: float32 sums and averages): an allgather of
// every member's code, then one coding and H decodings, each about a reduction pass over the values.
bool coded(const Shape& s) {
  return spans(s) && s.net->compress != Compress::kNone && s.dtype == DType::kFloat32 &&
         (s.op == Op::kSum || s.op == Op::kAvg);
}
// Allgathers of float32 coded for the wire (NetShape::gather_compress): the coded row alone applies, so that a
// coded call always codes.
bool coded_gather(const Shape& s) {
  return spans(s) && s.net->gather_compress != Compress::kNone && s.dtype == DType::kFloat32;
}
bool uncoded_gather(const Shape& s) { return spans(s) && !coded_gather(s); }
// A ring over every member codes nothing: with compression set it does not apply, so that a coded call
// always codes (the user asked for it; tessera-info --predict --compress says whether it pays).
bool uncoded(const Shape& s) { return spans(s) && !coded(s); }
// Coding one value and decoding one, each in full passes of a two-input reduction at the memory's rate
// (beta_mem + gamma_mem per byte, what ModelParams measures at start-up), as bench/code_speed.cc measured
// the codes against that pass on the machine docs/coll.md names.
struct CodeCost {
  double encode, decode;
};
CodeCost code_cost(Compress c) {
  switch (c) {
    case Compress::kBf16: return {1.4, 0.85};
    case Compress::kFp8: return {4.0, 1.25};
    case Compress::kInt8: return {3.0, 0.75};
    default: return {0, 0};
  }
}
// The coding runs in pieces that go on the wire as they are coded and are decoded as they come in
// (net_allreduce_compressed), so the wire and the coding overlap but for one piece of the shorter.
double coded_seconds(const Shape& s, size_t bytes, double bw, const LinkParams& l, const M& m) {
  const size_t values = bytes / sizeof(float);
  const double code = static_cast<double>(encoded_bytes(s.net->compress, values));
  const CodeCost k = code_cost(s.net->compress);
  const double wire = (H(s) - 1) * transfer_seconds(l, code, bw);
  const double cpu = (k.encode + H(s) * k.decode) * static_cast<double>(bytes) * (m.beta_mem + m.gamma_mem);
  const double pieces = std::max<double>(1, std::ceil(static_cast<double>(values) / static_cast<double>(compress_piece())));
  return std::max(wire, cpu) + std::min(wire, cpu) / pieces;
}

double rails_cost(const Shape& s, const M& m, bool doubling) {
  // A rail's share of the host's streams, its burst included (the rails send at once).
  LinkParams l = link(s);
  const double bw = std::min(l.stream_bw, l.host_bw / P(s));
  l.burst_bw *= bw / l.stream_bw;
  const size_t slice = per_member(s);
  const double net = coded(s) ? coded_seconds(s, slice, bw, l, m)
                     : doubling ? net_doubling_seconds(s.net->hosts, slice, bw, l, m)
                                : net_ring_seconds(s.net->hosts, slice, bw, l, m);
  return on_host(Kind::kReduceScatterv, s, slice, m) + K(s) * net + on_host(Kind::kAllgatherv, s, slice, m);
}
double leaders_cost(const Shape& s, const M& m, bool doubling) {
  const LinkParams& l = link(s);
  const double net = coded(s) ? coded_seconds(s, s.bytes, l.stream_bw, l, m)
                     : doubling ? net_doubling_seconds(s.net->hosts, s.bytes, l.stream_bw, l, m)
                                : net_ring_seconds(s.net->hosts, s.bytes, l.stream_bw, l, m);
  return on_host(Kind::kReduce, s, s.bytes, m) + net + on_host(Kind::kBroadcast, s, s.bytes, m);
}
double flat_ring_cost(const Shape& s, const M& m) {
  const double n = H(s) * P(s);
  return K(s) * (2 * (n - 1) * transfer_seconds(link(s), B(s) / n, link(s).stream_bw) + (n - 1) * B(s) / n * m.gamma);
}
// Allgather of `bytes` per member: the host's blocks on the host, the leaders' ring, the whole broadcast.
double allgather_cost_of(const Shape& s, size_t bytes, const M& m) {
  const double host_block = P(s) * static_cast<double>(bytes), n = H(s) * P(s);
  return on_host(Kind::kAllgather, s, bytes, m) +
         (H(s) - 1) * transfer_seconds(link(s), host_block, link(s).stream_bw) +
         on_host(Kind::kBroadcast, s, static_cast<size_t>(n) * bytes, m);
}
// The coded allgather: the codes' allgather, one coding of this member's block and n decodings.
double coded_allgather_cost(const Shape& s, const M& m) {
  const CodeCost k = code_cost(s.net->gather_compress);
  const size_t code = encoded_bytes(s.net->gather_compress, s.bytes / sizeof(float));
  return allgather_cost_of(s, code, m) +
         (k.encode + H(s) * P(s) * k.decode) * B(s) * (m.beta_mem + m.gamma_mem);
}
// A tree's transfers go one way at a time (oneway_bw); the rings and exchanges above send both ways at once.
// Nothing comes back to the root, so back-to-back broadcasts overlap: the root sends a call's message while
// the last call's is still on its way, and a level of the tree costs a loop of calls its sender's and its
// receiver's overhead (half the one-way latency, as messages_seconds takes the two together) where one call
// alone waits the whole latency. The rows are priced as the calls of a loop run (tessera-perf, nccl-tests);
// at the whole latency, the small broadcasts ran well below their estimate (docs/hosts.md, "Local phases
// beyond the cache").
double broadcast_cost_of(const Shape& s, size_t bytes, const M& m) {
  const LinkParams& l = link(s);
  return log2_ceil(H(s)) * (transfer_seconds(l, static_cast<double>(bytes), l.oneway_bw) - l.alpha / 2) +
         on_host(Kind::kBroadcast, s, bytes, m);
}
double gather_fold_cost(const Shape& s, const M& m) {
  return allgather_cost_of(s, s.bytes, m) + H(s) * P(s) * B(s) * m.gamma;
}
// With compression set the canonical row codes nothing: it is then priced out, so that a coded call
// codes, and runs only where it is the one row allowed (deterministic mode).
double gather_fold_or_coded(const Shape& s, const M& m) {
  return coded(s) ? std::numeric_limits<double>::infinity() : gather_fold_cost(s, m);
}
// The cheapest allreduce row of this communicator for `bytes`.
double allreduce_cost_of(const Shape& s, size_t bytes, const M& m) {
  Shape a = s;
  a.kind = Kind::kAllreduce;
  a.bytes = bytes;
  double best = std::numeric_limits<double>::infinity();
  for (const Algorithm& r : hier_algorithms())
    if (r.kind == Kind::kAllreduce && fits(r, a)) best = std::min(best, r.cost(a, m));
  return best;
}

constexpr Algorithm kRows[] = {
    // ---- allreduce
    {.kind = Kind::kAllreduce, .id = 64, .name = "rails",
     .description = "across hosts: local reduce-scatter, every member's slice allreduced with its rail (the same "
                    "local rank on every host) by a ring between hosts, local allgather (hosts of equal size)",
     .canonical = false, .supports = rails_apply,
     .cost = [](const Shape& s, const M& m) { return rails_cost(s, m, false); }, .compose = allreduce_rails},
    {.kind = Kind::kAllreduce, .id = 65, .name = "rails_rd",
     .description = "rails with recursive doubling between hosts (a power-of-two number of hosts)",
     .canonical = false, .supports = rails_rd_apply,
     .cost = [](const Shape& s, const M& m) { return rails_cost(s, m, true); }, .compose = allreduce_rails_rd},
    {.kind = Kind::kAllreduce, .id = 66, .name = "leaders",
     .description = "across hosts: local reduce to each host's first member, a ring between those, local broadcast",
     .canonical = false, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return leaders_cost(s, m, false); }, .compose = allreduce_leaders},
    {.kind = Kind::kAllreduce, .id = 67, .name = "leaders_rd",
     .description = "leaders with recursive doubling between hosts (a power-of-two number of hosts; small messages)",
     .canonical = false, .supports = pow2_hosts,
     .cost = [](const Shape& s, const M& m) { return leaders_cost(s, m, true); }, .compose = allreduce_leaders_rd},
    {.kind = Kind::kAllreduce, .id = 68, .name = "flat_ring",
     .description = "across hosts: one ring over every member in rank order (send/recv); not with compression",
     .canonical = false, .supports = uncoded, .cost = flat_ring_cost, .compose = allreduce_flat_ring},
    {.kind = Kind::kAllreduce, .id = 69, .name = "gather_fold",
     .description = "across hosts: every member's input allgathered, folded in rank order (canonical)",
     .canonical = true, .supports = spans, .cost = gather_fold_or_coded, .compose = allreduce_gather_fold},
    // ---- reductions composed of allreduce: canonical, because the allreduce they call is selected under the
    // same deterministic mode
    {.kind = Kind::kReduce, .id = 64, .name = "via_allreduce",
     .description = "across hosts: this communicator's allreduce, kept at the root",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return allreduce_cost_of(s, s.bytes, m); },
     .compose = reduce_via_allreduce},
    {.kind = Kind::kReduceScatter, .id = 64, .name = "via_allreduce",
     .description = "across hosts: this communicator's allreduce of the whole input, each rank keeping its block",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) {
       return allreduce_cost_of(s, s.bytes * static_cast<size_t>(s.n), m);
     },
     .compose = reduce_scatter},
    {.kind = Kind::kReduceScatterv, .id = 64, .name = "via_allreduce",
     .description = "across hosts: this communicator's allreduce of the whole input, each rank keeping its block",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) {
       return allreduce_cost_of(s, s.bytes * static_cast<size_t>(s.n), m);
     },
     .compose = reduce_scatterv},
    // ---- data movement
    {.kind = Kind::kAllgather, .id = 64, .name = "leaders",
     .description = "across hosts: the host's blocks gathered on the host, a ring of host blocks between the "
                    "hosts' first members, the whole broadcast on each host",
     .canonical = true, .supports = uncoded_gather,
     .cost = [](const Shape& s, const M& m) { return allgather_cost_of(s, s.bytes, m); }, .compose = allgather},
    {.kind = Kind::kAllgather, .id = 65, .name = "coded",
     .description = "across hosts, float32 with allgather compression set: every member's block coded, the codes "
                    "allgathered as leaders does, every block decoded on every member (its own too)",
     .canonical = true, .supports = coded_gather, .cost = coded_allgather_cost, .compose = allgather_coded},
    {.kind = Kind::kAllgatherv, .id = 64, .name = "leaders",
     .description = "allgather leaders with each rank's own count",
     .canonical = true, .supports = uncoded_gather,
     .cost = [](const Shape& s, const M& m) { return allgather_cost_of(s, s.bytes, m); }, .compose = allgatherv},
    {.kind = Kind::kAllgatherv, .id = 65, .name = "coded",
     .description = "allgather coded with each rank's own count",
     .canonical = true, .supports = coded_gather, .cost = coded_allgather_cost, .compose = allgatherv_coded},
    {.kind = Kind::kBroadcast, .id = 64, .name = "tree",
     .description = "across hosts: a binomial tree over one member per host (the root on its own), then each "
                    "host's broadcast",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return broadcast_cost_of(s, s.bytes, m); }, .compose = broadcast_tree},
    {.kind = Kind::kGather, .id = 64, .name = "via_allgather",
     .description = "across hosts: every count and block allgathered, kept at the root",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return allgather_cost_of(s, 8, m) + allgather_cost_of(s, s.bytes, m); },
     .compose = gather},
    {.kind = Kind::kGatherv, .id = 64, .name = "via_allgather",
     .description = "gather via_allgather with each rank's own count",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return 2 * allgather_cost_of(s, 8, m); }, .compose = gatherv},
    {.kind = Kind::kScatter, .id = 64, .name = "via_broadcast",
     .description = "across hosts: the root's layout and buffer broadcast, each rank taking its piece",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) {
       return broadcast_cost_of(s, 16 * static_cast<size_t>(s.n), m) +
              broadcast_cost_of(s, s.bytes * static_cast<size_t>(s.n), m);
     },
     .compose = scatter},
    {.kind = Kind::kScatterv, .id = 64, .name = "via_broadcast",
     .description = "scatter via_broadcast with each rank's own count",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return 2 * broadcast_cost_of(s, 16 * static_cast<size_t>(s.n), m); },
     .compose = scatterv},
    {.kind = Kind::kAlltoall, .id = 64, .name = "exchange",
     .description = "across hosts: every message to another host posted at once, the host's own alltoall meanwhile",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) {
       const double remote = H(s) * P(s) - P(s);  // members on other hosts
       const double bw = std::min(link(s).host_bw, P(s) * link(s).stream_bw);
       return K(s) * transfer_seconds(link(s), P(s) * remote * B(s), bw) + on_host(Kind::kAlltoall, s, s.bytes, m) +
              messages_seconds(s, remote);
     },
     .compose = alltoall_exchange},
    {.kind = Kind::kAlltoall, .id = 65, .name = "leaders",
     .description = "across hosts: each host's send buffers gathered on its first member, one message per pair "
                    "of hosts between them, the receive buffers assembled there and scattered",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) {
       const double n = H(s) * P(s), row = n * B(s);
       const double copies = 2 * P(s) * row * (2 * P(s) * row <= m.cache_bytes ? m.beta : m.beta_mem);
       return on_host(Kind::kGather, s, static_cast<size_t>(row), m) +
              on_host(Kind::kScatter, s, static_cast<size_t>(row), m) +
              copies + transfer_seconds(link(s), (H(s) - 1) * P(s) * P(s) * B(s), link(s).stream_bw) +
              messages_seconds(s, H(s) - 1);
     },
     .compose = alltoall_leaders},
    {.kind = Kind::kAlltoallv, .id = 64, .name = "exchange",
     .description = "alltoall exchange with counts per pair",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M&) { return link(s).alpha + messages_seconds(s, (H(s) - 1) * P(s)); },
     .compose = alltoallv_exchange},
    {.kind = Kind::kBarrier, .id = 64, .name = "leaders",
     .description = "across hosts: each host's barrier, a dissemination barrier of the hosts' first members, each "
                    "host's barrier again",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) {
       return 2 * on_host(Kind::kBarrier, s, 0, m) + log2_ceil(H(s)) * link(s).alpha;
     },
     .compose = barrier_leaders},
    {.kind = Kind::kInscan, .id = 64, .name = "via_allgather",
     .description = "across hosts: every input allgathered, folded in rank order up to this rank",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return gather_fold_cost(s, m); }, .compose = inscan},
    {.kind = Kind::kExscan, .id = 64, .name = "via_allgather",
     .description = "across hosts: every input allgathered, folded in rank order before this rank",
     .canonical = true, .supports = spans,
     .cost = [](const Shape& s, const M& m) { return gather_fold_cost(s, m); }, .compose = exscan},
};

// (That every row has `compose` is checked by select_test: the address of a function of another file is
// not a constant expression under every compiler's sanitizer builds.)
consteval bool every_row_is_apart() {
  for (const Algorithm& a : kRows)
    if (a.run || a.id < 64) return false;
  return true;
}
static_assert(every_row_is_apart(), "a row across hosts runs on one host's engine, or shares an id range with those");

}  // namespace

std::span<const Algorithm> hier_algorithms() { return kRows; }

}  // namespace tessera::coll
