// Puts, gets and atomics to peers on other hosts as active messages of our own (ucx.h).
//
// Puts of kAmMin bytes and up travel over Tessera's own connections when it has them (sockets.cc), with
// the same header, counts and acknowledgments as below. Otherwise puts are active messages of our own,
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
// Large gets (kAmMin bytes and up) do not use UCX's RMA either: UCX emulates a get with small copies the
// target serves one by one. A large get is a small active message asking the target to send the bytes
// back as a tagged message into the buffer the requester has posted (a tag with the top bit set, apart
// from the collectives' tags); it is complete when that receive is. Small gets are UCX's (ucp_get_nbx),
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

// Large transfers as active messages (see the top of this file).
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

// This PE's address of symmetric offset `off`.
char* local_address(uint64_t off) {
  return off < g.heap_bytes ? g.my_heap + off : g.my_data + (off - g.heap_bytes);
}

Segments segments() { return Segments{g.heap_bytes, g.data_bytes}; }

// Ends the job when a peer's header failed its check (wire.h): `why` is empty when it passed.
void refuse_unless_empty(int64_t from, const std::string& why) {
  if (why.empty()) return;
  log::fatal("UCX: PE {} (host {}) sent {}; no Tessera PE sends that (a corrupt message or a sender that is not "
             "one of the job's PEs): nothing was written or read", from, g.peers[static_cast<size_t>(from)].host, why);
}

// An active message's header, copied out (it may be unaligned); false if its length is not the type's.
template <typename H>
bool read_header(const void* header, size_t length, H* h) {
  if (length != sizeof *h) return false;
  std::memcpy(h, header, sizeof *h);
  return true;
}
// Whether `pe` is a peer on another host (the only senders of these messages).
bool remote_peer(int64_t pe) {
  return pe >= 0 && static_cast<size_t>(pe) < g.peers.size() && g.peers[static_cast<size_t>(pe)].ep;
}

void on_ack_sent(void* req, ucs_status_t, void* header) {
  delete static_cast<AmAckHeader*>(header);
  ucp_request_free(req);
}

// Tells `to` that `count` of its puts have landed here. Inside the worker's progress.
void send_ack(int64_t to, uint64_t count) {
  // The header must live until the send completes (UCX 1.13 has no flag that copies it).
  auto* ack = new AmAckHeader{g.my_pe, count};
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  prm.cb.send = on_ack_sent;
  prm.user_data = ack;
  prm.flags = UCP_AM_SEND_FLAG_EAGER;
  void* req = ucp_am_send_nbx(g.peers[static_cast<size_t>(to)].ep, kAmPutAck, ack, sizeof *ack, nullptr, 0, &prm);
  if (req == nullptr) {
    delete ack;
  } else if (UCS_PTR_IS_ERR(req)) {
    delete ack;
    log::write_line(log::Level::kError, fmt::format("UCX: acknowledging puts to PE {} failed: {}", to,
                                                    ucs_status_string(UCS_PTR_STATUS(req))));
  }
}

// Acknowledgments to send, (to, count): decided under g.target_m, sent after it is released (sending takes
// the worker's lock, which the handlers hold when they take g.target_m).
using Acks = std::vector<std::pair<int64_t, uint64_t>>;
void send_acks(const Acks& acks) {
  for (const auto& [to, count] : acks) send_ack(to, count);
}

// A put's data is in place: apply its signal, wake this PE's waiters, count it, and answer the sender's
// request for an acknowledgment if this was the last put it waits for. Under g.target_m.
void landed(const AmPutHeader& h, Acks& acks) {
  if (h.sig_op >= 0) {
    std::atomic_ref<uint64_t> word(*reinterpret_cast<uint64_t*>(local_address(h.sig_off)));
    if (h.sig_op == kSignalAdd) word.fetch_add(h.signal, std::memory_order_release);
    else word.store(h.signal, std::memory_order_release);
  }
  if (h.sig_op >= 0) sync::notify_range(g.my_pe, h.sig_off, sizeof(uint64_t));
  sync::notify_range(g.my_pe, h.off, h.bytes);
  const auto from = static_cast<size_t>(h.from);
  const uint64_t n = ++g.landed[from];
  if (g.ack_wanted[from] != 0 && n >= g.ack_wanted[from]) {
    g.ack_wanted[from] = 0;
    acks.emplace_back(h.from, n);
  } else if (h.flags & kAckOnLanding) {
    acks.emplace_back(h.from, n);
  }
}

// Applies the deferred puts of `from` whose predecessors have now landed, until none is left that may go.
void drain_deferred(int64_t from, Acks& acks) {
  std::deque<Deferred>& q = g.deferred[static_cast<size_t>(from)];
  for (bool more = true; more;) {
    more = false;
    for (auto it = q.begin(); it != q.end();) {
      if (it->h.after > g.landed[static_cast<size_t>(from)]) {
        ++it;
        continue;
      }
      const Deferred d = std::move(*it);
      it = q.erase(it);
      if (!d.data.empty()) memcopy(local_address(d.h.off), d.data.data(), d.data.size());
      landed(d.h, acks);
      more = true;
    }
  }
}

void on_put_landed(void* req, ucs_status_t st, size_t, void* user_data) {
  auto* h = static_cast<AmPutHeader*>(user_data);
  if (st != UCS_OK) {
    log::write_line(log::Level::kError, fmt::format("UCX: a large put's data from PE {} failed to arrive: {}", h->from,
                                                    ucs_status_string(st)));
  } else {
    put_in_place(*h);
  }
  delete h;
  ucp_request_free(req);
}

// A put's data for this PE: by rendezvous straight into the destination (its sender made sure that the
// puts it follows are in place), or copied from an eager message, at once or, when puts it follows have
// not landed yet, once they have.
ucs_status_t on_am_put(void*, const void* header, size_t header_length, void* data, size_t length,
                       const ucp_am_recv_param_t* param) {
  AmPutHeader h;
  if (!read_header(header, header_length, &h) || !remote_peer(h.from))
    return UCS_ERR_INVALID_PARAM;
  refuse_unless_empty(h.from, put_error(h.off, h.bytes, length, h.sig_op, h.sig_off, segments()));
  char* dest = local_address(h.off);
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    auto* landing = new AmPutHeader(h);
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    prm.cb.recv_am = on_put_landed;
    prm.user_data = landing;
    void* req = ucp_am_recv_data_nbx(g.worker, data, dest, length, &prm);
    if (UCS_PTR_IS_ERR(req)) {
      delete landing;
      log::write_line(log::Level::kError, fmt::format("UCX: receiving a large put of {} bytes failed: {}", length,
                                                      ucs_status_string(UCS_PTR_STATUS(req))));
    } else if (req == nullptr) {
      put_in_place(h);
      delete landing;
    }
    return UCS_OK;
  }
  Acks acks;
  {
    std::lock_guard lk(g.target_m);
    if (h.after > g.landed[static_cast<size_t>(h.from)]) {
      const char* bytes = static_cast<const char*>(data);
      g.deferred[static_cast<size_t>(h.from)].push_back(Deferred{h, std::vector<char>(bytes, bytes + length)});
      return UCS_OK;
    }
    if (length) memcopy(dest, data, length);
    landed(h, acks);
    drain_deferred(h.from, acks);
  }
  send_acks(acks);
  return UCS_OK;
}

// A put whose data is in place (read from its connection, sockets.cc, or a rendezvous put's, now or at
// once): counted, acknowledged if asked, and the eager puts that follow it applied.
void put_in_place(const AmPutHeader& h) {
  Acks acks;
  {
    std::lock_guard lk(g.target_m);
    landed(h, acks);
    drain_deferred(h.from, acks);
  }
  send_acks(acks);
}

// A peer waits for its puts to this PE: answer now if `count` of them have landed, else once they have.
ucs_status_t on_am_ack_request(void*, const void* header, size_t header_length, void*, size_t,
                               const ucp_am_recv_param_t*) {
  AmAckHeader h;
  if (!read_header(header, header_length, &h) || !remote_peer(h.from))
    return UCS_ERR_INVALID_PARAM;
  const auto from = static_cast<size_t>(h.from);
  uint64_t now_landed = 0;
  {
    std::lock_guard lk(g.target_m);
    if (g.landed[from] >= h.count) now_landed = g.landed[from];
    else g.ack_wanted[from] = std::max(g.ack_wanted[from], h.count);
  }
  if (now_landed) send_ack(h.from, now_landed);
  return UCS_OK;
}

ucs_status_t on_am_put_ack(void*, const void* header, size_t header_length, void*, size_t,
                           const ucp_am_recv_param_t*) {
  AmAckHeader h;
  if (!read_header(header, header_length, &h) || !remote_peer(h.from)) return UCS_ERR_INVALID_PARAM;
  std::atomic<uint64_t>& acked = g.am_acked[static_cast<size_t>(h.from)];
  uint64_t was = acked.load(std::memory_order_relaxed);
  while (was < h.count && !acked.compare_exchange_weak(was, h.count, std::memory_order_release)) {
  }
  return UCS_OK;
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

void on_reply_sent(void* req, ucs_status_t, void*) { ucp_request_free(req); }

// A get of this PE's memory: the bytes go back as a tagged message the requester has posted.
ucs_status_t on_am_get(void*, const void* header, size_t header_length, void*, size_t, const ucp_am_recv_param_t*) {
  AmGetHeader h;
  if (!read_header(header, header_length, &h) || !remote_peer(h.requester))
    return UCS_ERR_INVALID_PARAM;
  refuse_unless_empty(h.requester, get_error(h.off, h.bytes, segments()));
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
  prm.cb.send = on_reply_sent;
  void* req = ucp_tag_send_nbx(g.peers[static_cast<size_t>(h.requester)].ep, local_address(h.off), h.bytes, h.tag, &prm);
  if (UCS_PTR_IS_ERR(req))
    log::write_line(log::Level::kError, fmt::format("UCX: answering a get of {} bytes for PE {} failed: {}", h.bytes,
                                                    h.requester, ucs_status_string(UCS_PTR_STATUS(req))));
  return UCS_OK;
}

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

template <typename W>
uint64_t apply_atomic(W* where, AtomicOp op, uint64_t value, uint64_t cond) {
  std::atomic_ref<W> word(*where);
  const W v = static_cast<W>(value);
  switch (op) {
    case AtomicOp::kFetch: return word.load(std::memory_order_acquire);
    case AtomicOp::kSet: word.store(v, std::memory_order_release); return 0;
    case AtomicOp::kSwap: return word.exchange(v);
    case AtomicOp::kCompareSwap: {
      W expected = static_cast<W>(cond);
      word.compare_exchange_strong(expected, v);
      return expected;
    }
    case AtomicOp::kFetchAdd: return word.fetch_add(v);
    case AtomicOp::kFetchAnd: return word.fetch_and(v);
    case AtomicOp::kFetchOr: return word.fetch_or(v);
    case AtomicOp::kFetchXor: return word.fetch_xor(v);
  }
  return 0;
}

void on_value_sent(void* req, ucs_status_t, void* value) {
  delete static_cast<uint64_t*>(value);
  ucp_request_free(req);
}

// A peer's atomic on this PE's memory: applied here (the same std::atomic_ref as the PEs of this host use),
// waiters on the word woken, the old value sent back.
ucs_status_t on_am_atomic(void*, const void* header, size_t header_length, void*, size_t,
                          const ucp_am_recv_param_t*) {
  AmAtomicHeader h;
  if (!read_header(header, header_length, &h) || !remote_peer(h.from))
    return UCS_ERR_INVALID_PARAM;
  refuse_unless_empty(h.from, atomic_error(h.off, h.size, h.op, static_cast<int32_t>(AtomicOp::kFetchXor), segments()));
  char* where = local_address(h.off);
  const auto op = static_cast<AtomicOp>(h.op);
  auto* old = new uint64_t(h.size == 4 ? apply_atomic(reinterpret_cast<uint32_t*>(where), op, h.value, h.cond)
                                       : apply_atomic(reinterpret_cast<uint64_t*>(where), op, h.value, h.cond));
  if (op != AtomicOp::kFetch) sync::notify_range(g.my_pe, h.off, static_cast<uint64_t>(h.size));
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = on_value_sent;
  prm.user_data = old;
  void* req = ucp_tag_send_nbx(g.peers[static_cast<size_t>(h.from)].ep, old, sizeof *old, h.tag, &prm);
  if (req == nullptr) {
    delete old;
  } else if (UCS_PTR_IS_ERR(req)) {
    delete old;
    log::write_line(log::Level::kError, fmt::format("UCX: answering an atomic for PE {} failed: {}", h.from,
                                                    ucs_status_string(UCS_PTR_STATUS(req))));
  }
  return UCS_OK;
}

// Sets up the counts per peer and registers the handlers of the messages above.
Status open_messages(int n_pes) {
  ucs_status_t st;
  g.am_sent = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(n_pes));
  g.out = std::make_unique<Outbound[]>(static_cast<size_t>(n_pes));
  g.fence_epoch.store(0);
  g.landed.assign(static_cast<size_t>(n_pes), 0);
  g.ack_wanted.assign(static_cast<size_t>(n_pes), 0);
  g.deferred.assign(static_cast<size_t>(n_pes), {});
  g.am_acked = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(n_pes));
  for (unsigned id : {kAmPut, kAmGet, kAmPutAck, kAmAckRequest, kAmAtomic}) {
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id = id;
    hp.cb = id == kAmPut        ? on_am_put
            : id == kAmGet      ? on_am_get
            : id == kAmPutAck   ? on_am_put_ack
            : id == kAmAtomic   ? on_am_atomic
                                : on_am_ack_request;
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    st = ucp_worker_set_am_recv_handler(g.worker, &hp);
    if (st != UCS_OK)
      return make_status(Code::kInternal, "UCX: registering the active-message handlers: {}", ucs_status_string(st));
  }
  return Status::ok();
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
  if (bytes >= kAmMin && sock_puts_on()) return sock_put(pe, h, src);
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = bytes >= kAmMin ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
  wait_request(ucp_am_send_nbx(g.peers[static_cast<size_t>(pe)].ep, kAmPut, &h, sizeof h, src, bytes, &prm),
               sig_op < 0 ? "put" : "put with signal", pe, bytes);
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

void put(int pe, uint64_t off, const void* src, size_t bytes) { am_put(pe, off, src, bytes, 0, 0, -1); }

// A large non-blocking put: sent without waiting; `src` is read until its acknowledgment, which the next
// fence or quiet waits for. Smaller ones are blocking puts (their data is copied out at once).
// Over Tessera's connections a large put is written at once, like a blocking one.
void put_nbi(int pe, uint64_t off, const void* src, size_t bytes) {
  if (bytes < kAmMin || sock_puts_on()) return put(pe, off, src, bytes);
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
  uint64_t addr;
  ucp_rkey_h rkey;
  Peer& p = target(pe, off, &addr, &rkey);
  wait_put_acks(pe);  // a get sees this PE's earlier puts to the peer
  ucp_request_param_t prm{};
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
  am_put(pe, off, src, bytes, sig_off, signal, op == kSignalAdd ? kSignalAdd : kSignalSet);
}

// Puts after this one follow every put before it (next_put); atomics and gets wait for the puts to their
// peer anyway (and are blocking); UCX's fence orders what else UCX may have in flight.
void fence() {
  g.fence_epoch.fetch_add(1, std::memory_order_acq_rel);
  const ucs_status_t st = ucp_worker_fence(g.worker);
  if (st != UCS_OK) log::fatal("UCX fence: {}", ucs_status_string(st));
}

void quiet() {
  wait_put_acks(-1);
  ucp_request_param_t prm{};
  wait_request(ucp_worker_flush_nbx(g.worker, &prm), "quiet (flush)", -1, 0);
}

}  // namespace tessera::transport::ucx
