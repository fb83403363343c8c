// Two-sided messages between hosts over the messages' connections (tcp.h): send, recv and wait of the TCP
// record, which the collectives across hosts use (coll/hier/net.cc).
//
// Why not UCX's tagged messages: over TCP (the hosts this project meets first), UCX 1.13's tag protocols
// moved well under the link's rate in its own ucx_perftest between two namespace hosts, while one plain
// socket per pair of PEs, written and read without intermediate copies, came much closer to it
// (docs/journal.md, "Messages between hosts"; docs/hosts.md).
//
// Wire: per message a header {tag u64, bytes u64} and the bytes. Messages from one peer arrive in the
// order sent; a header is matched against the receives posted for that peer, in posting order, and its
// bytes are read straight into the matched buffer. A message nobody waits for yet is read into a buffer
// of its own and copied out when its receive is posted (the collectives post receives before sends, so
// that is the exception) - except a large one (kHoldMin bytes and up), which is held: its header is read,
// its bytes stay in the socket, and the connection is not read further until its receive is posted, which
// then takes the bytes straight into place. A root that broadcasts large buffers back to back runs a call
// ahead of its receivers, whose next receive is posted microseconds after the previous one completes: read
// into a buffer of its own, every 64 MiB broadcast paid for 64 MiB of fresh pages and a copy. A hold ends
// without a receive (the bytes go to a buffer after all) when a wait of this PE would block, or waits for
// another message from the same peer, which cannot pass the held one: a hold never makes a wait hang.
//
// Progress: only the PE's own waits drive the sockets (collectives are two-sided: both ends are in the
// call). A waiter polls every connection without blocking for TESSERA_NET_SPIN_NS, then yielding the
// CPU between polls for TESSERA_WAIT_YIELD_NS, then blocks in poll() on them, in slices that let it check
// the job's abort word and deadline. One mutex guards the engine, released between polls; of several
// threads that wait at once, one blocks in poll() and wakes the others when it returns.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/cpu.h"
#include "base/log.h"
#include "base/memcopy.h"
#include "sync/fail.h"
#include "sync/wait.h"
#include "transport/tcp/conns.h"

namespace tessera::transport::tcp {
namespace {

char* target_of(Conn& c) { return c.into_req ? c.into_req->buf : c.into_unx->data.get(); }

// The held message's bytes go to a buffer of their own after all: reading goes on.
void release_hold(Conn& c) {
  if (!c.held) return;
  c.into_unx->data.reset(new char[c.into_unx->bytes]);
  c.held = false;
}

// Starts the message whose header was just read.
void begin_message(Conn& c, int pe) {
  c.got = 0;
  c.into_req = nullptr;
  c.into_unx = nullptr;
  for (auto it = c.posted.begin(); it != c.posted.end(); ++it)
    if ((*it)->tag == c.in.tag) {
      c.into_req = *it;
      c.posted.erase(it);
      break;
    }
  if (c.into_req && c.in.bytes > c.into_req->cap)
    log::fatal("a message of {} bytes from {} for a receive of {} bytes (tag {:#x}): the PEs called different "
               "collectives or counts",
               c.in.bytes, peer_name(pe), c.into_req->cap, c.in.tag);
  if (!c.into_req) {
    c.unexpected.push_back(Unexpected{.tag = c.in.tag, .bytes = c.in.bytes, .data = nullptr});
    c.into_unx = &c.unexpected.back();
    if (c.in.bytes >= kHoldMin) c.held = true;
    else if (c.in.bytes) c.into_unx->data.reset(new char[c.in.bytes]);
  }
}

void end_message(Conn& c) {
  if (c.into_req && c.into_req->orphan) delete c.into_req;
  else if (c.into_req) c.into_req->done = true;
  else c.into_unx->complete = true;
  c.hdr_got = 0;
  c.into_req = nullptr;
  c.into_unx = nullptr;
}

// Reads what the connection has, without blocking.
void read_some(Conn& c, int pe) {
  for (;;) {
    if (c.held) return;
    ssize_t k;
    if (c.hdr_got < sizeof c.in) {
      k = ::recv(c.fd, reinterpret_cast<char*>(&c.in) + c.hdr_got, sizeof c.in - c.hdr_got, MSG_DONTWAIT);
    } else {
      k = ::recv(c.fd, target_of(c) + c.got, c.in.bytes - c.got, MSG_DONTWAIT);
    }
    if (k == 0) return lose(c, "the connection for messages", pe, "it closed the connection");
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return lose(c, "the connection for messages", pe, std::strerror(errno));
    }
    if (c.hdr_got < sizeof c.in) {
      c.hdr_got += static_cast<size_t>(k);
      if (c.hdr_got < sizeof c.in) continue;
      begin_message(c, pe);
    } else {
      c.got += static_cast<size_t>(k);
    }
    if (c.got == c.in.bytes) end_message(c);
  }
}

// Writes go kWriteChunk bytes at a time: between namespace hosts, one sendmsg() of many megabytes moved a
// stream of 64 MiB puts and a 64 MiB broadcast slower than 512 KiB at a time, which came close to iperf3's
// one stream (docs/journal.md, "Messages between hosts").
constexpr size_t kWriteChunk = 512 * 1024;

}  // namespace

ssize_t send_chunk(int fd, const iovec* iov, size_t n) {
  iovec lim[2];
  size_t m = 0, room = kWriteChunk;
  for (size_t i = 0; i < n && i < 2 && room > 0; ++i, ++m) {
    lim[m] = iov[i];
    lim[m].iov_len = std::min(iov[i].iov_len, room);
    room -= lim[m].iov_len;
  }
  msghdr mh{};
  mh.msg_iov = lim;
  mh.msg_iovlen = m;
  return ::sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

namespace {

// Writes queued sends until the socket is full or the queue empty.
void write_some(Conn& c, int pe) {
  while (!c.sends.empty()) {
    Request& r = *c.sends.front();
    iovec iov[2];
    int n = 0;
    if (r.sent < sizeof r.h) iov[n++] = {reinterpret_cast<char*>(&r.h) + r.sent, sizeof r.h - r.sent};
    const size_t body_done = r.sent > sizeof r.h ? r.sent - sizeof r.h : 0;
    if (r.h.bytes > body_done) iov[n++] = {const_cast<char*>(r.out) + body_done, r.h.bytes - body_done};
    const ssize_t k = send_chunk(c.fd, iov, static_cast<size_t>(n));
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return lose(c, "the connection for messages", pe, std::strerror(errno));
    }
    r.sent += static_cast<size_t>(k);
    if (r.sent == sizeof r.h + r.h.bytes) {
      c.sends.pop_front();
      if (r.orphan) delete &r;
      else r.done = true;
    }
  }
}

// The connections and what to wait for on each: reading always, writing while sends are queued.
void set_events() {
  for (size_t i = 0; i < s.fds.size(); ++i) {
    const Conn& c = s.conns[static_cast<size_t>(s.fd_pe[i])];
    s.fds[i].events = static_cast<short>((c.held ? 0 : POLLIN) | (c.sends.empty() ? 0 : POLLOUT));
    s.fds[i].revents = 0;
  }
}

// One round over every connection, without blocking. Called with s.m held.
void progress_locked() {
  set_events();
  if (::poll(s.fds.data(), s.fds.size(), 0) <= 0) return;
  for (size_t i = 0; i < s.fds.size(); ++i) {
    if (!s.fds[i].revents) continue;
    const int pe = s.fd_pe[i];
    Conn& c = s.conns[static_cast<size_t>(pe)];
    if (s.fds[i].revents & (POLLERR | POLLHUP)) release_hold(c);  // a broken connection is found by reading
    if (s.fds[i].revents & (POLLIN | POLLERR | POLLHUP)) read_some(c, pe);
    if (s.fds[i].revents & POLLOUT) write_some(c, pe);
  }
}

// Resilient mode: a wait stops before its request is done (its call failed). What the connection still
// needs of the request stays with the transport; the caller's buffer is never touched again.
void detach(Request* r, int pe) {
  Conn& c = s.conns[static_cast<size_t>(pe)];
  if (r->done) {
    delete r;
  } else if (r->send) {
    // Not started: it goes. Partly written: the rest is sent from a copy, so that the peer's framing holds.
    auto it = std::find(c.sends.begin(), c.sends.end(), r);
    if (it != c.sends.end() && r->sent == 0) {
      c.sends.erase(it);
      delete r;
    } else {
      const size_t body_done = r->sent > sizeof r->h ? r->sent - sizeof r->h : 0;
      r->own.reset(new char[r->h.bytes]);
      if (r->h.bytes > body_done) memcopy(r->own.get() + body_done, r->out + body_done, r->h.bytes - body_done);
      r->out = r->own.get();
      r->orphan = true;
    }
  } else if (c.into_req == r) {
    // Being read: the rest of its bytes go to a buffer of its own, dropped when they are in.
    r->own.reset(new char[r->cap]);
    r->buf = r->own.get();
    r->orphan = true;
  } else {
    c.posted.remove(r);
    delete r;
  }
}

}  // namespace

void lose(Conn& c, const char* which, int pe, const std::string& why) {
  if (!peer_loss_tolerated()) broken(which, pe, why);
  if (c.dead) return;
  log::debug("{} to {} broke ({}): dropped (resilient mode)", which, peer_name(pe), why);
  for (size_t i = 0; i < s.fds.size(); ++i)
    if (s.fd_pe[i] == pe) s.fds[i].fd = -1;  // poll() skips it
  ::close(c.fd);
  c.fd = -1;
  c.dead = true;
  c.held = false;
  for (Request* r : c.sends) {
    if (r->orphan) delete r;
    else r->done = true;  // discarded: the peer is gone
  }
  c.sends.clear();
}

void drop_requests() {
  for (Conn& c : s.conns) {
    for (Request* r : c.posted) delete r;
    for (Request* r : c.sends) delete r;
    if (c.into_req && c.into_req->orphan) delete c.into_req;  // resilient mode: let go of, and never finished
  }
}

void* send(int pe, uint64_t tag, const void* buf, size_t bytes) {
  auto* r = new Request;
  r->send = true;
  r->h = Header{tag, bytes};
  r->out = static_cast<const char*>(buf);
  std::lock_guard lk(s.m);
  Conn& c = s.conns[static_cast<size_t>(pe)];
  if (c.dead) {  // resilient mode: the peer is gone, and so is the message
    delete r;
    return nullptr;
  }
  c.sends.push_back(r);
  // Posting moves its connection on, both ways and without blocking: a caller that posts between pieces
  // of work (a fold sent on in pieces, coll/hier.cc) keeps the transfer going without a wait.
  write_some(c, pe);
  read_some(c, pe);
  if (!r->done) return r;
  delete r;
  return nullptr;
}

void* recv(int pe, uint64_t tag, void* buf, size_t bytes) {
  std::lock_guard lk(s.m);
  Conn& c = s.conns[static_cast<size_t>(pe)];
  for (auto it = c.unexpected.begin(); it != c.unexpected.end(); ++it) {
    if (it->tag != tag) continue;
    if (it->bytes > bytes)
      log::fatal("a message of {} bytes from {} for a receive of {} bytes (tag {:#x}): the PEs called different "
                 "collectives or counts",
                 it->bytes, peer_name(pe), bytes, tag);
    if (it->complete) {
      if (it->bytes) memcopy(buf, it->data.get(), it->bytes);
      c.unexpected.erase(it);
      return nullptr;
    }
    // Being read now, or held (only the last can be incomplete): what has arrived moves to the receive's
    // buffer, and the rest goes straight there.
    if (c.into_unx != &*it)
      log::fatal("messages between hosts: an unfinished message from {} is not the one being read", peer_name(pe));
    auto* r = new Request;
    r->tag = tag;
    r->buf = static_cast<char*>(buf);
    r->cap = bytes;
    if (c.got) memcopy(buf, it->data.get(), c.got);
    c.held = false;
    c.into_unx = nullptr;
    c.into_req = r;
    c.unexpected.erase(it);
    return r;
  }
  auto* r = new Request;
  r->tag = tag;
  r->buf = static_cast<char*>(buf);
  r->cap = bytes;
  c.posted.push_back(r);
  return r;
}

void abandon(void* request, int pe) {
  std::lock_guard lk(s.m);
  detach(static_cast<Request*>(request), pe);
}

void wait(void* request, const char* what, int pe, size_t bytes) {
  auto* r = static_cast<Request*>(request);
  const sync::WaitContext& ctx = sync::wait_context();
  // Spin, then yield, then block (sync/wait.h's policy), with a spin of its own: a message between hosts
  // lands within microseconds once its peer sends it, while waking from poll() can take a hundred of them
  // on a VM, and once one side has slept the other waits past a short spin too, and sleeps in turn.
  const uint64_t start = now_ns(), deadline = start + sync::timeout_ns();
  const bool yield_now = sync::cpus_shared() || s.waits_yield.load(std::memory_order_relaxed);
  const uint64_t spin_end = start + (yield_now ? 0 : s.spin_ns);
  const uint64_t yield_end = spin_end + sync::yield_ns();
  std::vector<pollfd> fds;
  for (;;) {
    const uint64_t now = now_ns();
    std::unique_lock lk(s.m);  // released every round: other threads post while this one waits
    // A held message ahead of the one awaited, or a wait about to block: the held bytes are read after all
    // (before this round's poll, which then watches their connection again).
    if (!r->send && !r->done) release_hold(s.conns[static_cast<size_t>(pe)]);
    if (now >= yield_end)
      for (Conn& c : s.conns) release_hold(c);
    progress_locked();
    if (r->done) break;
    const bool peer_dead = s.conns[static_cast<size_t>(pe)].dead;
    if (now >= yield_end) {
      if (!s.polling) {
        // This thread blocks in poll() for every waiter of the PE, without the lock (others post
        // meanwhile); the rest sleep until it has been woken, then progress themselves.
        s.polling = true;
        fds = s.fds;  // progress_locked() filled in what to wait for
        lk.unlock();
        (void)::poll(fds.data(), fds.size(), 10);
        lk.lock();
        s.polling = false;
        s.polled.notify_all();
      } else {
        s.polled.wait_for(lk, std::chrono::milliseconds(10));
      }
    }
    lk.unlock();
    if (now >= spin_end && now < yield_end) sync::sched_yield_wrapper();
    if (ctx.abort_word)
      if (const uint32_t a = ctx.abort_word->load(std::memory_order_relaxed)) sync::exit_for_abort(a);
    if (now >= spin_end) [[unlikely]] {
      // Resilient mode: the call stops when its watch trips (a member failed, or its communicator was
      // revoked); a receive from a peer whose connection broke can only end that way.
      if (sync::FailWatch* w = sync::t_fail_watch; w && w->tripped()) {
        {
          std::lock_guard g(s.m);
          detach(r, pe);
        }
        w->raise();
      }
      if (peer_dead && !sync::t_fail_watch)
        broken("the connection for messages", pe, "it closed the connection");
    }
    if (now >= deadline)
      sync::deadline_expired(fmt::format("{} of {} bytes {} {} (messages between hosts over TCP)", what, bytes,
                                         r->send ? "to" : "from", peer_name(pe)),
                             static_cast<double>(now - start) / 1e9);
  }
  delete r;
}

}  // namespace tessera::transport::tcp

namespace tessera::transport {
void set_message_waits_yield(bool on) { tcp::s.waits_yield.store(on, std::memory_order_relaxed); }
}  // namespace tessera::transport
