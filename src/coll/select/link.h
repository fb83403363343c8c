// The link between hosts (LinkParams, select/model.h) and the pieces of the cost of the rows across hosts
// (hier/rows.cc, which gives their formulas).
// Parameters come from, in order: TESSERA_LINK ("us=20,gbps=1.8,oneway_gbps=3,host_gbps=2.4,burst_gbps=4,wake_us=10",
// GB/s = 1e9 bytes/s), the
// rank table (TESSERA_RANK_TABLE's "link"), a measurement when the first communicator that spans hosts
// is made (a ping-pong and one-way transfers between the first two hosts' leaders, and every rail of those
// hosts at once; its cost: docs/journal.md, "Across hosts"), or the defaults. Rank 0 of each such
// communicator publishes its values, so every member prices alike.
#pragma once
#include <cstddef>
#include <string>

#include "coll/algo.h"
#include "coll/select/model.h"

namespace tessera::coll {

// Seconds to move `bytes` between two hosts in one transfer: the latency, the receiver's wake-ups (wake from
// kWakeBytes up, in proportion below), the first LinkParams::kBurstBytes at burst_bw, the rest at `bw`
// (stream_bw with traffic both ways, oneway_bw without, a rail's share).
double transfer_seconds(const LinkParams& l, double bytes, double bw);

// TESSERA_LINK or the rank table's link, else the defaults with source "default" (then measured).
LinkParams configured_link();
std::string describe(const LinkParams& l);

// Between hosts: allreduce of `bytes` over `hosts`, each stream at `bw` bytes/s, by a ring or by recursive
// doubling (a power of two hosts).
double net_ring_seconds(int hosts, size_t bytes, double bw, const LinkParams& link, const ModelParams& local);
double net_doubling_seconds(int hosts, size_t bytes, double bw, const LinkParams& link, const ModelParams& local);

}  // namespace tessera::coll
