// The two-level layer's state of one communicator whose members span hosts (coll/hier.h), shared by its
// parts: hier.cc makes it and agrees on the link, hier/net.cc holds the patterns between hosts and the
// two-level byte movers, hier/rows.cc the registry rows that compose them.
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "coll/algo.h"
#include "coll/comm.h"
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
  // Message path to each rank (the runtime's choice per PE, copied at creation); null for ranks of this host.
  std::vector<const transport::Transport*> msg;
  // Scratch of the rows, each owned by one use so that rows composed of others never share one: a (rails'
  // slice, allgather packing), b (receives between hosts, alltoall in place), c (every rank's input for
  // the rank-order folds), zeros (avg), not_root (reduce's result at the other ranks).
  std::vector<char> a, b, c, zeros, not_root;
  // Compressed phase between hosts (hier/compress.h): every member's code, packed (z); the residuals of
  // error feedback, per buffer: the call's send buffer, its count and where this member's slice of it starts.
  std::vector<char> z;
  std::vector<char> codes;  // the coded allgather's codes of every rank, packed by rank (hier/moves.cc)
  std::map<std::tuple<const void*, size_t, size_t>, std::vector<float>> feedback;
  // Layout and link as selection sees them (Shape::net), rank 0's on every member (agree_link).
  NetShape net;
};

}  // namespace tessera::coll
