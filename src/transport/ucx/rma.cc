// Puts, gets and atomics to peers on other hosts as active messages of our own (ucx.h).
//
// Puts of kAmMin bytes and up travel as frames on the TCP record's streams when it has them
// (transport/tcp/tcp.h; this file is their Sink), with the same header, counts and acknowledgments as below. Otherwise puts are active messages of our own,
// not UCX's RMA: over TCP UCX emulates RMA with messages the target serves anyway, its large puts carry a third of what the link does, and its flush and fence each cost a
// round trip. A put below kAmMin bytes is an eager message (UCX copies it out before the send returns); a
// larger one goes by rendezvous straight into the destination, and its request completes once the data
// has left. Counts per peer say what is in flight: the target counts the puts that have landed, and
// acknowledges them when the sender asks (kAmAckRequest: "tell me once N have landed"; one message each
// way, and none while nobody waits), or unasked as soon as it lands for a put sent while every earlier put
// to its target was acknowledged (kAckOnLanding): a small put followed by a quiet, a get or an atomic, the
// common case, then costs one message each way and one wake-up of the target, where asking costs two of
// each; a stream of puts (a window, a ping-pong that never quiets) carries the flag on its first put only:
//   quiet            waits for every acknowledgment, then flushes what UCX itself has in flight;
//   get, atomic      wait for the acknowledgments of the puts to their peer (they see those puts);
//   fence            costs nothing itself: each put carries the number of earlier puts to its target that
//                    must be in place first (the count at the latest fence, `after`); the target holds
//                    back an eager put that arrives before them, and a rendezvous put is sent only once
//                    they are acknowledged;
//   put with signal  one message: the target applies the signal once the data is in place.
// Sessions (OpenSHMEM 1.6's shmem_session_start; batch()): while one is open, a put of at most
// kBatchPutMax bytes is appended to its target's batch instead of sent, and the batch goes as one eager
// message (kBatch; one put in the counts above) when it reaches kBatchBytes, and before anything that must
// see or order it: a quiet or fence (every batch), a get, atomic, put with signal or larger put to its
// target (that batch), the last session's end, and any wait of this PE (progress()), so that a program
// that puts and then waits for an answer is never left waiting for a put this PE holds.
// Large gets (kAmMin bytes and up) do not use UCX's RMA either: UCX emulates a get with small copies the
// target serves one by one. A large get is a small active message asking the target to send the bytes
// back: as a frame on the pair's TCP stream (kGetReply, numbered; the requester's progress thread reads
// it straight into the buffer the get registered), or without streams as a tagged message into the buffer
// the requester has posted (a tag with the top bit set, apart from the collectives' tags); it is complete
// when that frame or receive is. Small gets are UCX's (ucp_get_nbx),
// waited for at once. Atomics are messages of our own as well: the target applies them with the same
// std::atomic_ref as the PEs of its host and sends the old value back as a tagged message.
// Waking waiters: a put, signal or atomic that lands here rings the doorbell only for the words it wrote
// (sync::notify_range), and the progress thread rings it after an event only while a thread of this PE
// waits for a UCX request; a PE asleep in a wait on other words stays asleep (ringing it after every
// event doubled the time of a small put + quiet).
#include <atomic>
#include <cstring>
#include <deque>
#include <vector>

#include "base/log.h"
#include "base/memcopy.h"
#include "sync/wait.h"
#include "transport/tcp/tcp.h"
#include "transport/ucx/ucx.h"
#include "transport/ucx/wire.h"

namespace tessera::transport::ucx {

// The peer's address of symmetric offset `off`, and the key that covers it.
inline Peer& target(int pe, uint64_t off, uint64_t* addr, ucp_rkey_h* rkey) {
  Peer& p = g.peers[static_cast<size_t>(pe)];
  if (off < g.heap_bytes) {
    *addr = p.heap_base + off;
    *rkey = p.heap_rkey;
  } else {
    *addr = p.data_base + (off - g.heap_bytes);
    *rkey = p.data_rkey;
  }
  return p;
}


// Asks `pe` to acknowledge once `count` of this PE's puts have landed there.
void request_ack(int pe, uint64_t count) {
  const AmAckHeader h{g.my_pe, count};
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_AM_SEND_FLAG_EAGER;
  wait_request(ucp_am_send_nbx(g.peers[static_cast<size_t>(pe)].ep, kAmAckRequest, &h, sizeof h, nullptr, 0, &prm),
               "acknowledgment request", pe, 0);
}

// Waits until the first `want` puts to `pe` (want = ~0: every put sent so far) are acknowledged: a put is
// complete at the target only then. The target is asked (one message); it answers once they have landed.
// pe = -1: every peer with puts not yet acknowledged, all asked before waiting for any.
void wait_put_acks(int pe, uint64_t want = ~uint64_t{0}) {
  const int first = pe < 0 ? 0 : pe, last = pe < 0 ? g.n_pes - 1 : pe;
  std::vector<std::pair<int, uint64_t>> waits;
  for (int q = first; q <= last; ++q) {
    if (!g.peers[static_cast<size_t>(q)].ep) continue;
    const uint64_t w = want == ~uint64_t{0} ? g.am_sent[static_cast<size_t>(q)].load(std::memory_order_acquire) : want;
    if (g.am_acked[static_cast<size_t>(q)].load(std::memory_order_acquire) >= w) continue;
    // An acknowledgment promised for the w-th put or later comes unasked once the first w have landed.
    if (g.out[static_cast<size_t>(q)].promised.load(std::memory_order_acquire) < w) request_ack(q, w);
    waits.emplace_back(q, w);
  }
  const RequestWait counted;
  for (const auto& [q, w] : waits) {
    std::atomic<uint64_t>& acked = g.am_acked[static_cast<size_t>(q)];
    sync::wait_until(
        [&] {
          ucp_worker_progress(g.worker);
          return acked.load(std::memory_order_acquire) >= w;
        },
        [&] {
          return fmt::format("UCX acknowledgment of puts to PE {} (host {}): {} of {} landed", q,
                             g.peers[static_cast<size_t>(q)].host, acked.load(), w);
        });
  }
}

// Numbers the next put to `pe` and returns how many earlier puts to it must be in place before its data:
// the count at the first put after the latest fence (lazily: a fence itself costs nothing).
// With *ack_on_landing set when every earlier put to `pe` is acknowledged: the target is to acknowledge
// this one as soon as it lands (kAckOnLanding).
uint64_t next_put(int pe, bool* ack_on_landing) {
  Outbound& o = g.out[static_cast<size_t>(pe)];
  std::lock_guard lock(o.m);
  const uint64_t epoch = g.fence_epoch.load(std::memory_order_acquire);
  if (o.fence_seen != epoch) {
    o.fence_seen = epoch;
    o.floor = g.am_sent[static_cast<size_t>(pe)].load(std::memory_order_relaxed);
  }
  const uint64_t sent = g.am_sent[static_cast<size_t>(pe)].load(std::memory_order_relaxed);
  *ack_on_landing = g.am_acked[static_cast<size_t>(pe)].load(std::memory_order_acquire) >= sent;
  if (*ack_on_landing) o.promised.store(sent + 1, std::memory_order_release);
  g.am_sent[static_cast<size_t>(pe)].store(sent + 1, std::memory_order_release);
  return o.floor;
}

// The header of a put being sent, with its signal or none (sig_op -1). A rendezvous put lands whenever its
// data has crossed, so it goes only once the puts it follows are acknowledged; an eager one carries the
// count and the target holds it back if needed.
AmPutHeader put_header(int pe, uint64_t off, size_t bytes, uint64_t sig_off, uint64_t signal, int sig_op) {
  bool ack_on_landing;
  const uint64_t after = next_put(pe, &ack_on_landing);
  if (bytes >= kAmMin) wait_put_acks(pe, after);
  return AmPutHeader{off, bytes, g.my_pe, after, sig_off, signal, sig_op, ack_on_landing ? kAckOnLanding : 0};
}

// A put as an active message (see the top of this file); returns once `src` may be reused. Its
// acknowledgment completes it at the target.
void am_put(int pe, uint64_t off, const void* src, size_t bytes, uint64_t sig_off, uint64_t signal, int sig_op) {
  const AmPutHeader h = put_header(pe, off, bytes, sig_off, signal, sig_op);
  if (bytes >= kAmMin && tcp::streams_on()) return tcp::stream_write(pe, &h, src, bytes);
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = bytes >= kAmMin ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
  wait_request(ucp_am_send_nbx(g.peers[static_cast<size_t>(pe)].ep, kAmPut, &h, sizeof h, src, bytes, &prm),
               sig_op < 0 ? "put" : "put with signal", pe, bytes);
}

// ---- sessions: batches of small puts (see the top of this file)

namespace {

constexpr size_t kBatchPutMax = 1024, kBatchBytes = 16 * 1024;
static_assert(kBatchBytes + kBatchPutMax + sizeof(BatchEntry) + 8 < kAmMin, "a batch must go eagerly");

void send_batch(int pe, const std::vector<char>& data, uint64_t puts) {
  AmPutHeader h = put_header(pe, 0, data.size(), 0, puts, -1);
  h.flags |= kBatch;
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_AM_SEND_FLAG_EAGER;
  wait_request(ucp_am_send_nbx(g.peers[static_cast<size_t>(pe)].ep, kAmPut, &h, sizeof h, data.data(), data.size(),
                               &prm),
               "batch of puts", pe, data.size());
}

// Sends `pe`'s held puts, if any. Not reentered from the waits of its own send (progress() below).
thread_local bool t_flushing = false;
void flush_batch(int pe) {
  Outbound& o = g.out[static_cast<size_t>(pe)];
  std::vector<char> data;
  uint64_t puts = 0;
  {
    std::lock_guard lock(o.m);
    if (o.batch.empty()) return;
    data.swap(o.batch);
    puts = o.batch_puts;
    o.batch_puts = 0;
    g.batched.fetch_sub(1, std::memory_order_acq_rel);
  }
  t_flushing = true;
  send_batch(pe, data, puts);
  t_flushing = false;
}
// Before an operation to `pe` that must come after its held puts.
inline void flush_for(int pe) {
  if (g.batched.load(std::memory_order_acquire) != 0 && !t_flushing) [[unlikely]] flush_batch(pe);
}

// Holds the put in its target's batch when a session is open and it is small; false: send it now.
bool hold(int pe, uint64_t off, const void* src, size_t bytes) {
  if (g.sessions.load(std::memory_order_relaxed) == 0 || bytes > kBatchPutMax) return false;
  Outbound& o = g.out[static_cast<size_t>(pe)];
  bool full;
  {
    std::lock_guard lock(o.m);
    if (o.batch.empty()) {
      g.batched.fetch_add(1, std::memory_order_acq_rel);
      o.batch.reserve(kBatchBytes + kBatchPutMax + sizeof(BatchEntry) + 8);
    }
    const BatchEntry e{off, bytes};
    const size_t at = o.batch.size();
    o.batch.resize(at + sizeof e + batch_padded(bytes));
    std::memcpy(o.batch.data() + at, &e, sizeof e);  // copy-ok: an entry header
    if (bytes) memcopy(o.batch.data() + at + sizeof e, src, bytes);
    ++o.batch_puts;
    full = o.batch.size() >= kBatchBytes;
  }
  if (full && !t_flushing) flush_batch(pe);
  return true;
}

}  // namespace

void flush_batches() {
  if (g.batched.load(std::memory_order_acquire) == 0 || t_flushing) return;
  for (int q = 0; q < g.n_pes; ++q)
    if (g.peers[static_cast<size_t>(q)].ep) flush_batch(q);
}

void batch(bool start) {
  if (start) {
    g.sessions.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  g.sessions.fetch_sub(1, std::memory_order_acq_rel);
  flush_batches();
}

// A non-blocking put's header, alive until its send completes.
struct NbiPut {
  AmPutHeader h;
  int to;
};

void on_put_nbi_sent(void* req, ucs_status_t st, void* user_data) {
  auto* n = static_cast<NbiPut*>(user_data);
  // A failed send is never acknowledged: the next quiet waits for it until the job ends (the peer is gone,
  // which the launcher or the bootstrap reports) or its deadline names what is missing.
  if (st != UCS_OK)
    log::write_line(log::Level::kError, fmt::format("UCX: a non-blocking put to PE {} failed: {}", n->to,
                                                    ucs_status_string(st)));
  delete n;
  ucp_request_free(req);
}

void put(int pe, uint64_t off, const void* src, size_t bytes) {
  if (hold(pe, off, src, bytes)) return;
  flush_for(pe);
  am_put(pe, off, src, bytes, 0, 0, -1);
}

// A large non-blocking put: sent without waiting; `src` is read until its acknowledgment, which the next
// fence or quiet waits for. Smaller ones are blocking puts (their data is copied out at once).
// Over Tessera's connections a large put is written at once, like a blocking one.
void put_nbi(int pe, uint64_t off, const void* src, size_t bytes) {
  if (bytes < kAmMin || tcp::streams_on()) return put(pe, off, src, bytes);
  flush_for(pe);
  auto* n = new NbiPut{put_header(pe, off, bytes, 0, 0, -1), pe};
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.flags = UCP_AM_SEND_FLAG_RNDV;
  prm.cb.send = on_put_nbi_sent;
  prm.user_data = n;
  void* req = ucp_am_send_nbx(g.peers[static_cast<size_t>(pe)].ep, kAmPut, &n->h, sizeof n->h, src, bytes, &prm);
  if (req == nullptr) {
    delete n;
  } else if (UCS_PTR_IS_ERR(req)) {
    delete n;
    operation_failed("non-blocking put", bytes, pe, UCS_PTR_STATUS(req));
  }
}

void get(void* dst, int pe, uint64_t off, size_t bytes) {
  flush_for(pe);
  uint64_t addr;
  ucp_rkey_h rkey;
  Peer& p = target(pe, off, &addr, &rkey);
  wait_put_acks(pe);  // a get sees this PE's earlier puts to the peer
  ucp_request_param_t prm{};
  if (bytes >= kAmMin && tcp::streams_on()) {
    // The reply comes as a frame on the pair's stream, read straight into dst by the progress thread.
    StreamGet sg;
    sg.dst = static_cast<char*>(dst);
    sg.bytes = bytes;
    sg.pe = pe;
    const uint64_t number = g.get_seq.fetch_add(1) & (kGetOnStream - 1);
    {
      std::lock_guard lk(g.gets_m);
      g.stream_gets[number] = &sg;
    }
    const AmGetHeader h{off, bytes, kGetReplyTag | kGetOnStream | number, g.my_pe};
    wait_request(ucp_am_send_nbx(p.ep, kAmGet, &h, sizeof h, nullptr, 0, &prm), "get (its request)", pe, bytes);
    sync::wait_until([&] { return sg.done.load(std::memory_order_acquire); },
                     [&] { return fmt::format("a get of {} bytes from {} (its reply on the stream connection)",
                                              bytes, peer_name(pe)); });
    return;
  }
  if (bytes >= kAmMin) {
    const AmGetHeader h{off, bytes, kGetReplyTag | (g.get_seq.fetch_add(1) & (kGetReplyTag - 1)), g.my_pe};
    void* rreq = ucp_tag_recv_nbx(g.worker, dst, bytes, h.tag, ~ucp_tag_t{0}, &prm);
    if (UCS_PTR_IS_ERR(rreq)) wait_request(rreq, "get (posting its receive)", pe, bytes);
    wait_request(ucp_am_send_nbx(p.ep, kAmGet, &h, sizeof h, nullptr, 0, &prm), "get (its request)", pe, bytes);
    wait_request(rreq, "get", pe, bytes);
    return;
  }
  wait_request(ucp_get_nbx(p.ep, dst, bytes, addr, rkey, &prm), "get", pe, bytes);
}

uint64_t atomic(int pe, uint64_t off, size_t size, AtomicOp op, uint64_t value, uint64_t cond) {
  flush_for(pe);
  wait_put_acks(pe);  // an atomic comes after this PE's earlier puts to the peer
  uint64_t old = 0;
  const AmAtomicHeader h{off, value, cond, kGetReplyTag | (g.get_seq.fetch_add(1) & (kGetReplyTag - 1)), g.my_pe,
                         static_cast<int32_t>(op), static_cast<int32_t>(size)};
  ucp_request_param_t prm{};
  void* rreq = ucp_tag_recv_nbx(g.worker, &old, sizeof old, h.tag, ~ucp_tag_t{0}, &prm);
  if (UCS_PTR_IS_ERR(rreq)) wait_request(rreq, "atomic (posting its receive)", pe, size);
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_AM_SEND_FLAG_EAGER;
  wait_request(ucp_am_send_nbx(g.peers[static_cast<size_t>(pe)].ep, kAmAtomic, &h, sizeof h, nullptr, 0, &prm),
               "atomic (its request)", pe, size);
  wait_request(rreq, "atomic", pe, size);
  return old;
}


// One message: the target applies the signal once the data is in place.
void put_signal(int pe, uint64_t off, const void* src, size_t bytes, uint64_t sig_off, uint64_t signal,
                SignalOp op) {
  flush_for(pe);
  am_put(pe, off, src, bytes, sig_off, signal, op == kSignalAdd ? kSignalAdd : kSignalSet);
}

// Puts after this one follow every put before it (next_put); atomics and gets wait for the puts to their
// peer anyway (and are blocking); UCX's fence orders what else UCX may have in flight.
void fence() {
  flush_batches();
  g.fence_epoch.fetch_add(1, std::memory_order_acq_rel);
  const ucs_status_t st = ucp_worker_fence(g.worker);
  if (st != UCS_OK) log::fatal("UCX fence: {}", ucs_status_string(st));
}

void quiet() {
  flush_batches();
  wait_put_acks(-1);
  ucp_request_param_t prm{};
  wait_request(ucp_worker_flush_nbx(g.worker, &prm), "quiet (flush)", -1, 0);
}

}  // namespace tessera::transport::ucx
