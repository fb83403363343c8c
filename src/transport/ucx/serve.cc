// The target side of the UCX transport's puts, gets and atomics (rma.cc has the sender side and the
// protocol): the handlers of the active messages this PE receives, the landing of puts (counted,
// acknowledged, eager ones that came early held back), the answers to gets and atomics, and the sink of
// TCP's streams. Every header is the sender's word and is checked (wire.h) before anything is written or
// read.
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
  if (!(h.flags & kBatch)) sync::notify_range(g.my_pe, h.off, h.bytes);  // a batch's entries rang in apply()
  const auto from = static_cast<size_t>(h.from);
  const uint64_t n = ++g.landed[from];
  if (g.ack_wanted[from] != 0 && n >= g.ack_wanted[from]) {
    g.ack_wanted[from] = 0;
    acks.emplace_back(h.from, n);
  } else if (h.flags & kAckOnLanding) {
    acks.emplace_back(h.from, n);
  }
}

// Bytes of a put into symmetric memory. An aligned word of 4 or 8 bytes is stored as one atomic store: a
// thread of this PE may be waiting on that very word (shmem_wait_until reads it with atomic loads), and
// the store must be one it can see whole, not a copy racing with its loads.
void land(char* dest, const char* src, size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(dest);
  if (bytes == 8 && at % 8 == 0) {
    uint64_t v;
    std::memcpy(&v, src, 8);  // copy-ok: one word
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(dest)).store(v, std::memory_order_release);
  } else if (bytes == 4 && at % 4 == 0) {
    uint32_t v;
    std::memcpy(&v, src, 4);  // copy-ok: one word
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(dest)).store(v, std::memory_order_release);
  } else if (bytes) {
    memcopy(dest, src, bytes);
  }
}

// An eager put's data into place: its bytes, or a batch's entries (each then rings for the words it wrote).
void apply(const AmPutHeader& h, const char* data, size_t length) {
  if (!(h.flags & kBatch)) {
    land(local_address(h.off), data, length);
    return;
  }
  for (size_t at = 0; at < length;) {
    BatchEntry e;
    std::memcpy(&e, data + at, sizeof e);  // copy-ok: an entry header
    at += sizeof e;
    land(local_address(e.off), data + at, e.bytes);
    sync::notify_range(g.my_pe, e.off, e.bytes);
    at += batch_padded(e.bytes);
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
      apply(d.h, d.data.data(), d.data.size());
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
  const bool batch = h.flags & kBatch;
  if (batch) {
    refuse_unless_empty(h.from, (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || length != h.bytes
                                    ? fmt::format("a batch of puts of {} bytes that carries {}{}", h.bytes, length,
                                                  length == h.bytes ? " by rendezvous" : "")
                                    : "");
  } else {
    refuse_unless_empty(h.from, put_error(h.off, h.bytes, length, h.sig_op, h.sig_off, segments()));
  }
  const char* bytes = static_cast<const char*>(data);
  if (batch) refuse_unless_empty(h.from, batch_error(bytes, length, h.signal, segments()));
  char* dest = batch ? nullptr : local_address(h.off);
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
      g.deferred[static_cast<size_t>(h.from)].push_back(Deferred{h, std::vector<char>(bytes, bytes + length)});
      return UCS_OK;
    }
    apply(h, bytes, length);
    landed(h, acks);
    drain_deferred(h.from, acks);
  }
  send_acks(acks);
  return UCS_OK;
}

// A put whose data is in place (a frame read from TCP's stream, or a rendezvous put's, now or at
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


void on_reply_sent(void* req, ucs_status_t, void*) { ucp_request_free(req); }

// A get of this PE's memory: the bytes go back as a tagged message the requester has posted.
ucs_status_t on_am_get(void*, const void* header, size_t header_length, void*, size_t, const ucp_am_recv_param_t*) {
  AmGetHeader h;
  if (!read_header(header, header_length, &h) || !remote_peer(h.requester))
    return UCS_ERR_INVALID_PARAM;
  refuse_unless_empty(h.requester, get_error(h.off, h.bytes, segments()));
  if (h.tag & kGetOnStream) {
    if (!tcp::streams_on()) refuse_unless_empty(h.requester, "a get to answer on a stream this PE does not read");
    StreamReply r{static_cast<int>(h.requester),
                  AmPutHeader{0, h.bytes, g.my_pe, h.tag & (kGetOnStream - 1), 0, 0, -1, kGetReply},
                  local_address(h.off)};
    {
      std::lock_guard lk(g.reply_m);
      g.replies.push_back(r);
    }
    g.reply_cv.notify_one();
    return UCS_OK;
  }
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
  prm.cb.send = on_reply_sent;
  void* req = ucp_tag_send_nbx(g.peers[static_cast<size_t>(h.requester)].ep, local_address(h.off), h.bytes, h.tag, &prm);
  if (UCS_PTR_IS_ERR(req))
    log::write_line(log::Level::kError, fmt::format("UCX: answering a get of {} bytes for PE {} failed: {}", h.bytes,
                                                    h.requester, ucs_status_string(UCS_PTR_STATUS(req))));
  return UCS_OK;
}

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

namespace {
// TCP's streams deliver large puts here (tcp::Sink): the header is checked like an active message's
// before anything is written, and the bytes go straight to their destination.
char* stream_place(int pe, const void* header, size_t* bytes) {
  AmPutHeader h;
  std::memcpy(&h, header, sizeof h);
  if (h.flags & kGetReply) {
    std::lock_guard lk(g.gets_m);
    const auto it = g.stream_gets.find(h.after);
    if (it == g.stream_gets.end() || it->second->pe != pe || it->second->bytes != h.bytes || h.from != pe)
      log::fatal("the stream connection of {} carried the reply to get {} of {} bytes, which this PE did not ask "
                 "of it: nothing was written", peer_name(pe), h.after, h.bytes);
    *bytes = h.bytes;
    return it->second->dst;
  }
  const std::string why = h.from != pe ? fmt::format("a put in the name of PE {}", h.from)
                                       : put_error(h.off, h.bytes, h.bytes, h.sig_op, h.sig_off, segments());
  if (!why.empty())
    log::fatal("the stream connection of {} carried {}; no Tessera PE sends that: nothing was written",
               peer_name(pe), why);
  *bytes = h.bytes;
  return local_address(h.off);
}
void stream_landed(const void* header) {
  AmPutHeader h;
  std::memcpy(&h, header, sizeof h);
  if (h.flags & kGetReply) {
    {
      std::lock_guard lk(g.gets_m);
      const auto it = g.stream_gets.find(h.after);
      it->second->done.store(true, std::memory_order_release);
      g.stream_gets.erase(it);
    }
    sync::notify(g.my_pe);
    return;
  }
  put_in_place(h);
}

// The replier: writes the replies to large gets, in the order asked, on the requesters' streams.
void reply_loop() {
  std::unique_lock lk(g.reply_m);
  for (;;) {
    g.reply_cv.wait(lk, [] { return g.reply_stop || !g.replies.empty(); });
    if (g.replies.empty()) return;  // stopping, nothing owed
    const StreamReply r = g.replies.front();
    g.replies.pop_front();
    lk.unlock();
    tcp::stream_write(r.to, &r.h, r.src, r.h.bytes);
    lk.lock();
  }
}
}  // namespace

void start_replier() {
  g.reply_stop = false;
  g.replier = std::thread(reply_loop);
}

// At close(), after the out-of-band barrier: every get was answered before it (the requesters returned).
void stop_replier() {
  {
    std::lock_guard lk(g.reply_m);
    g.reply_stop = true;
  }
  g.reply_cv.notify_one();
  if (g.replier.joinable()) g.replier.join();
}

// Sets up the counts per peer, registers the handlers of the messages above and the sink of TCP's streams.
Status open_messages(int n_pes) {
  tcp::set_sink(tcp::Sink{.header_bytes = sizeof(AmPutHeader), .place = stream_place, .landed = stream_landed});
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

}  // namespace tessera::transport::ucx
