// The link between hosts, and the cost of the two-level collectives (coll/hier.h) over it.
//
//   alpha      seconds per message between hosts, one way (latency)
//   stream_bw  bytes per second one stream carries in one direction (a leader's transfer, a ring step)
//   host_bw    bytes per second all streams leaving one host carry together (the rails at once)
// Parameters come from, in order: TESSERA_LINK ("us=20,gbps=1.8,host_gbps=2.4", GB/s = 1e9 bytes/s), the
// rank table (TESSERA_RANK_TABLE's "link"), a measurement when the first communicator that spans hosts
// is made (about 20 ms: a ping-pong and one-way transfers between the first two hosts' leaders, and every
// rail of those hosts at once), or the defaults. Rank 0 of each such communicator publishes its values, so
// every member prices alike.
//
// Allreduce of S bytes over H hosts of p members (n = H p), local costs from the shared-memory model:
//   rails    local reduce-scatter(S) + net(S/p, bw = min(stream_bw, host_bw/p)) + local allgather(S)
//   leaders  local reduce(S) + net(S, stream_bw) + local broadcast(S)
//   ring     2(n-1) (alpha + S/n/stream_bw) + (n-1) S/n gamma   (one ring over every member)
//   net(S, bw) = min(ring: 2(H-1)(alpha + S/H/bw) + (H-1) S/H gamma,
//                    doubling, H a power of two: log2(H) (alpha + S/bw + S gamma))
// On a machine with more of the job's PEs than CPUs (HierShape::contention = PEs per CPU, hosts that are
// namespaces or containers of one machine), phases in which every PE works at once take `contention` times
// longer: all of rails and ring, and the local phases of leaders (its transfer between hosts is the
// leaders' alone).
#pragma once
#include <cstddef>
#include <string>

#include "coll/algo.h"
#include "coll/select/model.h"

namespace tessera::coll {

struct LinkParams {
  double alpha = 25e-6;
  double stream_bw = 1e9;
  double host_bw = 1e9;
  char source[32] = "default";
};

// TESSERA_LINK or the rank table's link, else the defaults with source "default" (then measured).
LinkParams configured_link();
std::string describe(const LinkParams& l);

enum class HierAllreduce : int { kRails, kLeaders, kRing };
const char* hier_allreduce_name(HierAllreduce h);

struct HierShape {
  int hosts = 2;
  int ppn = 1;          // members per host (the largest host when unequal)
  bool equal = true;    // every host has ppn members
  size_t bytes = 0;
  DType dtype = DType::kFloat32;
  size_t slot_bytes = 0;  // the local communicator's staging slot
  bool oversubscribed = false;
  double contention = 1;  // PEs of the job per CPU of this machine, when above 1 (see the top of the file)
};

struct HierPlan {
  HierAllreduce how = HierAllreduce::kLeaders;
  bool doubling = false;  // between hosts: recursive doubling (else the ring)
  double seconds = 0;
  double rails = 0, leaders = 0, ring = 0;  // each pattern's estimate (rails: infinite when hosts differ)
};

// The cheapest pattern for allreduce (TESSERA_HIER_ALLREDUCE forces one: rails, leaders, ring).
HierPlan plan_allreduce(const HierShape& s, const ModelParams& local, const LinkParams& link);
// Between hosts: allreduce of `bytes` over `hosts`, each stream at `bw` bytes/s.
double net_allreduce_seconds(int hosts, size_t bytes, double bw, const LinkParams& link, const ModelParams& local,
                             bool* doubling);
// The cheapest engine algorithm's estimate for `kind` on a host of s.ppn members.
double local_seconds(Kind kind, const HierShape& s, size_t bytes, const ModelParams& local);

}  // namespace tessera::coll
