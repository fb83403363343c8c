// The UCX transport: peers on other hosts (transport.h), over whatever UCX finds between them (InfiniBand,
// RoCE, TCP).
//
// open() (collective, once at init): one UCP context and one worker per PE, in UCS_THREAD_MODE_MULTI (every
// thread of the PE may issue operations; the progress thread below progresses the same worker). The heap
// and data segments are registered with ucp_mem_map, their remote keys packed, and each PE's worker address,
// keys and segment bases are exchanged with the bootstrap's allgather (lengths first, then records padded to
// the longest). Endpoints and unpacked keys exist only for peers on other hosts; the rest of the job is
// reached through shared memory. When the job runs on one host, open() does nothing.
//
// UCX's own shared-memory transports are left out unless UCX_TLS is set: peers on this host use Tessera's
// shm transport, and a "host" that shares the kernel with another (containers, network namespaces) would
// otherwise be reached through shared memory it cannot see, or worse, silently, and the network never used.
//
// Puts are active messages of our own, not UCX's RMA: over TCP UCX emulates RMA with messages the target
// serves anyway, its large puts carry a third of what the link does, and its flush and fence each cost a
// round trip. A put below kAmMin bytes is an eager message (UCX copies it out before the send returns); a
// larger one goes by rendezvous straight into the destination, and its request completes once the data
// has left. Counts per peer say what is in flight: the target counts the puts that have landed, and
// acknowledges them when the sender asks (kAmAckRequest: "tell me once N have landed"; one message each
// way, and none while nobody waits):
//   quiet            waits for every acknowledgment, then flushes UCX's own operations (atomics);
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
// Messages (collectives across hosts): ucp_tag_send_nbx / ucp_tag_recv_nbx with an exact tag; a message
// larger than UCX's eager limit goes by rendezvous, straight into the posted receive buffer.
//
// Progress: operations that target this PE (gets, atomics, and puts over TCP) advance only when its worker
// is progressed. A PE that computes without calling Tessera must not stall its peers, so each PE runs one
// progress thread that sleeps in epoll on the worker's event fd (ucp_worker_arm) and wakes only when
// something arrives: no CPU spent while nothing happens (the machines are often 2-CPU hosts). What it
// writes into this PE's memory wakes the waiters on those words; after a round it rings the PE's doorbell
// only while a thread of the PE waits for a UCX request (above). Blocking calls of the PE also progress
// the worker while they wait.
//
// The progress thread runs on the CPUs of the job near the NIC it serves (hwloc: the NIC's NUMA node).
//
// Failures: endpoints use UCP_ERR_HANDLING_MODE_PEER (a failed peer's operations fail instead of hanging);
// the job's end and its one line are the launcher's or the bootstrap's (on_peer_error).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "base/rank_table.h"
#include "base/trace.h"
#include "bootstrap/bootstrap.h"
#include "sync/wait.h"
#include "transport/transport.h"

namespace tessera::transport {
namespace {
const config::Var<std::string> kProgressThread{
    "TESSERA_UCX_PROGRESS_THREAD", "on",
    "on: a thread per PE sleeps on the UCX worker's event fd and serves peers' gets, atomics and puts while the "
    "PE computes; off: only the PE's own Tessera calls progress the worker (peers wait until it calls one)"};

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
  int32_t pad;
};

// An eager put that arrived before the puts it must follow had landed: applied once they have.
struct Deferred {
  AmPutHeader h;
  std::vector<char> data;
};

// Sender side, per peer: the count of puts later ones must follow, and the fence epoch it reflects.
struct Outbound {
  std::mutex m;
  uint64_t floor = 0;
  uint64_t fence_seen = 0;
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
  // Sender side of puts (see "Puts" at the top of this file): puts sent to each peer and acknowledged by
  // it, and over all peers; written by any thread.
  std::unique_ptr<std::atomic<uint64_t>[]> am_sent, am_acked;
  std::unique_ptr<Outbound[]> out;      // per peer
  std::atomic<uint64_t> fence_epoch{0};  // fences so far
  // Threads of this PE waiting for a UCX request (or an acknowledgment): the progress thread rings the
  // PE's doorbell after an event only then. Writes into symmetric memory ring it themselves, for the words
  // they wrote (landed(), on_am_atomic()).
  std::atomic<int> request_waiters{0};
  // Target side, touched only inside the worker's progress (handlers and landing callbacks; the worker's
  // lock serialises them): puts landed from each source, and those that wait for earlier ones.
  std::vector<uint64_t> landed;
  std::vector<uint64_t> ack_wanted;  // per source: the count its pending acknowledgment request waits for
  std::vector<std::deque<Deferred>> deferred;
};
// Puts and gets of at least this many bytes go by rendezvous (see the top of this file); smaller puts are
// eager messages, copied out by UCX before the send returns.
constexpr size_t kAmMin = 64 * 1024;
// Tags with the top bit set are this transport's own (large gets' replies); the collectives' are below.
constexpr uint64_t kGetReplyTag = uint64_t{1} << 63;
State g;

// Record exchanged at open(): fixed header, then worker address, heap key and data key bytes.
struct RecordHeader {
  uint64_t heap_base;
  uint64_t data_base;
  uint32_t addr_len;
  uint32_t heap_key_len;
  uint32_t data_key_len;
  uint32_t pad;
};

Status ucx_error(ucs_status_t st, std::string_view what) {
  return make_status(Code::kInternal, "UCX: {}: {}", what, ucs_status_string(st));
}

bool reach(const PeerInfo& me, const PeerInfo& peer) { return me.host != peer.host; }

bool spans_hosts(const JobView& job) {
  for (int pe = 1; pe < job.n_pes; ++pe)
    if (job.hosts[pe] != job.hosts[0]) return true;
  return false;
}

// A peer's endpoint failed: the peer died or its host is gone. Saying so and ending the job is the
// launcher's or the bootstrap's (tessera-run, the TCP rendezvous, mpirun see the same death through their
// own connections and print the job's one line); ending it from here too would race them for that line. An
// operation on the endpoint now fails with a message naming the peer.
void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
  if (g.closing.load()) return;
  const int pe = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  log::info("PE {} (host {}): UCX connection failed: {}", pe, g.peers[static_cast<size_t>(pe)].host,
            ucs_status_string(status));
}

// An operation failed, almost always because its peer died or its host went away. The launcher or the
// bootstrap is about to say so and end the job, with the job's one line: wait a moment for that (this PE
// then leaves as every waiter does when the job ends), and report the failure here only if nobody does.
[[noreturn]] void operation_failed(const char* what, size_t bytes, int pe, ucs_status_t st) {
  const sync::WaitContext& ctx = sync::wait_context();
  for (int i = 0; i < 200 && ctx.abort_word; ++i) {
    if (const uint32_t a = ctx.abort_word->load()) sync::exit_for_abort(a);
    sync::sleep_ns(10'000'000);
  }
  log::fatal("UCX {} of {} bytes to {} failed: {}", what, bytes,
             pe >= 0 ? fmt::format("PE {} (host {})", pe, g.peers[static_cast<size_t>(pe)].host)
                     : std::string("every peer"),
             ucs_status_string(st));
}

// Counts a thread waiting for a request while it exists (State::request_waiters).
struct RequestWait {
  RequestWait() { g.request_waiters.fetch_add(1, std::memory_order_seq_cst); }
  ~RequestWait() { g.request_waiters.fetch_sub(1, std::memory_order_relaxed); }
  RequestWait(const RequestWait&) = delete;
  RequestWait& operator=(const RequestWait&) = delete;
};

// Waits for a request of `what` to `pe` under the job's deadline, progressing the worker; frees it.
void wait_request(void* req, const char* what, int pe, size_t bytes) {
  if (req == nullptr) return;
  if (UCS_PTR_IS_ERR(req)) operation_failed(what, bytes, pe, UCS_PTR_STATUS(req));
  ucs_status_t st = UCS_INPROGRESS;
  const RequestWait counted;
  sync::wait_until(
      [&] {
        ucp_worker_progress(g.worker);
        st = ucp_request_check_status(req);
        return st != UCS_INPROGRESS;
      },
      [&] {
        return fmt::format("UCX {} of {} bytes to {} to complete", what, bytes,
                           pe >= 0 ? fmt::format("PE {} (host {})", pe, g.peers[static_cast<size_t>(pe)].host)
                                   : std::string("every peer"));
      });
  ucp_request_free(req);
  if (st != UCS_OK) operation_failed(what, bytes, pe, st);
}

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

void progress_loop(std::string nic) {
  if (trace::g_on) trace::name_thread("progress");
  // On the NUMA node of the NIC it serves (its interrupts and DMA land there); anywhere in the job else.
  cpu_set_t near;
  if (cpus_near_nic(nic.c_str(), &near)) sched_setaffinity(0, sizeof near, &near);
  else unbind_thread_to_job_cpus();
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = g.efd;
  epoll_ctl(ep, EPOLL_CTL_ADD, g.efd, &ev);
  ev.data.fd = g.stop_fd;
  epoll_ctl(ep, EPOLL_CTL_ADD, g.stop_fd, &ev);
  for (;;) {
    bool any = false;
    while (ucp_worker_progress(g.worker) != 0) any = true;
    if (any && g.request_waiters.load(std::memory_order_seq_cst) != 0) sync::notify(g.my_pe);
    const ucs_status_t st = ucp_worker_arm(g.worker);
    if (st == UCS_ERR_BUSY) continue;  // more arrived meanwhile
    if (st != UCS_OK) log::fatal("UCX: arming the progress thread's worker: {}", ucs_status_string(st));
    epoll_event got[2];
    const int n = epoll_wait(ep, got, 2, -1);
    bool stop = false;
    for (int i = 0; i < n; ++i) stop = stop || got[i].data.fd == g.stop_fd;
    if (stop) break;
  }
  ::close(ep);
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

// A put's data is in place: apply its signal, wake this PE's waiters, count it, and answer the sender's
// request for an acknowledgment if this was the last put it waits for. Inside the worker's progress.
void landed(const AmPutHeader& h) {
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
    send_ack(h.from, n);
  }
}

// Applies the deferred puts of `from` whose predecessors have now landed, until none is left that may go.
void drain_deferred(int64_t from) {
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
      if (!d.data.empty()) std::memcpy(local_address(d.h.off), d.data.data(), d.data.size());
      landed(d.h);
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
    landed(*h);
    drain_deferred(h->from);
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
      landed(h);
      drain_deferred(h.from);
      delete landing;
    }
    return UCS_OK;
  }
  if (h.after > g.landed[static_cast<size_t>(h.from)]) {
    const char* bytes = static_cast<const char*>(data);
    g.deferred[static_cast<size_t>(h.from)].push_back(Deferred{h, std::vector<char>(bytes, bytes + length)});
    return UCS_OK;
  }
  if (length) std::memcpy(dest, data, length);
  landed(h);
  drain_deferred(h.from);
  return UCS_OK;
}

// A peer waits for its puts to this PE: answer now if `count` of them have landed, else once they have.
ucs_status_t on_am_ack_request(void*, const void* header, size_t header_length, void*, size_t,
                               const ucp_am_recv_param_t*) {
  AmAckHeader h;
  if (!read_header(header, header_length, &h) || !remote_peer(h.from))
    return UCS_ERR_INVALID_PARAM;
  const auto from = static_cast<size_t>(h.from);
  if (g.landed[from] >= h.count) send_ack(h.from, g.landed[from]);
  else g.ack_wanted[from] = std::max(g.ack_wanted[from], h.count);
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
    request_ack(q, w);
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
  if (!read_header(header, header_length, &h) || !remote_peer(h.from) ||
      (h.size != 4 && h.size != 8))
    return UCS_ERR_INVALID_PARAM;
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

Status open(const JobView& job) {
  if (!spans_hosts(job)) return Status::ok();
  g.my_pe = job.my_pe;
  g.n_pes = job.n_pes;
  g.allgather = job.allgather;
  g.heap_bytes = job.heap_bytes;
  g.my_heap = job.my_heap;
  g.my_data = job.my_data;
  g.data_bytes = job.data_bytes;
  g.peers.assign(static_cast<size_t>(job.n_pes), Peer{});

  // UCX's keepalive declares a peer whose worker has not answered for a while failed: on a loaded 2-CPU host
  // a healthy peer's progress thread can wait that long for a CPU, and a failure ends the job. Whether a PE
  // or host is gone is the bootstrap's and the launcher's to say (their connections), so it is off unless
  // the user sets it.
  // (UCX's transports read it from the environment too, so it is set there, before ucp_init.)
  setenv("UCX_KEEPALIVE_INTERVAL", "inf", 0);
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_error(st, "reading the configuration");
  if (!std::getenv("UCX_TLS")) (void)ucp_config_modify(config, "TLS", "^sm");
  // The rank table's NICs of this host, unless the user chose UCX's devices.
  if (const RankTable* t = rank_table(); t && !std::getenv("UCX_NET_DEVICES"))
    if (const RankTable::Host* h = t->host_of(job.my_pe); h && !h->nics.empty()) {
      std::string devs;
      for (const std::string& nic : h->nics) devs += (devs.empty() ? "" : ",") + nic;
      (void)ucp_config_modify(config, "NET_DEVICES", devs.c_str());
    }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_TAG | UCP_FEATURE_AM |
                    UCP_FEATURE_WAKEUP;
  params.estimated_num_eps = static_cast<size_t>(job.n_pes);
  st = ucp_init(&params, config, &g.context);
  ucp_config_release(config);
  if (st != UCS_OK) return ucx_error(st, "ucp_init");

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(g.context, &wp, &g.worker);
  if (st != UCS_OK) return ucx_error(st, "creating the worker");
  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  if (ucp_worker_query(g.worker, &wa) == UCS_OK && wa.thread_mode != UCS_THREAD_MODE_MULTI)
    return make_status(Code::kUnsupported, "UCX: this UCX build has no multi-threaded workers (--enable-mt)");

  auto map = [](char* base, size_t bytes, ucp_mem_h* memh) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = base;
    mp.length = bytes;
    return ucp_mem_map(g.context, &mp, memh);
  };
  st = map(job.my_heap, job.heap_bytes, &g.heap_memh);
  if (st != UCS_OK) return ucx_error(st, fmt::format("registering the symmetric heap ({} bytes)", job.heap_bytes));
  if (job.data_bytes) {
    st = map(job.my_data, job.data_bytes, &g.data_memh);
    if (st != UCS_OK) return ucx_error(st, "registering the data segment");
  }

  // My record.
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(g.worker, &addr, &addr_len);
  if (st != UCS_OK) return ucx_error(st, "getting the worker address");
  void* heap_key = nullptr;
  void* data_key = nullptr;
  size_t heap_key_len = 0, data_key_len = 0;
  st = ucp_rkey_pack(g.context, g.heap_memh, &heap_key, &heap_key_len);
  if (st != UCS_OK) return ucx_error(st, "packing the heap's key");
  if (g.data_memh) {
    st = ucp_rkey_pack(g.context, g.data_memh, &data_key, &data_key_len);
    if (st != UCS_OK) return ucx_error(st, "packing the data segment's key");
  }
  RecordHeader h{reinterpret_cast<uint64_t>(job.my_heap), reinterpret_cast<uint64_t>(job.my_data),
                 static_cast<uint32_t>(addr_len), static_cast<uint32_t>(heap_key_len),
                 static_cast<uint32_t>(data_key_len), 0};
  std::vector<char> mine(sizeof h + addr_len + heap_key_len + data_key_len);
  std::memcpy(mine.data(), &h, sizeof h);
  std::memcpy(mine.data() + sizeof h, addr, addr_len);
  std::memcpy(mine.data() + sizeof h + addr_len, heap_key, heap_key_len);
  if (data_key_len) std::memcpy(mine.data() + sizeof h + addr_len + heap_key_len, data_key, data_key_len);
  ucp_worker_release_address(g.worker, addr);
  ucp_rkey_buffer_release(heap_key);
  if (data_key) ucp_rkey_buffer_release(data_key);

  // Lengths, then records padded to the longest.
  const auto n = static_cast<size_t>(job.n_pes);
  uint64_t my_len = mine.size();
  std::vector<uint64_t> lens(n);
  TS_RETURN_IF_ERROR(job.allgather(&my_len, lens.data(), sizeof my_len));
  uint64_t longest = 0;
  for (uint64_t l : lens) longest = std::max(longest, l);
  mine.resize(longest);
  std::vector<char> all(longest * n);
  TS_RETURN_IF_ERROR(job.allgather(mine.data(), all.data(), longest));

  for (int pe = 0; pe < job.n_pes; ++pe) {
    Peer& p = g.peers[static_cast<size_t>(pe)];
    p.host = job.hosts[pe];
    if (job.hosts[pe] == job.hosts[job.my_pe]) continue;
    const char* rec = all.data() + longest * static_cast<size_t>(pe);
    RecordHeader ph;
    std::memcpy(&ph, rec, sizeof ph);
    p.heap_base = ph.heap_base;
    p.data_base = ph.data_base;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(rec + sizeof ph);
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_peer_error;
    ep.err_handler.arg = reinterpret_cast<void*>(static_cast<intptr_t>(pe));
    st = ucp_ep_create(g.worker, &ep, &p.ep);
    if (st != UCS_OK) return ucx_error(st, fmt::format("connecting to PE {} on host {}", pe, p.host));
    st = ucp_ep_rkey_unpack(p.ep, rec + sizeof ph + ph.addr_len, &p.heap_rkey);
    if (st != UCS_OK) return ucx_error(st, fmt::format("unpacking PE {}'s heap key", pe));
    if (ph.data_key_len) {
      st = ucp_ep_rkey_unpack(p.ep, rec + sizeof ph + ph.addr_len + ph.heap_key_len, &p.data_rkey);
      if (st != UCS_OK) return ucx_error(st, fmt::format("unpacking PE {}'s data segment key", pe));
    }
  }

  g.am_sent = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(job.n_pes));
  g.out = std::make_unique<Outbound[]>(static_cast<size_t>(job.n_pes));
  g.fence_epoch.store(0);
  g.landed.assign(static_cast<size_t>(job.n_pes), 0);
  g.ack_wanted.assign(static_cast<size_t>(job.n_pes), 0);
  g.deferred.assign(static_cast<size_t>(job.n_pes), {});
  g.am_acked = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(job.n_pes));
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
    if (st != UCS_OK) return ucx_error(st, "registering the active-message handlers");
  }
  st = ucp_worker_get_efd(g.worker, &g.efd);
  if (st != UCS_OK) return ucx_error(st, "getting the worker's event fd");
  g.stop_fd = eventfd(0, EFD_CLOEXEC);
  if (g.stop_fd < 0) return sys_error("UCX progress thread: eventfd");
  g.closing.store(false);
  // The NIC: the rank table's first for this host, else UCX_NET_DEVICES's first ("mlx5_0:1" -> "mlx5_0"),
  // else the first network device hwloc finds.
  std::string nic;
  if (const RankTable* t = rank_table())
    if (const RankTable::Host* h = t->host_of(job.my_pe); h && !h->nics.empty()) nic = h->nics[0];
  if (const char* d = std::getenv("UCX_NET_DEVICES"); nic.empty() && d && std::strcmp(d, "all") != 0)
    nic = std::string(d).substr(0, std::string(d).find_first_of(",:"));
  if (config::one_of(kProgressThread, {"on", "off"}) == 0) g.progress = std::thread(progress_loop, nic);
  return Status::ok();
}

void quiet();

void close() {
  if (!g.worker) return;
  // A peer may still wait for the reply to an atomic this PE has applied (the reply can sit in a send queue
  // after the barrier that made everyone finalize): every PE completes its own operations, then meets the
  // others out of band, with the progress thread still serving, before anyone closes an endpoint.
  // From here a peer that closes its endpoints first is no failure (a PE that dies now is the launcher's
  // or the bootstrap's to report).
  quiet();
  g.closing.store(true);
  std::vector<char> none(static_cast<size_t>(g.n_pes));
  const char mine = 0;
  if (Status st = g.allgather(&mine, none.data(), 1); !st.is_ok())
    log::warn("UCX: the out-of-band barrier before closing failed: {}", st.message());
  if (g.progress.joinable()) {
    const uint64_t one = 1;
    (void)!::write(g.stop_fd, &one, sizeof one);
    g.progress.join();
  }
  if (g.stop_fd >= 0) ::close(g.stop_fd);
  g.stop_fd = -1;
  for (Peer& p : g.peers) {
    if (p.heap_rkey) ucp_rkey_destroy(p.heap_rkey);
    if (p.data_rkey) ucp_rkey_destroy(p.data_rkey);
    if (p.ep) {
      // Every operation completed before the finalize barrier: nothing to flush, and a peer that has
      // already destroyed its worker would never answer a flush.
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* req = ucp_ep_close_nbx(p.ep, &prm);
      if (req && !UCS_PTR_IS_ERR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(g.worker);
        ucp_request_free(req);
      }
    }
  }
  g.peers.clear();
  if (g.heap_memh) ucp_mem_unmap(g.context, g.heap_memh);
  if (g.data_memh) ucp_mem_unmap(g.context, g.data_memh);
  g.heap_memh = g.data_memh = nullptr;
  ucp_worker_destroy(g.worker);
  ucp_cleanup(g.context);
  g.worker = nullptr;
  g.context = nullptr;
  g.efd = -1;
}

Status map(PeerMemory* m) {
  if (!g.worker || !g.peers[static_cast<size_t>(m->pe)].ep)
    return make_status(Code::kInternal, "UCX: PE {} has no endpoint (open() found one host)", m->pe);
  m->heap = m->data = nullptr;  // reached through the functions below
  return Status::ok();
}
void unmap(PeerMemory* m) { m->heap = m->data = nullptr; }

// Numbers the next put to `pe` and returns how many earlier puts to it must be in place before its data:
// the count at the first put after the latest fence (lazily: a fence itself costs nothing).
uint64_t next_put(int pe) {
  Outbound& o = g.out[static_cast<size_t>(pe)];
  std::lock_guard lock(o.m);
  const uint64_t epoch = g.fence_epoch.load(std::memory_order_acquire);
  if (o.fence_seen != epoch) {
    o.fence_seen = epoch;
    o.floor = g.am_sent[static_cast<size_t>(pe)].load(std::memory_order_relaxed);
  }
  g.am_sent[static_cast<size_t>(pe)].fetch_add(1, std::memory_order_release);
  return o.floor;
}

// The header of a put being sent, with its signal or none (sig_op -1). A rendezvous put lands whenever its
// data has crossed, so it goes only once the puts it follows are acknowledged; an eager one carries the
// count and the target holds it back if needed.
AmPutHeader put_header(int pe, uint64_t off, size_t bytes, uint64_t sig_off, uint64_t signal, int sig_op) {
  const uint64_t after = next_put(pe);
  if (bytes >= kAmMin) wait_put_acks(pe, after);
  return AmPutHeader{off, bytes, g.my_pe, after, sig_off, signal, sig_op, 0};
}

// A put as an active message (see the top of this file); returns once `src` may be reused. Its
// acknowledgment completes it at the target.
void am_put(int pe, uint64_t off, const void* src, size_t bytes, uint64_t sig_off, uint64_t signal, int sig_op) {
  const AmPutHeader h = put_header(pe, off, bytes, sig_off, signal, sig_op);
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
void put_nbi(int pe, uint64_t off, const void* src, size_t bytes) {
  if (bytes < kAmMin) return put(pe, off, src, bytes);
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

void progress() {
  if (g.worker) ucp_worker_progress(g.worker);
}

void* send(int pe, uint64_t tag, const void* buf, size_t bytes) {
  ucp_request_param_t prm{};
  void* req = ucp_tag_send_nbx(g.peers[static_cast<size_t>(pe)].ep, buf, bytes, tag, &prm);
  if (UCS_PTR_IS_ERR(req))
    log::fatal("UCX send of {} bytes to PE {} (host {}) failed: {}", bytes, pe, g.peers[static_cast<size_t>(pe)].host,
               ucs_status_string(UCS_PTR_STATUS(req)));
  return req;
}

void* recv(int pe, uint64_t tag, void* buf, size_t bytes) {
  ucp_request_param_t prm{};
  void* req = ucp_tag_recv_nbx(g.worker, buf, bytes, tag, ~ucp_tag_t{0}, &prm);
  if (UCS_PTR_IS_ERR(req))
    log::fatal("UCX receive of {} bytes from PE {} failed: {}", bytes, pe, ucs_status_string(UCS_PTR_STATUS(req)));
  return req;
}

void wait(void* req, const char* what, int pe, size_t bytes) { wait_request(req, what, pe, bytes); }

}  // namespace

extern const Transport kUcx;
const Transport kUcx{
    .name = "ucx",
    .description = "other hosts: UCX (RMA and atomics by remote key; a progress thread on the worker's event fd)",
    .can_reach = reach,
    .open = open,
    .close = close,
    .map = map,
    .unmap = unmap,
    .put = put,
    .put_nbi = put_nbi,
    .get = get,
    .atomic = atomic,
    .put_signal = put_signal,
    .fence = fence,
    .quiet = quiet,
    .progress = progress,
    .send = send,
    .recv = recv,
    .wait = wait,
};

}  // namespace tessera::transport
