// Transports: how one PE reaches another PE's symmetric heap.
//
// A transport is a record of functions; kTransports lists them in order of preference and, for every
// peer, the first one that can reach it is chosen at init (NCCL's habit). The choice is made once: the
// RMA hot path for a peer on this host is a direct load/store into its mapped heap (pgas::remote), with
// no dispatch per call.
//   shm   peers on this host: POSIX shared memory, every heap mapped by every PE (zero copy)
//   self  the PE itself (also used by a job of one PE)
// Inter-host transport (UCX) plugs in here as a further record.
#pragma once
#include <string>

#include "base/status.h"

namespace tessera::transport {

struct PeerInfo {
  int pe;
  std::string host;  // hostname of the peer, from the bootstrap exchange
};

struct Transport {
  const char* name;
  const char* description;
  bool (*can_reach)(const PeerInfo& me, const PeerInfo& peer);
};

// Name of the first transport that can reach `peer` from `me`, or nullptr.
const Transport* choose(const PeerInfo& me, const PeerInfo& peer);
const Transport* const* all(int* count);

}  // namespace tessera::transport
