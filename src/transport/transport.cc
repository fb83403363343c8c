#include "transport/transport.h"

#include "transport/shm/segment.h"

namespace tessera::transport {
namespace {
bool self_reach(const PeerInfo& me, const PeerInfo& peer) { return me.pe == peer.pe; }
Status self_map(PeerMemory* m) {
  m->heap = m->my_heap;
  m->data = m->my_data;
  return Status::ok();
}
void self_unmap(PeerMemory* m) { m->heap = m->data = nullptr; }  // the runtime owns its own segments

bool shm_reach(const PeerInfo& me, const PeerInfo& peer) { return me.host == peer.host; }
// The peer's segments by name; they exist until every PE has mapped them (pgas/runtime.cc unlinks them
// after a barrier).
Status shm_map(PeerMemory* m) {
  const std::string id = std::to_string(m->pe);
  TS_ASSIGN_OR_RETURN(void* heap, shm::open_map(shm::segment_name(m->job_id, id), m->heap_bytes));
  void* data = nullptr;
  if (m->data_bytes) {
    Result<void*> d = shm::open_map(shm::segment_name(m->job_id, "data-" + id), m->data_bytes);
    if (!d.is_ok()) {
      shm::unmap(heap, m->heap_bytes);
      return d.status();
    }
    data = d.value();
  }
  m->heap = static_cast<char*>(heap);
  m->data = static_cast<char*>(data);
  return Status::ok();
}
void shm_unmap(PeerMemory* m) {
  shm::unmap(m->heap, m->heap_bytes);
  if (m->data) shm::unmap(m->data, m->data_bytes);
  m->heap = m->data = nullptr;
}

// Both map every segment: the data path loads and stores, and never calls a data function of theirs.
const Transport kSelf{
    .name = "self",
    .description = "the PE itself: plain memory",
    .can_reach = self_reach,
    .map = self_map,
    .unmap = self_unmap,
};
const Transport kShm{
    .name = "shm",
    .description = "same host: POSIX shared memory mapped by every PE (zero copy)",
    .can_reach = shm_reach,
    .map = shm_map,
    .unmap = shm_unmap,
};
}  // namespace
extern const Transport kUcx;  // transport/ucx/ucx.cc
namespace {
const Transport* const kTransports[] = {&kSelf, &kShm, &kUcx};
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
