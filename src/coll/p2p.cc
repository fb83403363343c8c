#include "coll/p2p.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/log.h"
#include "base/memcopy.h"
#include "coll/single_copy.h"
#include "coll/engine.h"
#include "coll/hier.h"
#include "coll/resilience.h"

namespace tessera::coll {
namespace {
constexpr uint64_t kHeader = 64;
constexpr uint64_t kMagic = 0x7e55e7a2b2b00000ull;
// A header that carries the sender's buffer address instead of the data: the receiver reads the message
// with process_vm_readv straight into its buffer (one copy where the ring takes two), then takes the header,
// which is what completes the send.
constexpr uint64_t kMagicSingleCopy = 0x7e55e7a2b2b0c0a0ull;
// A header that carries the message itself in its last kInlineBytes: a small send/recv moves one cache line
// each way instead of two (the header's and the payload's).
constexpr uint64_t kMagicInline = 0x7e55e7a2b2b01111ull;
constexpr uint64_t kInlineBytes = kHeader - 2 * sizeof(uint64_t);
uint64_t up64(uint64_t v) { return (v + 63) & ~uint64_t{63}; }

// Single copy for messages the ring cannot hold whole (so the send waits for the receiver either way, and
// nothing that completed buffered before waits now), where every member can read every member's memory and
// the kernel's copy costs less than two of ours: in an exchange, where both ranks send and receive at once,
// the ring makes each CPU copy every byte twice (in on its send, out on its receive) and the single copy
// once (docs/coll.md, send/recv).
bool single_copy(const Communicator& c, uint64_t bytes) {
  return c.cma && bytes >= c.p2p_bytes && c.model.cma_beta < 2 * c.model.beta;
}

struct P2pOp {
  Communicator* c;
  bool send;
  int peer;
  char* buf;
  uint64_t bytes;
  uint64_t moved = 0;     // payload bytes copied
  bool header = false;    // header written / read
  bool done = false;
  bool remote = false;    // to or from another host: a transport message (coll/hier.h)
  void* request = nullptr;
  uint64_t taken_at = 0;  // a single-copy send: done once the receiver's taken reaches this
};

thread_local int t_depth = 0;
thread_local std::vector<P2pOp> t_ops;

// One attempt to move data; returns true when something moved.
bool progress_send(P2pOp& o) {
  Communicator& c = *o.c;
  const uint64_t P = c.p2p_bytes;
  uint64_t& sent = c.p2p_sent[o.peer];
  const uint64_t taken = c.taken(o.peer, c.rank)->v.load(std::memory_order_acquire);
  char* ring = c.p2p[c.rank] + static_cast<size_t>(o.peer) * P;
  bool moved = false;
  if (!o.header) {
    if (P - (sent - taken) < kHeader) return false;
    if (o.bytes <= kInlineBytes) {
      uint64_t h[2] = {kMagicInline, o.bytes};
      std::memcpy(ring + sent % P, h, sizeof h);
      if (o.bytes) memcopy(ring + sent % P + sizeof h, o.buf, o.bytes);
      o.moved = o.bytes;
    } else {
      const bool single = single_copy(c, o.bytes);
      uint64_t h[3] = {single ? kMagicSingleCopy : kMagic, o.bytes, reinterpret_cast<uintptr_t>(o.buf)};
      std::memcpy(ring + sent % P, h, sizeof h);
      if (single) o.taken_at = sent + kHeader;
    }
    sent += kHeader;
    o.header = moved = true;
  }
  // A single-copy send moves nothing itself: it is done once the receiver has copied it and taken the header.
  if (o.taken_at && taken >= o.taken_at) o.moved = o.bytes;
  while (!o.taken_at && o.moved < o.bytes) {
    uint64_t space = P - (sent - taken);
    uint64_t n = std::min({o.bytes - o.moved, space, P - sent % P});
    if (n == 0) break;
    copy(ring + sent % P, o.buf + o.moved, n, Stores::kCached);
    sent += n;
    o.moved += n;
    moved = true;
  }
  if (o.moved == o.bytes) {
    sent = up64(sent);
    o.done = true;
  }
  if (moved) {
    c.sent(c.rank, o.peer)->v.store(sent, std::memory_order_release);  // notify fences it from the sleepers
    sync::notify(c.world[o.peer]);
  }
  return moved;
}

bool progress_recv(P2pOp& o) {
  Communicator& c = *o.c;
  const uint64_t P = c.p2p_bytes;
  uint64_t& taken = c.p2p_taken[o.peer];
  const uint64_t sent = c.sent(o.peer, c.rank)->v.load(std::memory_order_acquire);
  const char* ring = c.p2p[o.peer] + static_cast<size_t>(c.rank) * P;
  bool moved = false;
  if (!o.header) {
    if (sent - taken < kHeader) return false;
    uint64_t h[3];
    std::memcpy(h, ring + taken % P, sizeof h);
    if (h[0] != kMagic && h[0] != kMagicSingleCopy && h[0] != kMagicInline)
      log::fatal("recv from rank {} (PE {}) on {}: corrupt message header", o.peer, c.world[o.peer], c.name);
    if (h[1] != o.bytes)
      log::fatal("recv on {}: rank {} (PE {}) expects {} bytes from rank {} (PE {}), which sent {} bytes", c.name,
                 c.rank, c.world[c.rank], o.bytes, o.peer, c.world[o.peer], h[1]);
    if (h[0] == kMagicInline) {
      if (o.bytes) memcopy(o.buf, ring + taken % P + 2 * sizeof(uint64_t), o.bytes);
      o.moved = o.bytes;
    } else if (h[0] == kMagicSingleCopy) {
      cma_read(c, o.peer, o.buf, reinterpret_cast<const void*>(h[2]), o.bytes);
      o.moved = o.bytes;
    }
    taken += kHeader;
    o.header = moved = true;
  }
  while (o.moved < o.bytes) {
    uint64_t n = std::min({o.bytes - o.moved, sent - taken, P - taken % P});
    if (n == 0) break;
    copy(o.buf + o.moved, ring + taken % P, n, Stores::kCached);
    taken += n;
    o.moved += n;
    moved = true;
  }
  if (o.moved == o.bytes) {
    taken = up64(taken);
    o.done = true;
  }
  if (moved) {
    c.taken(c.rank, o.peer)->v.store(taken, std::memory_order_release);  // notify fences it from the sleepers
    sync::notify(c.world[o.peer]);
  }
  return moved;
}

std::string op_text(const P2pOp& o) {
  return fmt::format("{} rank {} (PE {}) on {}", o.send ? "send to" : "recv from", o.peer,
                     o.c->world[static_cast<size_t>(o.peer)], o.c->name);
}

// Resilient mode (resilience.h): an op whose peer has failed, or whose communicator is revoked, is dropped
// (marked done) and the call's other ops go on: a live partner of one of them waits for its message, and
// stopping midway would leave it waiting for what this PE abandoned (or half a message in the pair's
// channel, which the next message would follow). The call then reports the first dropped op. The
// communicator is not broken by it: its other pairs keep their channels.
class P2pWatch final : public sync::FailWatch {
 public:
  explicit P2pWatch(std::vector<P2pOp>& ops) : ops_(ops) {}
  // Drops what can no longer complete; never stops the wait itself (the ops left are between live PEs of
  // communicators not revoked, whose partners run them to the end too).
  bool tripped() override {
    settle(false);
    return false;
  }
  // Marks the ops that can no longer complete done, recording the first; messages between hosts only with
  // `remote` (their requests are the transport's until their own wait has ended: run_all_unwatched).
  void settle(bool remote) {
    for (P2pOp& o : ops_) {
      if (o.done || (o.remote && !remote)) continue;
      const uint64_t by = revoked_by(*o.c);
      const int pe = o.c->world[static_cast<size_t>(o.peer)];
      if (by == 0 && !pe_failed(pe)) continue;
      o.done = true;
      if (!error_.empty()) continue;
      if (by != 0) {
        error_ = fmt::format("{}: {} was revoked by rank {}", op_text(o), o.c->name, by - 1);
        revoked_ = true;
      } else {
        error_ = fmt::format("{}: PE {} failed (the job went on without it: --on-failure continue)", op_text(o), pe);
      }
    }
  }
  [[noreturn]] void raise() override { throw std::logic_error("P2pWatch never stops a wait"); }
  // After the ops ran: the first dropped op's error, or ok.
  Status result() const {
    if (error_.empty()) return Status::ok();
    return Status(revoked_ ? Code::kRevoked : Code::kPeerFailed,
                  ops_.size() > 1 ? error_ + "; the group's other operations completed" : error_);
  }

 private:
  std::vector<P2pOp>& ops_;
  std::string error_;
  bool revoked_ = false;
};

void run_all_unwatched(std::vector<P2pOp>& ops);

// Runs every op to completion; an op waits for earlier ops of the same (communicator, peer, direction).
Status run_all(std::vector<P2pOp>& ops) {
  bool resilient = false;
  for (const P2pOp& o : ops) resilient = resilient || o.c->resilient;
  if (!resilient) [[likely]] {
    run_all_unwatched(ops);
    return Status::ok();
  }
  P2pWatch watch(ops);
  sync::FailScope scope(&watch);
  watch.settle(true);  // a peer that failed before the call, or a communicator revoked: its ops move nothing
  run_all_unwatched(ops);
  watch.settle(true);
  return watch.result();
}

// Resilient mode: the wait for a message between hosts stops when its peer has failed or its communicator
// is revoked (the op then stays not done, and P2pWatch::settle records it).
class RemoteOpWatch final : public sync::FailWatch {
 public:
  explicit RemoteOpWatch(const P2pOp& o) : o_(o) {}
  bool tripped() override { return revoked_by(*o_.c) != 0 || pe_failed(o_.c->world[static_cast<size_t>(o_.peer)]); }
  [[noreturn]] void raise() override { throw sync::Interrupted("a message between hosts was dropped", {}, false); }

 private:
  const P2pOp& o_;
};

void run_all_unwatched(std::vector<P2pOp>& ops) {
  // Messages between hosts: every one posted first (the transport keeps a pair's order), completed last.
  bool any_remote = false;
  for (P2pOp& o : ops)
    if (o.remote && !o.done) {
      o.request = hier_post(*o.c, o.send, o.buf, o.bytes, o.peer);
      any_remote = true;
    }
  auto complete_remote = [&] {
    for (P2pOp& o : ops) {
      if (!o.remote || o.done) continue;
      if (!o.c->resilient) [[likely]] {
        hier_complete(*o.c, o.request, o.send, o.bytes, o.peer);
        o.done = true;
        continue;
      }
      RemoteOpWatch w(o);
      sync::FailScope scope(&w);
      try {
        hier_complete(*o.c, o.request, o.send, o.bytes, o.peer);
        o.done = true;
      } catch (const sync::Interrupted&) {  // the transport has let go of the request
      }
    }
  };
  auto blocked = [&](size_t i) {
    for (size_t j = 0; j < i; ++j)
      if (!ops[j].done && ops[j].c == ops[i].c && ops[j].peer == ops[i].peer && ops[j].send == ops[i].send)
        return true;
    return false;
  };
  auto pass = [&] {
    bool all = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].done || ops[i].remote) continue;  // messages between hosts: complete_remote
      if (!blocked(i)) ops[i].send ? progress_send(ops[i]) : progress_recv(ops[i]);
      all = all && ops[i].done;
    }
    return all;
  };
  if (pass() || ops.empty()) {
    if (any_remote) complete_remote();
    return;
  }
  Communicator* waiter = nullptr;  // a communicator of this host (remote ops are done already)
  for (const P2pOp& o : ops)
    if (!o.done && !o.remote) waiter = o.c;
  coll_wait(*waiter, pass, [&] {
    std::string s = "send/recv group to complete:";
    for (const P2pOp& o : ops) {
      if (o.done || o.remote) continue;
      s += fmt::format(" [{} {} bytes {} rank {} (PE {}) on {}: {} moved]", o.send ? "send" : "recv", o.bytes,
                       o.send ? "to" : "from", o.peer, o.c->world[o.peer], o.c->name, o.moved);
    }
    return s;
  });
  if (any_remote) complete_remote();
}

Status enqueue(Communicator& c, bool send, const void* buf, size_t bytes, int peer) {
  if (peer < 0 || peer >= c.size)
    return invalid_arg("{}: peer {} is out of range: the communicator has {} ranks", send ? "send" : "recv", peer, c.size);
  if (bytes && !buf) return invalid_arg("{}: buffer is null with {} bytes", send ? "send" : "recv", bytes);
  P2pOp o{&c, send, peer, static_cast<char*>(const_cast<void*>(buf)), bytes};
  if (c.hier) {  // members on several hosts: the local communicator, or a message between hosts
    int local_peer = 0;
    if (Communicator* local = hier_local_peer(c, peer, &local_peer)) {
      o.c = local;
      o.peer = local_peer;
    } else {
      o.remote = true;
    }
  }
  if (t_depth > 0) {
    t_ops.push_back(o);
    return Status::ok();
  }
  std::vector<P2pOp> one{o};
  return run_all(one);
}
}  // namespace

Status p2p_send(Communicator& c, const void* buf, size_t bytes, int peer) { return enqueue(c, true, buf, bytes, peer); }
Status p2p_recv(Communicator& c, void* buf, size_t bytes, int peer) { return enqueue(c, false, buf, bytes, peer); }

Result<int> p2p_recv_any(Communicator& c, void* buf, size_t bytes) {
  if (t_depth > 0) return invalid_arg("recv from any source on {}: not inside a group (its source is known only "
                                      "once a message has arrived)", c.name);
  if (c.hier)
    return make_status(Code::kUnsupported, "recv from any source on {}: its members are on several hosts; name "
                       "the source", c.name);
  // The first channel holding the header of a message not yet taken, scanning from after the last source
  // so that no sender starves the others.
  static thread_local int t_next = 0;
  int from = -1;
  auto arrived = [&] {
    for (int i = 0; i < c.size; ++i) {
      const int m = (t_next + i) % c.size;
      if (m == c.rank) continue;
      if (c.sent(m, c.rank)->v.load(std::memory_order_acquire) - c.p2p_taken[m] >= kHeader) {
        from = m;
        return true;
      }
    }
    return false;
  };
  if (c.size < 2) return invalid_arg("recv from any source on {}: there is no other rank", c.name);
  auto wait = [&] {
    coll_wait(c, arrived, [&] { return fmt::format("a message from any rank of {} ({} bytes)", c.name, bytes); });
  };
  if (!c.resilient) [[likely]] {
    wait();
  } else {
    // Any source includes a failed member, whose message may never come: once a member has failed (or the
    // communicator is revoked), a receive from any source fails unless a message is there already, as
    // MPI's ULFM fails MPI_ANY_SOURCE receives. The communicator is not broken by it.
    CommWatch watch(c);
    sync::FailScope scope(&watch);
    try {
      if (!arrived() && watch.tripped()) watch.raise();
      wait();
    } catch (const sync::Interrupted& e) {
      return Status(e.revoked ? Code::kRevoked : Code::kPeerFailed,
                    fmt::format("recv from any source on {}: {}; its message may never come", c.name, e.what()));
    }
  }
  t_next = from + 1;
  TS_RETURN_IF_ERROR(enqueue(c, false, buf, bytes, from));
  return from;
}

void group_start() { ++t_depth; }
int group_depth() { return t_depth; }

Status group_end() {
  if (t_depth == 0) return invalid_arg("group_end without a matching group_start");
  if (--t_depth > 0) return Status::ok();
  // The group's ops move to a vector of this thread that keeps its storage, and t_ops gets that vector's
  // empty storage back: a group allocates nothing once the thread has run one as large (two mallocs and a
  // free were a tenth of a small send/recv; docs/journal.md, "Collective selection and send/recv").
  static thread_local std::vector<P2pOp> t_run;
  t_run.swap(t_ops);
  Status st = run_all(t_run);
  t_run.clear();
  return st;
}

}  // namespace tessera::coll
