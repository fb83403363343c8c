// Transports: how one PE reaches another PE's symmetric memory, and sends it messages.
//
// A transport is a record of functions (UCX's uct_iface_ops_t, SOS's shmem_transport_*) that declares what
// it can do (caps, as UCX's interface attributes declare theirs) and its thresholds. The table (all())
// lists them in order of preference; for every peer the runtime chooses once at init (NCCL's habit) and
// keeps per peer (pgas::Runtime):
//   - the memory path: the first record that reaches the peer and maps its memory or offers RMA;
//   - the message path: the first record that reaches the peer and offers messages (none within a host,
//     where the collectives use shared memory).
//   self  the PE itself (also used by a job of one PE)                           maps
//   shm   peers on this host: POSIX shared memory, every heap mapped by every PE maps
//   tcp   peers on other hosts: connections of Tessera's own (transport/tcp/)  messages
//   ucx   peers on other hosts: UCX (transport/ucx/), RMA and atomics addressed  rma, atomics, messages
//         by symmetric offset
// Calls between records go one way: UCX writes its large puts on TCP's streams (tcp.h), never the reverse.
// Every PE opens the records in table order and closes them in reverse order.
//
// Two kinds of memory path:
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
  // A replacement PE's peers (docs/resilience.md, "Growing back"): the peer's segments are mapped through
  // the descriptors its process `pid` holds open, their names being gone (shm only; pid 0: by name).
  int pid = 0;
  int heap_fd = -1;
  int data_fd = -1;
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
  // Whether some PE runs on another host than PE 0 (the records between hosts open nothing otherwise).
  bool spans_hosts() const {
    for (int pe = 1; pe < n_pes; ++pe)
      if (hosts[pe] != hosts[0]) return true;
    return false;
  }
};

// What a record can do (Transport::caps). Each capability names the functions it promises non-null.
enum Cap : uint32_t {
  kMaps = 1u << 0,      // map() sets load/store addresses of the peer's segments; no data function is called
  kRma = 1u << 1,       // put, get, put_signal, fence, quiet, progress (put_nbi optional)
  kAtomics = 1u << 2,   // atomic
  kMessages = 1u << 3,  // send, recv, wait
};

struct Transport {
  const char* name;
  const char* description;
  uint32_t caps = 0;  // Cap bits
  // Puts below this many bytes are copied out before the call returns (eager); larger ones go by
  // rendezvous, read from `src` in place (0: no such split, as with a mapping).
  size_t eager_limit = 0;
  // Whether the record reaches `peer` (decided after open()).
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
  // Sessions (OpenSHMEM 1.6's shmem_session_start/stop; optional): start opens one, !start closes one. While
  // any is open the record may hold small puts and send them together; it sends them before a quiet,
  // fence, get, atomic or put with signal that must see them, when the last session closes, and whenever
  // progress() is called (every wait of the PE calls it).
  void (*batch)(bool start) = nullptr;

  // Two-sided messages to a peer on another host (kMessages; the collectives across hosts: coll/hier/net.cc). A receive
  // matches the sender's `tag` exactly; messages of one sender with one tag arrive in the order sent. A tag
  // must name its sender: UCX's receive matches it from any peer (Tessera's connections, per peer).
  // Non-blocking: they return a request to pass to wait() (which progresses until it completes and frees
  // it), or null when already complete. The buffer must stay valid until then. `what` names the operation
  // in a deadline or failure message.
  void* (*send)(int pe, uint64_t tag, const void* buf, size_t bytes) = nullptr;
  void* (*recv)(int pe, uint64_t tag, void* buf, size_t bytes) = nullptr;
  void (*wait)(void* request, const char* what, int pe, size_t bytes) = nullptr;
  // Resilient mode: the caller lets go of a request it will not wait for (its call failed). The transport
  // finishes it without touching the caller's buffer again (a partly moved message stays whole on the wire)
  // and frees it. A wait that a failure watch stopped has let go of its request already. Null: the record
  // cannot (UCX's messages), and resilient mode then must not use it between hosts.
  void (*abandon)(void* request, int pe) = nullptr;
};

// The first transport of the table that can reach `peer` from `me` and has one of the capabilities
// `any_of`, or nullptr.
const Transport* choose(const PeerInfo& me, const PeerInfo& peer, uint32_t any_of);
// An operation `what` with `peer` ("PE 3 (host h2)") failed, almost always because the peer died or its
// host went away. The launcher or the bootstrap is about to say so and end the job with the job's one line:
// waits a moment for that (this PE then leaves as every waiter does when the job ends), and ends the job
// here, naming the operation, the peer and `why`, only if nobody does.
[[noreturn]] void peer_failed(const std::string& what, const std::string& peer, const std::string& why);
// Resilient mode (docs/resilience.md): while on, a connection that breaks is dropped instead of ending the
// job. Its peer's queued sends are discarded and receives from it never complete: a wait on one ends when the
// thread's failure watch trips (sync/fail.h), the launcher having marked the peer failed, or, with no watch
// installed, ends the job as peer_failed() does. Set at init, before any peer can fail.
void set_peer_loss_tolerated(bool on);
bool peer_loss_tolerated();
// While on, this process's waits for messages from other hosts yield the CPU between polls instead of
// spinning first (for the link measurement: a "remote" peer that shares this CPU, as namespace hosts of one
// machine do, then answers at once rather than after the spin).
void set_message_waits_yield(bool on);
// The memory path of a replacement PE to a peer that failed and has no process in its place: every put, get
// and atomic ends the job naming the peer (fence and quiet have nothing to do).
const Transport* gone();
// The table, in order of preference (open() in this order, close() in reverse).
const Transport* const* all(int* count);

}  // namespace tessera::transport
