// Internals of the UCX transport shared by its files: ucx.cc (context, worker, endpoints and keys, the
// progress thread, tagged messages, the transport record), rma.cc (puts, gets and atomics as active
// messages of our own, and their completion and ordering) and serve.cc (their target side). Not a public
// header.
#pragma once
#include <ucp/api/ucp.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "transport/transport.h"

namespace tessera::transport::ucx {

struct Peer {
  ucp_ep_h ep = nullptr;
  ucp_rkey_h heap_rkey = nullptr;
  ucp_rkey_h data_rkey = nullptr;
  uint64_t heap_base = 0;  // the peer's addresses of its segments
  uint64_t data_base = 0;
  std::string host;
};

// A put carries the number of earlier puts from its sender to its target that must be in place before its
// own data is (`after`: the count at the sender's last fence before it; 0 when nothing orders it).
struct AmPutHeader {
  uint64_t off;
  uint64_t bytes;
  int64_t from;
  uint64_t after;
  uint64_t sig_off;
  uint64_t signal;
  int32_t sig_op;  // -1: none; else SignalOp
  uint32_t flags;  // kAckOnLanding, kGetReply
};
// The target acknowledges this put as soon as it lands, unasked: set on a put sent while every earlier put
// to its target was acknowledged (rma.cc, next_put).
constexpr uint32_t kAckOnLanding = 1;
// A frame on TCP's stream that answers a large get (serve.cc): `after` holds the get's number, `off` is
// unused; it lands in the requester's buffer, not in symmetric memory, and is not a put (never counted).
constexpr uint32_t kGetReply = 2;
// A session's batch of small puts (rma.cc): the data holds `signal` entries (wire.h: BatchEntry), `bytes` is
// its length, and the message counts as one put; `off` and the signal fields are unused.
constexpr uint32_t kBatch = 4;

// A large get answered on TCP's stream (rma.cc posts it; the stream's sink fills it, serve.cc).
struct StreamGet {
  char* dst = nullptr;
  uint64_t bytes = 0;
  int pe = 0;
  std::atomic<bool> done{false};
};
// A reply the target's replier thread writes (serve.cc): the bytes of symmetric memory at `src`.
struct StreamReply {
  int to;
  AmPutHeader h;
  const char* src;
};

// The active messages of puts, gets and atomics (rma.cc) and their headers.
constexpr unsigned kAmPut = 0, kAmGet = 1, kAmPutAck = 2, kAmAckRequest = 3, kAmAtomic = 4;

struct AmGetHeader {
  uint64_t off;
  uint64_t bytes;
  uint64_t tag;
  int64_t requester;
};

// A request for an acknowledgment once `count` puts from `from` have landed, and the acknowledgment: the
// puts from the requester that have landed at `from`.
struct AmAckHeader {
  int64_t from;
  uint64_t count;
};


// An atomic as a message of our own (see the top of this file): the requester has posted a receive for
// the old value under `tag`.
struct AmAtomicHeader {
  uint64_t off;
  uint64_t value;
  uint64_t cond;
  uint64_t tag;
  int64_t from;
  int32_t op;    // AtomicOp
  int32_t size;  // 4 or 8
};

// An eager put that arrived before the puts it must follow had landed: applied once they have.
struct Deferred {
  AmPutHeader h;
  std::vector<char> data;
};

// Sender side, per peer: the count of puts later ones must follow, the fence epoch it reflects, and the
// count the target acknowledges unasked (the number of the latest put sent with kAckOnLanding).
struct Outbound {
  std::mutex m;
  uint64_t floor = 0;
  uint64_t fence_seen = 0;
  std::atomic<uint64_t> promised{0};
  // Small puts held while a session is open (rma.cc), sent as one message: entries and their count.
  std::vector<char> batch;
  uint64_t batch_puts = 0;
};

struct State {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_mem_h heap_memh = nullptr;
  ucp_mem_h data_memh = nullptr;
  size_t heap_bytes = 0;
  size_t data_bytes = 0;
  int my_pe = 0;
  std::vector<Peer> peers;  // indexed by PE; ep null for peers on this host
  int efd = -1;             // the worker's event fd
  int stop_fd = -1;         // eventfd that ends the progress thread
  std::thread progress;
  std::atomic<bool> closing{false};
  Status (*allgather)(const void* mine, void* all, size_t bytes) = nullptr;  // the bootstrap's (JobView)
  int n_pes = 0;
  char* my_heap = nullptr;  // this PE's segments (targets of large puts, sources of large gets)
  char* my_data = nullptr;
  std::atomic<uint64_t> get_seq{0};
  // Sender side of puts (rma.cc): puts sent to each peer and acknowledged by
  // it, and over all peers; written by any thread.
  std::unique_ptr<std::atomic<uint64_t>[]> am_sent, am_acked;
  std::unique_ptr<Outbound[]> out;      // per peer
  std::atomic<uint64_t> fence_epoch{0};  // fences so far
  std::atomic<int> sessions{0};          // open sessions (batch()): small puts are held while above 0
  std::atomic<int> batched{0};           // peers whose held puts are not sent yet
  // Threads of this PE waiting for a UCX request (or an acknowledgment): the progress thread rings the
  // PE's doorbell after an event only then. Writes into symmetric memory ring it themselves, for the words
  // they wrote (landed(), on_am_atomic()).
  std::atomic<int> request_waiters{0};
  // Target side, under target_m (the worker's handlers and landing callbacks, and the progress thread's
  // reads of the puts' connections): puts landed from each source, and those that wait for earlier ones.
  std::mutex target_m;
  std::vector<uint64_t> landed;
  std::vector<uint64_t> ack_wanted;  // per source: the count its pending acknowledgment request waits for
  std::vector<std::deque<Deferred>> deferred;
  // Large gets answered on TCP's streams: those this PE waits for, by number (rma.cc, serve.cc), and the
  // replies it owes, written by a thread of their own so that the progress thread, which reads every
  // stream, never blocks on a full one (two PEs getting from each other would otherwise each wait for the
  // other to read).
  std::mutex gets_m;
  std::unordered_map<uint64_t, StreamGet*> stream_gets;
  std::thread replier;
  std::mutex reply_m;
  std::condition_variable reply_cv;
  std::deque<StreamReply> replies;
  bool reply_stop = false;
};
// Puts and gets of at least this many bytes go by rendezvous, or on TCP's streams (rma.cc); smaller puts
// are eager messages, copied out by UCX before the send returns (the record's eager_limit).
constexpr size_t kAmMin = 64 * 1024;
// Tags with the top bit set are this transport's own (large gets' replies); the collectives' are below.
constexpr uint64_t kGetReplyTag = uint64_t{1} << 63;
// In a large get's tag: answer on TCP's stream (the rest of the tag is the get's number), not as a UCX
// tagged message.
constexpr uint64_t kGetOnStream = uint64_t{1} << 62;
extern State g;


// "PE 3 (host h2)" for messages; "every peer" for -1.
std::string peer_name(int pe);
// An operation to `pe` (-1: every peer) failed: waits a moment for the job's own end (the launcher or the
// bootstrap reports a dead peer), else ends the job naming the operation.
[[noreturn]] void operation_failed(const char* what, size_t bytes, int pe, ucs_status_t st);
// As operation_failed, for any operation (`what`, e.g. "UCX put of 8 bytes") and reason.
[[noreturn]] void peer_failed(const std::string& what, int pe, const std::string& why);
// Counts a thread waiting for a request while it exists (State::request_waiters).
struct RequestWait {
  RequestWait() { g.request_waiters.fetch_add(1, std::memory_order_seq_cst); }
  ~RequestWait() { g.request_waiters.fetch_sub(1, std::memory_order_relaxed); }
  RequestWait(const RequestWait&) = delete;
  RequestWait& operator=(const RequestWait&) = delete;
};
// Waits for a request of `what` to `pe` under the job's deadline, progressing the worker; frees it.
void wait_request(void* req, const char* what, int pe, size_t bytes);

// serve.cc: per-peer counts, the active-message handlers and the sink of TCP's streams, set up by open()
// once the endpoints exist.
Status open_messages(int n_pes);
// rma.cc: the data path of the transport record (transport.h).
void put(int pe, uint64_t off, const void* src, size_t bytes);
void put_nbi(int pe, uint64_t off, const void* src, size_t bytes);
void get(void* dst, int pe, uint64_t off, size_t bytes);
uint64_t atomic(int pe, uint64_t off, size_t size, AtomicOp op, uint64_t value, uint64_t cond);
void put_signal(int pe, uint64_t off, const void* src, size_t bytes, uint64_t sig_off, uint64_t signal,
                SignalOp op);
void fence();
void quiet();
// Sessions (transport.h: batch): open one (start) or close one, which sends what is held; flush_batches
// sends every peer's held puts now (waits call it through progress(), so a held put never blocks a wait).
void batch(bool start);
void flush_batches();

// serve.cc: starts and stops the thread that writes the replies to large gets on TCP's streams.
void start_replier();
void stop_replier();
// serve.cc: a put whose data is in place (a frame read from TCP's stream, or a rendezvous put's): counted,
// acknowledged if asked, and the eager puts behind it applied.
void put_in_place(const AmPutHeader& h);
// This PE's address of symmetric offset `off` (heap, then data segment).
char* local_address(uint64_t off);

}  // namespace tessera::transport::ucx
