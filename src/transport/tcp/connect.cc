// The TCP transport's connections (tcp.h): made at open(), closed at close().
//
// Connections: two per pair of PEs on different hosts, made at open(): one for the collectives' messages,
// one for streams (large transfers: tcp.h). Each PE listens on an ephemeral port of every IPv4 address it
// has (loopback last) and publishes them with a fresh random key through the bootstrap's allgather. The lower PE connects; the higher accepts and challenges it with the TCP
// rendezvous's handshake (bootstrap/tcp_wire.h, keyed with the acceptor's published key), and proves
// itself back: a connection that reaches the wrong process (an address both hosts have, such as a
// container bridge's) is refused and the next address is tried, and nobody outside the job can join.
// Deadlock-free: a PE first connects to the PEs above it (each connection's handshake needs that PE to be
// accepting), then accepts from those below; the highest PE accepts at once, so by induction downwards
// every PE gets through. The connector makes the messages' connection first, then the stream's, each
// handshake done before the next connect, so the acceptor knows which is which by their order.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "bootstrap/protocol.h"
#include "bootstrap/tcp_socket.h"
#include "bootstrap/tcp_wire.h"
#include "sync/wait.h"
#include "transport/tcp/conns.h"

namespace tessera::transport::tcp {

State s;

std::string peer_name(int pe) { return fmt::format("PE {} (host {})", pe, s.hosts[static_cast<size_t>(pe)]); }

[[noreturn]] void broken(const char* which, int pe, const std::string& why) {
  transport::peer_failed(which, peer_name(pe), why);
}

bool on() { return s.on; }

namespace {

namespace sock = bootstrap::tcp;

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
    Result<int> fd = sock::connect_until(to, where, me, std::min(deadline, now_ns() + 2'000'000'000), set_congestion);
    if (!fd.is_ok()) {
      if (fd.status().code() == Code::kInvalidArgument) return fd.status();
      tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", where, fd.status().message());
      continue;
    }
    sock::tune(fd.value(), deadline - std::min(deadline, now_ns()), sock::Reader::kInCalls);
    // Exact reads (recv_msg), not a frame reader's greedy ones: the acceptor may send its first messages
    // right behind its proof, and they belong to the connection's data.
    // A process that accepts but never answers is not the PE: 10 s, then the next address.
    const uint64_t left = std::min<uint64_t>(deadline - std::min(deadline, now_ns()), 10'000'000'000);
    const int wait_ms = static_cast<int>(left / 1'000'000 + 1);
    const std::string key(r.key, kKeyChars);
    bootstrap::MsgType type{};
    std::vector<char> payload;
    Status st = bootstrap::recv_msg(fd.value(), &type, &payload, wait_ms, where.c_str());
    if (st.is_ok() && type == bootstrap::MsgType::kChallenge && payload.size() == sock::kNonceBytes) {
      sock::Nonce server{};
      std::memcpy(server.data(), payload.data(), sock::kNonceBytes);  // copy-ok: nonce
      sock::Auth auth{static_cast<uint32_t>(me), static_cast<uint32_t>(s.n_pes), sock::fresh_nonce(), {}};
      auth.mac = sock::client_mac(key, server, auth.client, auth.rank);
      st = sock::send_frame(fd.value(), bootstrap::MsgType::kAuth, sock::encode_auth(auth));
      if (st.is_ok()) st = bootstrap::recv_msg(fd.value(), &type, &payload, wait_ms, where.c_str());
      sock::Mac proof{};
      if (st.is_ok() && type == bootstrap::MsgType::kProof && payload.size() == sock::kMacBytes) {
        std::memcpy(proof.data(), payload.data(), sock::kMacBytes);  // copy-ok: MAC
        if (sock::mac_equal(proof, sock::server_mac(key, server, auth.client, auth.rank))) return fd.value();
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
    const std::string who = sock::peer_of(fd);
    sock::tune(fd, deadline - std::min(deadline, now_ns()), sock::Reader::kInCalls);
    const sock::Nonce server = sock::fresh_nonce();
    // A frame reader is safe here: the connector sends nothing behind its answer until it has our proof.
    sock::FrameReader reader(sock::kHandshakeLimit);
    sock::Frame f;
    std::string refusal;
    if (sock::send_frame(fd, bootstrap::MsgType::kChallenge, server.data(), server.size()).is_ok() &&
        sock::read_frame(fd, reader, &f, std::min(deadline, now_ns() + 10'000'000'000), who).is_ok()) {
      std::optional<sock::Auth> a = f.type == bootstrap::MsgType::kAuth ? sock::decode_auth(f.payload) : std::nullopt;
      if (!a || !sock::mac_equal(a->mac, sock::client_mac(key, server, a->client, a->rank))) {
        refusal = "it does not know this PE's key";
      } else if (a->rank >= static_cast<uint32_t>(me) || pending[a->rank] == 0) {
        refusal = fmt::format("PE {} is not a PE on another host that this PE still waits for", a->rank);
      } else {
        const sock::Mac proof = sock::server_mac(key, server, a->client, a->rank);
        if (sock::send_frame(fd, bootstrap::MsgType::kProof, proof.data(), proof.size()).is_ok()) {
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

Status open(const JobView& job) {
  if (config::one_of(kNetMessages, {"tcp", "ucx"}) != 0 || !job.spans_hosts()) return Status::ok();
  const int me = job.my_pe;
  s.my_pe = me;
  s.n_pes = job.n_pes;
  s.hosts.assign(job.hosts, job.hosts + job.n_pes);
  const uint64_t deadline = now_ns() + sync::timeout_ns();
  s.spin_ns = static_cast<uint64_t>(std::max<int64_t>(0, kNetSpin.get()));
  Result<int> listener = sock::listen_on(sock::Address{"0.0.0.0", 0, ""});
  if (!listener.is_ok()) return listener.status();
  // Accepted connections inherit the listener's congestion control, from their first byte.
  if (Status cc = set_congestion(listener.value()); !cc.is_ok()) {
    ::close(listener.value());
    return cc;
  }
  Result<uint16_t> port = sock::local_port(listener.value());
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
  s.streams.clear();
  s.streams.resize(static_cast<size_t>(job.n_pes));
  // Each PE's messages' connection, then its stream's (the order the connector makes them in).
  auto take = [](int pe, int fd) {
    Conn& c = s.conns[static_cast<size_t>(pe)];
    if (c.fd < 0) {
      c.fd = fd;
      return;
    }
    s.streams[static_cast<size_t>(pe)] = std::make_unique<StreamConn>();
    s.streams[static_cast<size_t>(pe)]->fd = fd;
    s.streams[static_cast<size_t>(pe)]->pe = pe;
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
    std::unique_ptr<StreamConn>& pc = s.streams[static_cast<size_t>(pe)];
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

// After the records behind this one in the table have closed (transport.h: close() in reverse order): the
// UCX record has met every peer out of band and stopped the thread that reads the streams.
void close() {
  std::lock_guard lk(s.m);
  s.streams_read.store(false);
  for (std::unique_ptr<StreamConn>& c : s.streams)
    if (c) ::close(c->fd);
  s.streams.clear();
  drop_requests();
  for (Conn& c : s.conns)
    if (c.fd >= 0) ::close(c.fd);
  s.conns.clear();
  s.fds.clear();
  s.fd_pe.clear();
  s.on = false;
}

bool reach(const PeerInfo& me, const PeerInfo& peer) { return s.on && me.host != peer.host; }

Status no_map(PeerMemory* m) {
  return make_status(Code::kInternal, "tcp: PE {} asked for a memory path of a transport with messages only", m->pe);
}
void no_unmap(PeerMemory*) {}

}  // namespace

}  // namespace tessera::transport::tcp

namespace tessera::transport {
extern const Transport kTcp;
const Transport kTcp{
    .name = "tcp",
    .description = "other hosts, messages: TCP connections of Tessera's own (and the streams UCX's large puts use)",
    .caps = kMessages,
    .can_reach = tcp::reach,
    .open = tcp::open,
    .close = tcp::close,
    .map = tcp::no_map,
    .unmap = tcp::no_unmap,
    .send = tcp::send,
    .recv = tcp::recv,
    .wait = tcp::wait,
    .abandon = tcp::abandon,
};
}  // namespace tessera::transport
