// Transports: how one PE reaches another PE's symmetric memory.
//
// A transport is a record of functions (UCX's uct_iface_ops_t, SOS's shmem_transport_*); kTransports lists
// them in order of preference and, for every peer, the first one that can reach it is chosen once at init
// (NCCL's habit) and kept per peer (pgas::Runtime::transports).
//   self  the PE itself (also used by a job of one PE)
//   shm   peers on this host: POSIX shared memory, every heap mapped by every PE (zero copy)
//   ucx   peers on other hosts: UCX (transport/ucx/ucx.cc), RMA and atomics addressed by symmetric offset
//
// Two kinds of record:
//   - with a mapping (self, shm): map() gives a load/store address for the peer's segments. The data path
//     then never calls the record: a put is a copy into the mapping, an atomic a std::atomic_ref on it
//     (pgas::remote returns the address inline), so choosing the transport costs nothing per call.
//   - without one (UCX): map() registers the memory and leaves the addresses null; every put, get and
//     atomic to that peer calls the record's functions, addressed by symmetric offset.
// The data functions may be null in a record with a mapping (never called).
//
// Symmetric offsets: the heap segment is [0, heap_bytes), the data segment (the program's globals) follows
// at [heap_bytes, heap_bytes + data_bytes) -- the space pgas::watch_offset uses, the same on every PE.
//
// Completion and ordering, for records without a mapping (the contract pgas/order.h relies on):
//   put/get/atomic  blocking: the local buffer may be reused (put) or holds the data (get, fetching
//                   atomics) on return; a put is visible at the target no later than the next quiet.
//                   Waiters on the target watching the range are woken once it is (sync::notify_range on
//                   this host).
//   put_nbi         as put, but `src` may still be read until the next fence or quiet (the caller leaves it
//                   alone until then: shmem_put_nbi's contract); null in a record whose put serves both.
//   put_signal      the data, then the signal (set or add), so a PE that sees the signal sees the data.
//   fence           orders every earlier put/atomic/signal to each peer of this transport before later ones.
//   quiet           completes every earlier operation to every peer of this transport.
//   progress        advances outstanding operations; called inside blocking calls.
// Thread safety: every function may be called from any thread of the PE at once.
// Waiting: writes that peers on other hosts make into this PE's memory land without a notify() from the
// writer; a transport that lets them land calls sync::notify(my_pe) after they did (the UCX progress thread).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace tessera::transport {

struct PeerInfo {
  int pe;
  std::string host;  // host identity of the peer (name + boot id), from the bootstrap exchange
};

// Atomic operations on 4- or 8-byte words. Values travel as the word's bits (an int32 in the low half).
enum class AtomicOp : int {
  kFetch,         // returns the value (acquire)
  kSet,           // stores `value` (release); returns 0
  kSwap,          // stores `value`, returns the old value
  kCompareSwap,   // stores `value` if the old value equals `cond`; returns the old value
  kFetchAdd,
  kFetchAnd,
  kFetchOr,
  kFetchXor,
};
// Same numbering as SHMEM_SIGNAL_SET / _ADD (pinned by static_asserts in capi/rma.cc, which includes shmem.h).
enum SignalOp : int { kSignalSet = 0, kSignalAdd = 1 };

// One peer's symmetric memory, as map() registers it.
struct PeerMemory {
  int pe = 0;
  int my_pe = 0;
  std::string job_id;      // names of the job's shared objects (transport/shm/segment.h)
  size_t heap_bytes = 0;   // the heap segment, reserved area included; the same on every PE
  size_t data_bytes = 0;   // the data segment, 0 when globals are not symmetric
  char* my_heap = nullptr;  // this PE's own segments
  char* my_data = nullptr;
  // Set by map(): load/store addresses of the peer's segments, or null when the transport reaches them
  // only through its functions.
  char* heap = nullptr;
  char* data = nullptr;
};

// The job as a transport's open() sees it, once at init.
struct JobView {
  int my_pe = 0;
  int n_pes = 1;
  const std::string* hosts = nullptr;  // hosts[pe]: host identity of every PE
  char* my_heap = nullptr;              // this PE's segments (PeerMemory)
  size_t heap_bytes = 0;
  char* my_data = nullptr;
  size_t data_bytes = 0;
  // Every PE contributes `bytes` bytes; `all` receives n_pes * bytes, PE order (the bootstrap's allgather).
  Status (*allgather)(const void* mine, void* all, size_t bytes) = nullptr;
};

struct Transport {
  const char* name;
  const char* description;
  bool (*can_reach)(const PeerInfo& me, const PeerInfo& peer);

  // Optional, collective over the job: every PE calls open() at init before any map(), whether or not it
  // reaches a peer through this transport (the transport decides from job.hosts alike on every PE whether
  // it has anything to exchange), and close() at finalize after every unmap(), when no operation is in
  // flight anywhere (after a barrier).
  Status (*open)(const JobView& job) = nullptr;
  void (*close)() = nullptr;

  // Memory registration, once per peer at init / finalize. map() sets mem->heap/data only on success.
  Status (*map)(PeerMemory* mem);
  void (*unmap)(PeerMemory* mem);

  // Data path of a peer without a mapping; `off` is a symmetric offset on `pe` (see above).
  void (*put)(int pe, uint64_t off, const void* src, size_t bytes) = nullptr;
  void (*put_nbi)(int pe, uint64_t off, const void* src, size_t bytes) = nullptr;
  void (*get)(void* dst, int pe, uint64_t off, size_t bytes) = nullptr;
  uint64_t (*atomic)(int pe, uint64_t off, size_t size, AtomicOp op, uint64_t value, uint64_t cond) = nullptr;
  void (*put_signal)(int pe, uint64_t off, const void* src, size_t bytes, uint64_t sig_off, uint64_t signal,
                     SignalOp op) = nullptr;
  void (*fence)() = nullptr;
  void (*quiet)() = nullptr;
  void (*progress)() = nullptr;

  // Two-sided messages to a peer without a mapping (collectives across hosts: coll/hier.cc). A receive
  // matches the sender's `tag` exactly; messages of one sender with one tag arrive in the order sent. A tag
  // must name its sender: UCX's receive matches it from any peer (Tessera's connections, per peer).
  // Non-blocking: they return a request to pass to wait() (which progresses until it completes and frees
  // it), or null when already complete. The buffer must stay valid until then. `what` names the operation
  // in a deadline or failure message.
  void* (*send)(int pe, uint64_t tag, const void* buf, size_t bytes) = nullptr;
  void* (*recv)(int pe, uint64_t tag, void* buf, size_t bytes) = nullptr;
  void (*wait)(void* request, const char* what, int pe, size_t bytes) = nullptr;
};

// The first transport of the table that can reach `peer` from `me`, or nullptr.
const Transport* choose(const PeerInfo& me, const PeerInfo& peer);
// While on, this process's waits for messages from other hosts yield the CPU between polls instead of
// spinning first (for the link measurement: a "remote" peer that shares this CPU, as namespace hosts of one
// machine do, then answers at once rather than after the spin).
void set_message_waits_yield(bool on);
// The table, in order of preference.
const Transport* const* all(int* count);

}  // namespace tessera::transport
