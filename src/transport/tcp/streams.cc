// Frames over the stream connections (tcp.h): a fixed-size header and bulk bytes, written by the sending
// thread straight from its buffer (one frame at a time per connection), and read by the thread that
// watches these connections (the UCX progress thread, beside its worker's event fd) straight into the
// place the Sink names: no copy but the kernel's on either side, where UCX's rendezvous over TCP copies
// through bounce buffers and stayed below iperf3's rate (docs/journal.md, "Messages between hosts").
// Ordering, completion and acknowledgment are the writer's (ucx/rma.cc): this file moves bytes only.
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/cpu.h"
#include "base/log.h"
#include "sync/wait.h"
#include "transport/tcp/conns.h"

namespace tessera::transport::tcp {

void set_sink(const Sink& sink) {
  if (sink.header_bytes == 0 || sink.header_bytes > kMaxFrameHeader || !sink.place || !sink.landed)
    log::fatal("tcp streams: a sink needs a header of 1 to {} bytes and both callbacks (header of {} bytes)",
               kMaxFrameHeader, sink.header_bytes);
  s.sink = sink;
}

void set_streams_read(bool on) { s.streams_read.store(on && s.on && s.sink.place, std::memory_order_release); }
bool streams_on() { return s.streams_read.load(std::memory_order_acquire); }

void stream_write(int pe, const void* header, const void* src, size_t bytes) {
  StreamConn& c = *s.streams[static_cast<size_t>(pe)];
  const sync::WaitContext& ctx = sync::wait_context();
  const uint64_t start = now_ns(), deadline = start + sync::timeout_ns();
  std::lock_guard lk(c.send_m);
  iovec iov[2] = {{const_cast<void*>(header), s.sink.header_bytes}, {const_cast<void*>(src), bytes}};
  iovec* at = iov;
  size_t n = 2;
  while (n > 0) {
    while (n > 0 && at->iov_len == 0) ++at, --n;
    if (n == 0) break;
    const ssize_t k = send_chunk(c.fd, at, n);
    if (k >= 0) {
      for (size_t left = static_cast<size_t>(k); left > 0 && n > 0;) {
        const size_t step = std::min(left, at->iov_len);
        at->iov_base = static_cast<char*>(at->iov_base) + step;
        at->iov_len -= step;
        left -= step;
        if (at->iov_len == 0) ++at, --n;
      }
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      if (peer_loss_tolerated()) return;  // resilient mode: the peer is gone, and so is the transfer
      broken("the stream connection", pe, std::strerror(errno));
    }
    // The socket is full: the peer's watching thread reads as it can; wait for room in slices.
    pollfd p{c.fd, POLLOUT, 0};
    (void)::poll(&p, 1, 10);
    if (ctx.abort_word)
      if (const uint32_t a = ctx.abort_word->load(std::memory_order_relaxed)) sync::exit_for_abort(a);
    if (const uint64_t now = now_ns(); now >= deadline)
      sync::deadline_expired(fmt::format("a transfer of {} bytes to {} (room on its stream connection)", bytes,
                                         peer_name(pe)),
                             static_cast<double>(now - start) / 1e9);
  }
}

std::vector<std::pair<int, int>> stream_fds() {
  std::vector<std::pair<int, int>> out;
  for (const std::unique_ptr<StreamConn>& c : s.streams)
    if (c) out.emplace_back(c->fd, c->pe);
  return out;
}

bool stream_readable(int pe, bool closing) {
  StreamConn* c = s.streams[static_cast<size_t>(pe)].get();
  const size_t hb = s.sink.header_bytes;
  for (;;) {
    const bool in_header = c->hdr_got < hb;
    const ssize_t k = in_header ? ::recv(c->fd, c->in + c->hdr_got, hb - c->hdr_got, MSG_DONTWAIT)
                                : ::recv(c->fd, c->into + c->got, c->bytes - c->got, MSG_DONTWAIT);
    if (k == 0) {
      // Peers close these connections only once their close() has begun, which this PE's writer reports
      // as `closing`; any other end is a failure.
      if (c->hdr_got == 0 && closing) return false;
      if (peer_loss_tolerated()) return false;  // resilient mode: dropped; the watching thread stops reading it
      broken("the stream connection", c->pe,
             c->hdr_got ? "it closed the connection in the middle of a transfer" : "it closed the connection");
    }
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (peer_loss_tolerated()) return false;
      broken("the stream connection", c->pe, std::strerror(errno));
    }
    if (in_header) {
      c->hdr_got += static_cast<size_t>(k);
      if (c->hdr_got < hb) continue;
      c->into = s.sink.place(c->pe, c->in, &c->bytes);
      c->got = 0;
    } else {
      c->got += static_cast<size_t>(k);
    }
    if (c->got == c->bytes) {
      s.sink.landed(c->in);
      c->hdr_got = 0;
      c->got = 0;
    }
  }
}

}  // namespace tessera::transport::tcp
