// Collectives across hosts: a communicator whose members span hosts runs every collective in two levels.
//
// Inside each host, the members on that host form a local communicator (the shared-memory engine of
// comm.h, every algorithm of the registry). Between hosts, members exchange tagged messages through the
// transport of the peer (transport.h: send/recv; UCX between hosts), in one of these patterns:
//   rails    (allreduce, hosts with equal member counts): a local reduce-scatter leaves each member a slice,
//            the members with the same local rank on every host (a "rail") allreduce their slices between
//            hosts, all rails at once, and a local allgather assembles the result: every member carries a
//            1/ppn share of the inter-host traffic, so a host's links are used by all of its PEs.
//   leaders  (everything else, and allreduce on unequal hosts or small counts): the first member of each
//            host (or the root's own host's root) gathers or reduces locally, the leaders exchange, and a
//            local broadcast or scatter hands the result out.
// Between hosts: ring allreduce (reduce-scatter + allgather, bandwidth-optimal) and recursive doubling
// (log2 rounds, for small payloads on a power-of-two number of hosts), a ring allgather, a binomial-tree
// broadcast, a dissemination barrier, and pairwise exchange for alltoall(v).
// Deterministic mode (TESSERA_DETERMINISTIC): reductions gather every member's input and fold them in rank
// order, so results are bitwise identical to the one-host canonical algorithms.
// Messages of one communicator carry a tag from its uid and the sender's PE; a pair's messages of one
// communicator are matched in the order sent, and every member issues them in the same program order.
#pragma once
#include "base/status.h"
#include "coll/algo.h"
#include "coll/comm.h"

namespace tessera::coll {

struct Hier;

// Makes the two-level part of `c` (members c.world, this PE's rank c.rank): `local` is the communicator of
// the members on this PE's host, already made. Takes ownership of `local`.
Hier* hier_create(Communicator& c, Communicator* local);
void hier_destroy(Hier* h);
// The collective on a communicator whose members span hosts; arguments checked by dispatch.
Status hier_dispatch(Communicator& c, Kind kind, const Args& a, size_t total);
// "2 hosts, 2 members each, rails" for messages and tessera-info.
std::string hier_describe(const Communicator& c);

// Send/recv (coll/p2p.cc). A peer on this host is reached through the local communicator: returns it and
// sets *local_peer; a peer on another host: returns null, and the message goes through hier_post (a tag of
// its own, apart from the collectives' messages), completed by hier_complete.
Communicator* hier_local_peer(Communicator& c, int peer, int* local_peer);
void* hier_post(Communicator& c, bool send, void* buf, size_t bytes, int peer);
void hier_complete(Communicator& c, void* request, bool send, size_t bytes, int peer);

}  // namespace tessera::coll
