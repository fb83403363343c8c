#include "transport/transport.h"

#include <atomic>

#include "base/log.h"
#include "sync/wait.h"
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
// A replacement maps them through the descriptors the peer's process holds (PeerMemory::pid).
Status shm_map(PeerMemory* m) {
  const std::string id = std::to_string(m->pe);
  TS_ASSIGN_OR_RETURN(void* heap, m->pid ? shm::open_map_of(m->pid, m->heap_fd, m->heap_bytes)
                                         : shm::open_map(shm::segment_name(m->job_id, id), m->heap_bytes));
  void* data = nullptr;
  if (m->data_bytes) {
    Result<void*> d = m->pid ? shm::open_map_of(m->pid, m->data_fd, m->data_bytes)
                             : shm::open_map(shm::segment_name(m->job_id, "data-" + id), m->data_bytes);
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
    .caps = kMaps,
    .can_reach = self_reach,
    .map = self_map,
    .unmap = self_unmap,
};
const Transport kShm{
    .name = "shm",
    .description = "same host: POSIX shared memory mapped by every PE (zero copy)",
    .caps = kMaps,
    .can_reach = shm_reach,
    .map = shm_map,
    .unmap = shm_unmap,
};

[[noreturn]] void gone_fail(int pe) {
  log::fatal("PE {} failed and no process has taken its place (resilient mode): this PE, a replacement that "
             "started after it failed, cannot reach its symmetric memory", pe);
}
Status gone_map(PeerMemory*) { return Status::ok(); }
void gone_unmap(PeerMemory*) {}
void gone_put(int pe, uint64_t, const void*, size_t) { gone_fail(pe); }
void gone_get(void*, int pe, uint64_t, size_t) { gone_fail(pe); }
uint64_t gone_atomic(int pe, uint64_t, size_t, AtomicOp, uint64_t, uint64_t) { gone_fail(pe); }
void gone_put_signal(int pe, uint64_t, const void*, size_t, uint64_t, uint64_t, SignalOp) { gone_fail(pe); }
void nothing() {}
const Transport kGone{
    .name = "gone",
    .description = "a failed PE that no process replaced (seen from a replacement PE)",
    .caps = kRma | kAtomics,
    .can_reach = [](const PeerInfo&, const PeerInfo&) { return false; },
    .map = gone_map,
    .unmap = gone_unmap,
    .put = gone_put,
    .get = gone_get,
    .atomic = gone_atomic,
    .put_signal = gone_put_signal,
    .fence = nothing,
    .quiet = nothing,
    .progress = nothing,
};
}  // namespace
const Transport* gone() { return &kGone; }
extern const Transport kTcp;  // transport/tcp/connect.cc
extern const Transport kUcx;  // transport/ucx/ucx.cc
namespace {
// TCP before UCX: where TCP is on it carries the messages, and UCX's open() finds its streams open.
const Transport* const kTransports[] = {&kSelf, &kShm, &kTcp, &kUcx};
}  // namespace

const Transport* choose(const PeerInfo& me, const PeerInfo& peer, uint32_t any_of) {
  for (const Transport* t : kTransports)
    if ((t->caps & any_of) && t->can_reach(me, peer)) return t;
  return nullptr;
}

namespace {
std::atomic<bool> g_loss_tolerated{false};
}  // namespace
void set_peer_loss_tolerated(bool on) { g_loss_tolerated.store(on, std::memory_order_relaxed); }
bool peer_loss_tolerated() { return g_loss_tolerated.load(std::memory_order_relaxed); }

[[noreturn]] void peer_failed(const std::string& what, const std::string& peer, const std::string& why) {
  const sync::WaitContext& ctx = sync::wait_context();
  for (int i = 0; i < 200 && ctx.abort_word; ++i) {
    if (const uint32_t a = ctx.abort_word->load()) sync::exit_for_abort(a);
    sync::sleep_ns(10'000'000);
  }
  log::fatal("{} to {} failed: {}", what, peer, why);
}

const Transport* const* all(int* count) {
  *count = static_cast<int>(sizeof(kTransports) / sizeof(kTransports[0]));
  return kTransports;
}

}  // namespace tessera::transport
