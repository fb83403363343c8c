// Internals of the TCP transport shared by its files (tcp.h): the connections, their requests and the
// state of the PE's connections. Not a public header.
#pragma once
#include <poll.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/tcp/tcp.h"

namespace tessera::transport::tcp {

struct Header {
  uint64_t tag;
  uint64_t bytes;
};

struct Request {
  bool send = false;
  bool done = false;
  // send: the header, then the payload; `sent` counts bytes of both written so far.
  Header h{};
  const char* out = nullptr;
  size_t sent = 0;
  // recv
  uint64_t tag = 0;
  char* buf = nullptr;
  size_t cap = 0;
  // Left by a wait that stopped (resilient mode: its call failed): the transport finishes it into or from
  // `own` and frees it, so that the connection's framing stays whole and the caller's buffer is not touched.
  bool orphan = false;
  std::unique_ptr<char[]> own;
};

// A message read before its receive was posted. `data` is allocated when its bytes are read (uninitialised:
// they are all written), not while the message is held.
struct Unexpected {
  uint64_t tag;
  size_t bytes = 0;
  std::unique_ptr<char[]> data;
  bool complete = false;
};

// Unmatched messages of at least this many bytes are held in their socket (messages.cc).
constexpr size_t kHoldMin = size_t{64} << 10;

struct Conn {
  int fd = -1;
  std::deque<Request*> sends;        // front: being written
  std::list<Request*> posted;        // receives not yet matched, in posting order
  std::list<Unexpected> unexpected;  // in arrival order
  // The message being read: its header (hdr_got of 16 bytes so far), then its bytes into `into`.
  Header in{};
  size_t hdr_got = 0;
  size_t got = 0;
  Request* into_req = nullptr;
  Unexpected* into_unx = nullptr;
  bool held = false;  // into_unx's bytes wait in the socket for their receive (nothing more is read)
  bool dead = false;  // broke in resilient mode (transport.h: set_peer_loss_tolerated); fd closed
};

// A stream connection (streams.cc).
struct StreamConn {
  int fd = -1;
  int pe = -1;
  std::mutex send_m;  // writers: one frame at a time
  // Reading (the watching thread only): the header (hdr_got of its bytes so far), then `got` of `bytes`
  // into `into`.
  alignas(8) char in[kMaxFrameHeader] = {};
  size_t hdr_got = 0;
  size_t got = 0;
  size_t bytes = 0;
  char* into = nullptr;
};

struct State {
  bool on = false;
  int my_pe = 0;
  int n_pes = 0;
  std::vector<std::string> hosts;  // per PE, for messages naming a peer
  uint64_t spin_ns = 0;            // TESSERA_NET_SPIN_NS
  std::mutex m;
  bool polling = false;            // a waiter blocks in poll() for all (messages.cc, wait)
  std::condition_variable polled;  // ... and wakes the others when it returns
  std::vector<Conn> conns;         // per PE; fd < 0 for PEs on this host
  std::vector<pollfd> fds;
  std::vector<int> fd_pe;
  std::vector<std::unique_ptr<StreamConn>> streams;  // per PE; null for PEs on this host
  std::atomic<bool> streams_read{false};               // set_streams_read
  Sink sink;
  std::atomic<bool> waits_yield{false};  // set_message_waits_yield
};
extern State s;

// "PE 3 (host h2)".
std::string peer_name(int pe);
// A connection to `pe` broke (its peer died, or its host went away): ends the job (transport::peer_failed).
[[noreturn]] void broken(const char* which, int pe, const std::string& why);
// The same, where a broken connection may be dropped (transport.h: set_peer_loss_tolerated): returns, the
// connection `c` closed and marked dead, its queued sends discarded (messages.cc). Called with s.m held.
void lose(Conn& c, const char* which, int pe, const std::string& why);

// messages.cc: the record's two-sided messages (transport.h).
void* send(int pe, uint64_t tag, const void* buf, size_t bytes);
void* recv(int pe, uint64_t tag, void* buf, size_t bytes);
void wait(void* request, const char* what, int pe, size_t bytes);
void abandon(void* request, int pe);
// messages.cc: frees the requests of the connections (close()).
void drop_requests();
// sendmsg() of at most kWriteChunk bytes of iov[0, n) (n <= 2), without blocking (messages.cc).
ssize_t send_chunk(int fd, const iovec* iov, size_t n);

}  // namespace tessera::transport::tcp
