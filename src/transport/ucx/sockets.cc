// Messages between hosts over TCP connections of our own (TESSERA_NET_MESSAGES=tcp, the default): the
// collectives' send/recv of the UCX transport record (transport.h) when the job spans hosts, and puts of
// kAmMin bytes and up. Smaller puts, gets, atomics, signals and acknowledgments stay on UCX (messages.cc).
//
// Why not UCX's tagged messages: over TCP (the hosts this project meets first), UCX 1.13's tag protocols
// moved well under the link's rate in its own ucx_perftest between two namespace hosts, while one plain
// socket per pair of PEs, written and read without intermediate copies, came much closer to it
// (docs/journal.md, "Messages between hosts"; docs/hosts.md).
//
// Connections: two per pair of PEs on different hosts, made at open(): one for the collectives' messages,
// one for large puts. Each PE listens on an ephemeral port of every IPv4 address it has (loopback last)
// and publishes them with a fresh random key through
// the bootstrap's allgather. The lower PE connects; the higher accepts and challenges it with the TCP
// rendezvous's handshake (bootstrap/tcp_wire.h, keyed with the acceptor's published key), and proves
// itself back: a connection that reaches the wrong process (an address both hosts have, such as a
// container bridge's) is refused and the next address is tried, and nobody outside the job can join.
// Deadlock-free: a PE first connects to the PEs above it (each connection's handshake needs that PE to be
// accepting), then accepts from those below; the highest PE accepts at once, so by induction downwards
// every PE gets through. The connector makes the messages' connection first, then the puts', each
// handshake done before the next connect, so the acceptor knows which is which by their order.
//
// Large puts (sock_put): the header (AmPutHeader) and the bytes, written by the putting thread straight
// from its buffer (one put at a time per connection), and read by the target's progress thread, which
// watches these connections beside the UCX worker's event fd, straight into the destination: no copy but
// the kernel's on either side, where UCX's rendezvous over TCP copies through bounce buffers and stayed
// below iperf3's rate (docs/journal.md, "Messages between hosts"). A put goes only once the puts it must
// follow are acknowledged (messages.cc), so it lands as soon as it is read; the target then counts and
// acknowledges it like the others. Without a progress thread (TESSERA_UCX_PROGRESS_THREAD=off) nobody
// would read these connections while the target computes, so puts stay on UCX.
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
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "base/memcopy.h"
#include "bootstrap/protocol.h"
#include "bootstrap/tcp_socket.h"
#include "bootstrap/tcp_wire.h"
#include "sync/wait.h"
#include "transport/ucx/ucx.h"
#include "transport/ucx/wire.h"

namespace tessera::transport::ucx {
namespace {

namespace tcp = bootstrap::tcp;

const config::Var<std::string> kNetMessages{
    "TESSERA_NET_MESSAGES", "tcp",
    "How collectives' messages travel between hosts: tcp (connections of Tessera's own, two per pair of PEs) "
    "or ucx (UCX's tagged messages); tcp also carries puts of 64 KiB and up (with the progress thread on)"};

const config::Var<int64_t> kNetSpin{
    "TESSERA_NET_SPIN_NS", 1'000'000,
    "Nanoseconds a wait for a message from another host polls its connections before it yields the CPU "
    "(when every PE of the host has a CPU; else it yields at once)"};

const config::Var<std::string> kNetCongestion{
    "TESSERA_NET_CONGESTION", "cubic",
    "TCP congestion control of Tessera's connections between hosts (messages, large puts): cubic, another the "
    "kernel offers (net.ipv4.tcp_available_congestion_control), or system (the kernel's default)"};

constexpr int kMaxAddrs = 4;
constexpr size_t kKeyChars = 64;

// What each PE publishes at open().
struct Record {
  uint32_t addrs[kMaxAddrs];  // IPv4, network order; 0 = none
  uint16_t port;              // network order
  uint16_t pad;
  char key[kKeyChars];        // hex; the acceptor's handshake secret
};

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
};

// A message read before its receive was posted. `data` is allocated when its bytes are read (uninitialised:
// they are all written), not while the message is held.
struct Unexpected {
  uint64_t tag;
  size_t bytes = 0;
  std::unique_ptr<char[]> data;
  bool complete = false;
};

// Unmatched messages of at least this many bytes are held in their socket (see the top of the file).
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
};

// A connection for large puts.
struct PutConn {
  int fd = -1;
  int pe = -1;
  std::mutex send_m;  // writers: one put at a time
  // Reading (the progress thread only): the header (hdr_got of its bytes so far), then `got` bytes of data.
  AmPutHeader in{};
  size_t hdr_got = 0;
  size_t got = 0;
};

std::atomic<bool> g_waits_yield{false};  // set_message_waits_yield

struct Sockets {
  bool on = false;
  uint64_t spin_ns = 0;  // TESSERA_NET_SPIN_NS
  std::mutex m;
  bool polling = false;              // a waiter blocks in poll() for all (sock_wait)
  std::condition_variable polled;    // ... and wakes the others when it returns
  std::vector<Conn> conns;  // per PE; fd < 0 for PEs on this host
  std::vector<pollfd> fds;
  std::vector<int> fd_pe;
  std::vector<std::unique_ptr<PutConn>> puts;  // per PE; null for PEs on this host
  bool puts_on = false;                         // set_socket_puts
} s;

// Ends the job for a connection that broke (its peer died, or its host went away).
[[noreturn]] void broken(int pe, const std::string& why) {
  peer_failed("the connection for messages", pe, why);
}

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
    log::fatal("a message of {} bytes from PE {} (host {}) for a receive of {} bytes (tag {:#x}): the PEs called "
               "different collectives or counts",
               c.in.bytes, pe, g.peers[static_cast<size_t>(pe)].host, c.into_req->cap, c.in.tag);
  if (!c.into_req) {
    c.unexpected.push_back(Unexpected{.tag = c.in.tag, .bytes = c.in.bytes, .data = nullptr});
    c.into_unx = &c.unexpected.back();
    if (c.in.bytes >= kHoldMin) c.held = true;
    else if (c.in.bytes) c.into_unx->data.reset(new char[c.in.bytes]);
  }
}

void end_message(Conn& c) {
  if (c.into_req) c.into_req->done = true;
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
    if (k == 0) broken(pe, "it closed the connection");
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      broken(pe, std::strerror(errno));
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

// sendmsg() of at most kWriteChunk bytes of iov[0, n) (n <= 2), without blocking.
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
      broken(pe, std::strerror(errno));
    }
    r.sent += static_cast<size_t>(k);
    if (r.sent == sizeof r.h + r.h.bytes) {
      r.done = true;
      c.sends.pop_front();
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

// The IPv4 addresses of this host's interfaces that are up, loopback last.
std::vector<uint32_t> my_addresses() {
  std::vector<uint32_t> out, loop;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      const uint32_t a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
      (i->ifa_flags & IFF_LOOPBACK ? loop : out).push_back(a);
    }
    freeifaddrs(ifs);
  }
  out.insert(out.end(), loop.begin(), loop.end());
  if (out.size() > kMaxAddrs) out.erase(out.begin() + kMaxAddrs - 1, out.end() - 1);  // keep loopback last
  return out;
}


// A line of a file under /proc/sys (empty if it cannot be read).
std::string sysctl_line(const char* path) {
  std::string v;
  if (FILE* f = std::fopen(path, "r")) {
    char buf[256] = {};
    if (std::fgets(buf, sizeof buf, f)) v = buf;
    std::fclose(f);
  }
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v;
}

// Gives a socket, before it connects or listens, the congestion control TESSERA_NET_CONGESTION names. Cubic
// by default, whatever the host's default, because the host's may pace: BBR (some distributions' and clouds'
// default) spreads each burst over time at the rate it has estimated, and collective traffic is bursts
// separated by computation, so the estimate is low when a burst starts (large allreduces between namespace
// hosts slowed down, small ones got a long tail: docs/journal.md, "Across hosts"). Set after connect() it
// would come too late: the kernel leaves BBR's pacing on. Each end sets its own sending side. A name the
// kernel refuses is an error when the user gave it; cubic missing is not (the kernel's default stays, said
// once at TESSERA_LOG=2).
Status set_congestion(int fd) {
  const std::string& want = kNetCongestion.get();
  if (want == "system") return Status::ok();
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, want.data(), static_cast<socklen_t>(want.size())) == 0)
    return Status::ok();
  const int err = errno;
  const std::string available = sysctl_line("/proc/sys/net/ipv4/tcp_available_congestion_control");
  const std::string allowed = sysctl_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
  if (kNetCongestion.is_set())
    return make_status(Code::kInvalidArgument, "TESSERA_NET_CONGESTION={:?}: the kernel refuses it ({}); available: "
                       "{} (without CAP_NET_ADMIN: {}), or system for the kernel's default",
                       want, std::strerror(err), available.empty() ? "?" : available, allowed.empty() ? "?" : allowed);
  static std::once_flag once;
  std::call_once(once, [&] {
    log::info("messages between hosts: the kernel refuses congestion control {} ({}); its default stays "
              "(available: {})", want, std::strerror(err), available.empty() ? "?" : available);
  });
  return Status::ok();
}

// The congestion control a connection has (read back from the kernel).
std::string congestion_of(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "?";
  return std::string(name, ::strnlen(name, len));
}

// The connecting side: tries the peer's addresses in order until one answers as that PE.
Result<int> connect_to(int me, int pe, const Record& r, uint64_t deadline) {
  std::string tried;
  for (uint32_t a : r.addrs) {
    if (!a) continue;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = a;
    to.sin_port = r.port;
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &to.sin_addr, text, sizeof text);
    const std::string where = fmt::format("{}:{}", text, ntohs(r.port));
    // Everything listens before the addresses are published: a refusal means a wrong address, not "too
    // early", so each address gets a short try.
    Result<int> fd = tcp::connect_until(to, where, me, std::min(deadline, now_ns() + 2'000'000'000), set_congestion);
    if (!fd.is_ok()) {
      if (fd.status().code() == Code::kInvalidArgument) return fd.status();
      tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", where, fd.status().message());
      continue;
    }
    tcp::tune(fd.value(), deadline - std::min(deadline, now_ns()));
    // Exact reads (recv_msg), not a frame reader's greedy ones: the acceptor may send its first messages
    // right behind its proof, and they belong to the connection's data.
    // A process that accepts but never answers is not the PE: 10 s, then the next address.
    const uint64_t left = std::min<uint64_t>(deadline - std::min(deadline, now_ns()), 10'000'000'000);
    const int wait_ms = static_cast<int>(left / 1'000'000 + 1);
    const std::string key(r.key, kKeyChars);
    bootstrap::MsgType type{};
    std::vector<char> payload;
    Status st = bootstrap::recv_msg(fd.value(), &type, &payload, wait_ms, where.c_str());
    if (st.is_ok() && type == bootstrap::MsgType::kChallenge && payload.size() == tcp::kNonceBytes) {
      tcp::Nonce server{};
      std::memcpy(server.data(), payload.data(), tcp::kNonceBytes);  // copy-ok: nonce
      tcp::Auth auth{static_cast<uint32_t>(me), static_cast<uint32_t>(g.n_pes), tcp::fresh_nonce(), {}};
      auth.mac = tcp::client_mac(key, server, auth.client, auth.rank);
      st = tcp::send_frame(fd.value(), bootstrap::MsgType::kAuth, tcp::encode_auth(auth));
      if (st.is_ok()) st = bootstrap::recv_msg(fd.value(), &type, &payload, wait_ms, where.c_str());
      tcp::Mac proof{};
      if (st.is_ok() && type == bootstrap::MsgType::kProof && payload.size() == tcp::kMacBytes) {
        std::memcpy(proof.data(), payload.data(), tcp::kMacBytes);  // copy-ok: MAC
        if (tcp::mac_equal(proof, tcp::server_mac(key, server, auth.client, auth.rank))) return fd.value();
      }
    }
    ::close(fd.value());
    tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", where,
                         st.is_ok() ? "answered, but not as that PE" : st.message());
  }
  return make_status(Code::kSystem, "messages between hosts: no address of {} answered as it ({})", peer_name(pe),
                     tried.empty() ? "it published none" : tried);
}

// The accepting side: the next connection that proves it is a lower PE on another host with connections
// still to come (pending counts them); others are refused (and logged) and the wait goes on.
// Sets *from to the PE.
Result<int> accept_one(int listener, int me, const std::string& key, std::vector<char>& pending, uint64_t deadline,
                       int* from) {
  for (;;) {
    const uint64_t now = now_ns();
    if (now >= deadline)
      return make_status(Code::kTimeout, "messages between hosts: PE {} waited for connections from PEs on other "
                         "hosts until the deadline (TESSERA_TIMEOUT)", me);
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline - now) / 1'000'000 + 1, 1000))) <= 0) continue;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const std::string who = tcp::peer_of(fd);
    tcp::tune(fd, deadline - std::min(deadline, now_ns()));
    const tcp::Nonce server = tcp::fresh_nonce();
    // A frame reader is safe here: the connector sends nothing behind its answer until it has our proof.
    tcp::FrameReader reader(tcp::kHandshakeLimit);
    tcp::Frame f;
    std::string refusal;
    if (tcp::send_frame(fd, bootstrap::MsgType::kChallenge, server.data(), server.size()).is_ok() &&
        tcp::read_frame(fd, reader, &f, std::min(deadline, now_ns() + 10'000'000'000), who).is_ok()) {
      std::optional<tcp::Auth> a = f.type == bootstrap::MsgType::kAuth ? tcp::decode_auth(f.payload) : std::nullopt;
      if (!a || !tcp::mac_equal(a->mac, tcp::client_mac(key, server, a->client, a->rank))) {
        refusal = "it does not know this PE's key";
      } else if (a->rank >= static_cast<uint32_t>(me) || pending[a->rank] == 0) {
        refusal = fmt::format("PE {} is not a PE on another host that this PE still waits for", a->rank);
      } else {
        const tcp::Mac proof = tcp::server_mac(key, server, a->client, a->rank);
        if (tcp::send_frame(fd, bootstrap::MsgType::kProof, proof.data(), proof.size()).is_ok()) {
          --pending[a->rank];
          *from = static_cast<int>(a->rank);
          return fd;
        }
        refusal = "the proof could not be sent";
      }
    } else {
      refusal = "no answer to the challenge";
    }
    log::warn("messages between hosts: refused a connection from {}: {}", who, refusal);
    ::close(fd);
  }
}

}  // namespace

bool sockets_on() { return s.on; }

Status open_sockets(const JobView& job) {
  if (config::one_of(kNetMessages, {"tcp", "ucx"}) != 0) return Status::ok();
  const int me = job.my_pe;
  const uint64_t deadline = now_ns() + sync::timeout_ns();
  s.spin_ns = static_cast<uint64_t>(std::max<int64_t>(0, kNetSpin.get()));
  Result<int> listener = tcp::listen_on(tcp::Address{"0.0.0.0", 0, ""});
  if (!listener.is_ok()) return listener.status();
  // Accepted connections inherit the listener's congestion control, from their first byte.
  if (Status cc = set_congestion(listener.value()); !cc.is_ok()) {
    ::close(listener.value());
    return cc;
  }
  Result<uint16_t> port = tcp::local_port(listener.value());
  if (!port.is_ok()) {
    ::close(listener.value());
    return port.status();
  }
  Record mine{};
  const std::vector<uint32_t> addrs = my_addresses();
  for (size_t i = 0; i < addrs.size(); ++i) mine.addrs[i] = addrs[i];
  mine.port = htons(port.value());
  const std::string key = bootstrap::random_hex(kKeyChars);
  std::memcpy(mine.key, key.data(), kKeyChars);  // copy-ok: connection key
  std::vector<Record> all(static_cast<size_t>(job.n_pes));
  Status st = job.allgather(&mine, all.data(), sizeof mine);

  s.conns = std::vector<Conn>(static_cast<size_t>(job.n_pes));
  s.puts.clear();
  s.puts.resize(static_cast<size_t>(job.n_pes));
  // Each PE's messages' connection, then its puts' (the order the connector makes them in).
  auto take = [](int pe, int fd) {
    Conn& c = s.conns[static_cast<size_t>(pe)];
    if (c.fd < 0) {
      c.fd = fd;
      return;
    }
    s.puts[static_cast<size_t>(pe)] = std::make_unique<PutConn>();
    s.puts[static_cast<size_t>(pe)]->fd = fd;
    s.puts[static_cast<size_t>(pe)]->pe = pe;
  };
  std::vector<char> pending(static_cast<size_t>(job.n_pes), 0);
  int to_accept = 0;
  for (int pe = 0; st.is_ok() && pe < job.n_pes; ++pe) {
    if (job.hosts[pe] == job.hosts[me]) continue;
    if (pe > me) {
      for (int k = 0; k < 2 && st.is_ok(); ++k) {
        Result<int> fd = connect_to(me, pe, all[static_cast<size_t>(pe)], deadline);
        if (!fd.is_ok()) st = fd.status();
        else take(pe, fd.value());
      }
    } else {
      pending[static_cast<size_t>(pe)] = 2;
      to_accept += 2;
    }
  }
  for (; st.is_ok() && to_accept > 0; --to_accept) {
    int from = -1;
    Result<int> got = accept_one(listener.value(), me, key, pending, deadline, &from);
    if (!got.is_ok()) st = got.status();
    else take(from, got.value());
  }
  ::close(listener.value());
  for (int pe = 0; pe < job.n_pes; ++pe) {
    const int fd = s.conns[static_cast<size_t>(pe)].fd;
    std::unique_ptr<PutConn>& pc = s.puts[static_cast<size_t>(pe)];
    if (!st.is_ok()) {
      if (fd >= 0) ::close(fd);
      s.conns[static_cast<size_t>(pe)].fd = -1;
      if (pc) ::close(pc->fd);
      pc.reset();
      continue;
    }
    const int one = 1;
    if (pc) {
      ::fcntl(pc->fd, F_SETFL, ::fcntl(pc->fd, F_GETFL) | O_NONBLOCK);
      ::setsockopt(pc->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (fd < 0) continue;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s.fds.push_back(pollfd{fd, POLLIN, 0});
    s.fd_pe.push_back(pe);
  }
  s.on = st.is_ok();
  if (s.on && !s.fds.empty()) {
    // What the kernel gave them, read back (PE 0 connects; a higher PE's first connection was accepted).
    const std::string cc = congestion_of(s.fds.front().fd);
    if (me == 0) log::info("messages between hosts: TCP connections to {} PEs, congestion control {} "
                           "(TESSERA_NET_CONGESTION)", s.fds.size(), cc);
    else log::debug("messages between hosts: congestion control {} on the connection with PE {}", cc, s.fd_pe.front());
  }
  return st;
}

void close_sockets() {
  std::lock_guard lk(s.m);
  for (std::unique_ptr<PutConn>& pc : s.puts)
    if (pc) ::close(pc->fd);
  s.puts.clear();
  s.puts_on = false;
  for (Conn& c : s.conns) {
    if (c.fd >= 0) ::close(c.fd);
    for (Request* r : c.posted) delete r;
    for (Request* r : c.sends) delete r;
  }
  s.conns.clear();
  s.fds.clear();
  s.fd_pe.clear();
  s.on = false;
}

void* sock_send(int pe, uint64_t tag, const void* buf, size_t bytes) {
  auto* r = new Request;
  r->send = true;
  r->h = Header{tag, bytes};
  r->out = static_cast<const char*>(buf);
  std::lock_guard lk(s.m);
  Conn& c = s.conns[static_cast<size_t>(pe)];
  c.sends.push_back(r);
  // Posting moves its connection on, both ways and without blocking: a caller that posts between pieces
  // of work (a fold sent on in pieces, coll/hier.cc) keeps the transfer going without a wait.
  write_some(c, pe);
  read_some(c, pe);
  if (!r->done) return r;
  delete r;
  return nullptr;
}

void* sock_recv(int pe, uint64_t tag, void* buf, size_t bytes) {
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

void sock_wait(void* request, const char* what, int pe, size_t bytes) {
  auto* r = static_cast<Request*>(request);
  const sync::WaitContext& ctx = sync::wait_context();
  // Spin, then yield, then block (sync/wait.h's policy), with a spin of its own: a message between hosts
  // lands within microseconds once its peer sends it, while waking from poll() can take a hundred of them
  // on a VM, and once one side has slept the other waits past a short spin too, and sleeps in turn.
  const uint64_t start = now_ns(), deadline = start + sync::timeout_ns();
  const bool yield_now = sync::cpus_shared() || g_waits_yield.load(std::memory_order_relaxed);
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
    if (now >= deadline)
      sync::deadline_expired(fmt::format("{} of {} bytes {} {} (messages between hosts over TCP)", what, bytes,
                                         r->send ? "to" : "from", peer_name(pe)),
                             static_cast<double>(now - start) / 1e9);
  }
  delete r;
}

void set_socket_puts(bool on) { s.puts_on = on && s.on; }
bool sock_puts_on() { return s.puts_on; }

void sock_put(int pe, const AmPutHeader& h, const void* src) {
  PutConn& c = *s.puts[static_cast<size_t>(pe)];
  const sync::WaitContext& ctx = sync::wait_context();
  const uint64_t start = now_ns(), deadline = start + sync::timeout_ns();
  std::lock_guard lk(c.send_m);
  AmPutHeader head = h;
  iovec iov[2] = {{&head, sizeof head}, {const_cast<void*>(src), h.bytes}};
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
    if (errno != EAGAIN && errno != EWOULDBLOCK) peer_failed("the connection for puts", pe, std::strerror(errno));
    // The socket is full: the target's progress thread reads as it can; wait for room in slices.
    pollfd p{c.fd, POLLOUT, 0};
    (void)::poll(&p, 1, 10);
    if (ctx.abort_word)
      if (const uint32_t a = ctx.abort_word->load(std::memory_order_relaxed)) sync::exit_for_abort(a);
    if (const uint64_t now = now_ns(); now >= deadline)
      sync::deadline_expired(fmt::format("a put of {} bytes to {} (room on its connection)", h.bytes, peer_name(pe)),
                             static_cast<double>(now - start) / 1e9);
  }
}

std::vector<std::pair<int, int>> sock_put_fds() {
  std::vector<std::pair<int, int>> out;
  for (const std::unique_ptr<PutConn>& pc : s.puts)
    if (pc) out.emplace_back(pc->fd, pc->pe);
  return out;
}

bool sock_put_readable(int pe) {
  PutConn* c = s.puts[static_cast<size_t>(pe)].get();
  const int fd = c->fd;
  for (;;) {
    const bool in_header = c->hdr_got < sizeof c->in;
    const ssize_t k = in_header ? ::recv(fd, reinterpret_cast<char*>(&c->in) + c->hdr_got,
                                         sizeof c->in - c->hdr_got, MSG_DONTWAIT)
                                : ::recv(fd, local_address(c->in.off) + c->got, c->in.bytes - c->got, MSG_DONTWAIT);
    if (k == 0) {
      // Peers close these connections after the out-of-band barrier of close(), which this PE reaches
      // only with closing set; any other end is a failure.
      if (c->hdr_got == 0 && g.closing.load()) return false;
      peer_failed("the connection for puts", c->pe,
                  c->hdr_got ? "it closed the connection in the middle of a put" : "it closed the connection");
    }
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      peer_failed("the connection for puts", c->pe, std::strerror(errno));
    }
    if (in_header) {
      c->hdr_got += static_cast<size_t>(k);
      if (c->hdr_got < sizeof c->in) continue;
      const AmPutHeader& h = c->in;
      const std::string why = h.from != c->pe ? fmt::format("a put in the name of PE {}", h.from)
                                              : put_error(h.off, h.bytes, h.bytes, h.sig_op, h.sig_off,
                                                          Segments{g.heap_bytes, g.data_bytes});
      if (!why.empty())
        log::fatal("the connection for puts of {} carried {}; no Tessera PE sends that: nothing was written",
                   peer_name(c->pe), why);
      c->got = 0;
    } else {
      c->got += static_cast<size_t>(k);
    }
    if (c->got == c->in.bytes) {
      put_in_place(c->in);
      c->hdr_got = 0;
      c->got = 0;
    }
  }
}

}  // namespace tessera::transport::ucx

namespace tessera::transport {
void set_message_waits_yield(bool on) { ucx::g_waits_yield.store(on, std::memory_order_relaxed); }
}  // namespace tessera::transport
