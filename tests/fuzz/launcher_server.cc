// tessera-run's bootstrap server (tools/run/server.h, protocol in bootstrap/protocol.h): what PEs send it
// over its Unix socket. Input: byte 0 gives the job's PEs (1..4), byte 1 the connections (1..4), then
// steps {connection byte, length byte, bytes}: those bytes are written to that connection, and the server
// reads as soon as a whole message (or a header announcing more than it takes: the hello's size before the
// hello, kMaxPayload after) has arrived, as its poll loop would have it read. At the end every connection is
// closed from the PE's side.
// The harness keeps its own model of the protocol and checks the server against it: a connection is kept
// after a kHello with the job's secret and a rank below the PEs that no open connection holds (a rank whose
// connection has closed may join again, as a PE does at a second shmem_init; it gets an empty kWelcome), and then only while it sends one kAllgather per round; once every rank has its
// contribution in, every one of them gets the rank-ordered concatenation. A first message kHealth of a
// hello's size with the job's secret gets one kHealthReport (this harness's server has no health view, so
// the report says so) and is closed. Anything else closes the connection, and nothing else is ever sent.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/protocol.h"
#include "fuzz.h"
#include "server.h"

namespace bs = tessera::bootstrap;

namespace {
const std::string kSecret = std::string(32, '0') + std::string(32, 'f');
static_assert(bs::kSecretChars == 64);

struct Peer {
  int fd = -1;         // the PE's end
  int server_fd = -1;  // the server's end, as client_fds() lists it
  std::string unread;  // written, not yet read by the server
  bool open = true;    // in the model: the server keeps the connection
  bool authed = false;
  int rank = -1;
  bool pending = false;
  std::string contribution;
  std::string expected;  // in the model: every byte the server has sent this PE
  std::string received;
};

std::string frame(bs::MsgType type, const std::string& payload) {
  const bs::MsgHeader h{static_cast<uint32_t>(type), static_cast<uint32_t>(payload.size())};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + payload;
}

bool server_has(const tessera::run::BootstrapServer& s, int fd) {
  for (int f : s.client_fds())
    if (f == fd) return true;
  return false;
}

void drain(Peer& p) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return;
    p.received.append(buf, static_cast<size_t>(n));
  }
}

// The model's answer to one whole message from `p`.
void model(std::vector<Peer>& peers, Peer& p, int n_pes, std::set<int>& claimed, uint32_t type,
           const std::string& payload) {
  if (!p.authed) {
    if (type == static_cast<uint32_t>(bs::MsgType::kHealth) && payload.size() == bs::kSecretChars + 4) {
      if (payload.compare(0, bs::kSecretChars, kSecret) == 0)
        p.expected += frame(bs::MsgType::kHealthReport, "tessera-run: no health view in this launcher\n");
      p.open = false;
      return;
    }
    uint32_t rank = 0;
    bool ok = type == static_cast<uint32_t>(bs::MsgType::kHello) && payload.size() == bs::kSecretChars + 4;
    if (ok) {
      std::memcpy(&rank, payload.data() + bs::kSecretChars, 4);
      ok = payload.compare(0, bs::kSecretChars, kSecret) == 0 && rank < static_cast<uint32_t>(n_pes) &&
           !claimed.count(static_cast<int>(rank));
    }
    if (!ok) {
      p.open = false;
      return;
    }
    p.authed = true;
    p.rank = static_cast<int>(rank);
    claimed.insert(p.rank);
    p.expected += frame(bs::MsgType::kWelcome, "");
    return;
  }
  if (type != static_cast<uint32_t>(bs::MsgType::kAllgather) || p.pending) {
    p.open = false;
    p.pending = false;
    claimed.erase(p.rank);  // the rank may join again on another connection
    return;
  }
  p.pending = true;
  p.contribution = payload;
  std::vector<Peer*> by_rank(static_cast<size_t>(n_pes), nullptr);
  for (Peer& q : peers)
    if (q.open && q.authed && q.pending) by_rank[static_cast<size_t>(q.rank)] = &q;
  for (Peer* q : by_rank)
    if (!q) return;
  std::string all;
  for (Peer* q : by_rank) all += q->contribution;
  for (Peer* q : by_rank) {
    q->expected += frame(bs::MsgType::kGathered, all);
    q->pending = false;
    q->contribution.clear();
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::signal(SIGPIPE, SIG_IGN);  // as tessera-run does
  // Every input makes and removes the server's socket directory in TMPDIR; not in /dev/shm, where tests that
  // run beside the fuzzer check that no job leaves anything behind.
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::Input in(data, size);
  const int n_pes = 1 + in.byte() % 4;
  const size_t n_peers = 1 + in.byte() % 4;
  tessera::run::BootstrapServer server(n_pes, kSecret);
  auto path = server.listen();
  FUZZ_CHECK(path.is_ok());
  std::vector<Peer> peers(n_peers);
  for (Peer& p : peers) {
    p.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    FUZZ_CHECK(p.fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.value().c_str());
    FUZZ_CHECK(::connect(p.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    server.on_accept();
    FUZZ_CHECK(!server.client_fds().empty());
    p.server_fd = server.client_fds().back();
  }
  std::set<int> claimed;
  while (!in.empty()) {
    Peer& p = peers[in.byte() % n_peers];
    const std::string_view bytes = in.bytes(in.byte());
    if (!p.open) continue;
    const ssize_t w = ::send(p.fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    FUZZ_CHECK(w == static_cast<ssize_t>(bytes.size()));
    p.unread += bytes;
    while (p.open && p.unread.size() >= sizeof(bs::MsgHeader)) {
      bs::MsgHeader h;
      std::memcpy(&h, p.unread.data(), sizeof h);
      // Before the hello a message may announce the hello's size at most, after it kMaxPayload.
      const uint32_t limit = p.authed ? bs::kMaxPayload : tessera::run::BootstrapServer::kHelloBytes;
      if (h.length > limit) {
        server.on_readable(p.server_fd);
        p.open = false;  // refused at the header
        if (p.authed) claimed.erase(p.rank);
        break;
      }
      if (p.unread.size() < sizeof h + h.length) break;
      server.on_readable(p.server_fd);
      model(peers, p, n_pes, claimed, h.type, p.unread.substr(sizeof h, h.length));
      p.unread.erase(0, sizeof h + h.length);
    }
    for (Peer& q : peers) {
      FUZZ_CHECK(server_has(server, q.server_fd) == q.open);
      drain(q);
      FUZZ_CHECK(q.received == q.expected);
    }
  }
  // The PEs end: whatever was left half-sent, the server closes each connection at its end. Its poll loop
  // reports the socket readable until it does: a read may first take the half message, the next the EOF.
  for (Peer& p : peers) {
    ::shutdown(p.fd, SHUT_WR);
    for (int reads = 0; reads < 3 && server_has(server, p.server_fd); ++reads) server.on_readable(p.server_fd);
    FUZZ_CHECK(!server_has(server, p.server_fd));
    drain(p);
    FUZZ_CHECK(p.received == p.expected);
    ::close(p.fd);
  }
  return 0;
}
