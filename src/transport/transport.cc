#include "transport/transport.h"

namespace tessera::transport {
namespace {
bool self_reach(const PeerInfo& me, const PeerInfo& peer) { return me.pe == peer.pe; }
bool shm_reach(const PeerInfo& me, const PeerInfo& peer) { return me.host == peer.host; }

const Transport kSelf{"self", "the PE itself: plain memory", self_reach};
const Transport kShm{"shm", "same host: POSIX shared memory mapped by every PE (zero copy)", shm_reach};
const Transport* const kTransports[] = {&kSelf, &kShm};
}  // namespace

const Transport* choose(const PeerInfo& me, const PeerInfo& peer) {
  for (const Transport* t : kTransports)
    if (t->can_reach(me, peer)) return t;
  return nullptr;
}

const Transport* const* all(int* count) {
  *count = static_cast<int>(sizeof(kTransports) / sizeof(kTransports[0]));
  return kTransports;
}

}  // namespace tessera::transport
